import CLua
import Foundation
import ShareFlow

/// `Error`: a ShareFlow error as a plain table with a metatable, returned (`nil, err`) or raised.
extension Bindings {
    /// An error value: `code`, `codeNumber`, `message`, `partialErrors` (item → error),
    /// `retryAfter`, and `__tostring`.
    func push(_ error: ShareFlowError?) {
        guard let given = error else { return lua_pushnil(lua.L) }
        let error = readable(given)
        let L = lua.L
        lua_createtable(L, 0, 5)
        lua.push(string: error.code.rawValue)
        lua_setfield(L, -2, "code")
        lua_pushinteger(L, lua_Integer(error.codeNumber))
        lua_setfield(L, -2, "codeNumber")
        lua.push(string: error.message)
        lua_setfield(L, -2, "message")
        if let r = error.retryAfter {
            lua_pushnumber(L, r)
            lua_setfield(L, -2, "retryAfter")
        }
        if !error.partialErrors.isEmpty {
            lua_createtable(L, 0, Int32(error.partialErrors.count))
            for (item, e) in error.partialErrors {
                // The whole item as the key, NUL bytes and all (lua_setfield would cut it).
                lua.push(string: item)
                push(e)
                lua_rawset(L, -3)
            }
            lua_setfield(L, -2, "partialErrors")
        }
        // R21: copies made for this error, so the caller may merge into them and save.
        for (key, record) in [
            ("serverRecord", error.serverRecord), ("clientRecord", error.clientRecord),
            ("ancestorRecord", error.ancestorRecord),
        ] {
            guard let record else { continue }
            push(record: record)
            lua.markWritable(at: -1)
            lua_setfield(L, -2, key)
        }
        setMetatable(.error)
    }

    /// `error` as this state reads it, however it crosses (a value, a raise, a Swift error a
    /// binding throws: `LuaState.errorText`): noted (`noteRaised`), and in a sandboxed state
    /// its operator-only message withheld (`ShareFlowError.withheld`), the detail going to the
    /// log under the incident ID the state reads instead.
    func readable(_ error: ShareFlowError) -> ShareFlowError {
        noteRaised(error)
        guard withholdsOperatorDetail else { return error }
        let logger = host.logger
        return error.withheld { id, detail in logger.error("incident \(id): \(detail)") }
    }

    /// Notes an engine error handed to Lua during a hook's call: a store busy or away
    /// (`serviceUnavailable`) that leaves a policy unable to decide makes the request fail
    /// with it, to be retried, rather than be denied for good (`HookCall`).
    func noteRaised(_ error: ShareFlowError) {
        if error.code == .serviceUnavailable && outageDuringCall == nil { outageDuringCall = Outage(error) }
    }

    /// Runs a hook's call (an observer's, a policy's, an authenticator's): should it fail after
    /// a store outage was handed to Lua during it (`noteRaised`), however it failed, it fails
    /// with that outage: a hook that could not read the store has not decided. Kept per call:
    /// a hook may run inside another's engine call.
    func runningHook<T>(_ body: () throws -> T) throws -> T {
        let outer = outageDuringCall
        outageDuringCall = nil
        defer { outageDuringCall = outer }
        do {
            return try body()
        } catch {
            if let outage = outageDuringCall { throw outage.error }
            throw error
        }
    }

    /// Raises `error` as a Lua error value (for functions whose failures are not data).
    func raise(_ error: ShareFlowError) -> LuaRaise {
        LuaRaise { [unowned self] _ in self.push(error) }
    }
}
