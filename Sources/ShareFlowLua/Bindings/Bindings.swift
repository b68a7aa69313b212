import CLua
import Foundation
import ShareFlow

/// Every ShareFlow type's Lua class, for one script host, and the helpers that push and read
/// them. The bindings wrap the Swift API; they enforce no rule of their own. Each bound type
/// is defined in its own `Bindings+Type.swift` (`Bindings+Share.swift`, …); the value tables'
/// metatables in `ValueTable.swift`.
package final class Bindings {
    unowned let host: ScriptHost
    // Stored, not read through `host`: these are on every event's path.
    let lua: LuaState
    let engine: Engine
    /// The first store outage handed to Lua during the hook call under way (`noteRaised`).
    /// Boxed: `runningHook` saves and restores it around every hook call, and copying a
    /// `ShareFlowError?` in place (a dozen optional fields, each copied and destroyed through
    /// its value witness) was a twentieth of an event's dispatch; a box is one word.
    /// Unchecked: read and written on the engine's thread only, around every hook call, where
    /// the dynamic exclusivity check cost more than the access.
    @exclusivity(unchecked) var outageDuringCall: Outage?

    /// A store outage noted during a hook's call (`outageDuringCall`).
    final class Outage {
        let error: ShareFlowError
        init(_ error: ShareFlowError) { self.error = error }
    }
    /// Whether the engine's operator-only messages are withheld from this state (a sandboxed
    /// one's: `readable`).
    var withholdsOperatorDetail = false

    let accountClass = LuaClass<AccountHandle>("Account")
    let sessionClass = LuaClass<Session>("Session")
    let containerClass = LuaClass<Container>("Container")
    let databaseClass = LuaClass<CloudDatabase>("Database")
    let recordClass = LuaClass<Record>("Record", callerOwned: true)
    let shareClass = LuaClass<Share>("Share", callerOwned: true)
    let fieldsClass = LuaClass<RecordFields>("RecordFields", callerOwned: true)
    let participantClass = LuaClass<Participant>("Participant", callerOwned: true)
    let metadataClass = LuaClass<ShareMetadata>("ShareMetadata")
    let cursorClass = LuaClass<QueryCursor>("QueryCursor")
    /// The operation classes made so far in this state (`operationClass(named:)`).
    var operationClasses: [String: LuaClass<LuaOperation>] = [:]
    /// Each operation's fields and blocks, declared on its class when it is made.
    var operationDefinitions: [String: (Bindings) -> (LuaClass<LuaOperation>) -> Void] = [:]
    /// Registry refs of the value tables' metatables (LookupInfo, RecordID, …).
    @exclusivity(unchecked) var valueMetatables: [Int32] = []
    var operationMakers: [String: () -> CloudOperation] = [:]
    /// The operations in the order `defineOperations` lists them.
    var operationNames: [String] = []
    /// Policy requests as tables (kept here: a table can outlive the policy that got it).
    private(set) lazy var requests = RequestTable(self)

    init(host: ScriptHost) {
        self.host = host
        self.lua = host.lua
        self.engine = host.engine
        // Records hold their fields in Swift: charged to a capped state that keeps them.
        recordClass.hostCost = { $0.hostBytes }
        shareClass.hostCost = { $0.hostBytes }
        fieldsClass.hostCost = { $0.record.hostBytes }
    }

    /// Declares every class, to be made in this state when it first holds one of its objects
    /// (`LuaClass.declareLater`), as the value tables' metatables (`setMetatable`) and the
    /// operations' classes (`operationClass(named:)`) are: making them all up front was half of
    /// each state's start, four states a cold start (issue 48). The declarations hold the
    /// bindings unowned: the classes are the bindings' own, and a strong reference from them
    /// would keep the bindings, the engine and its store alive for ever.
    func register() {
        registerValueMetatables()
        accountClass.declareLater { [unowned self] in defineAccount() }
        sessionClass.declareLater { [unowned self] in defineSession() }
        containerClass.declareLater { [unowned self] in defineContainer() }
        databaseClass.declareLater { [unowned self] in
            defineDatabase()
            defineQueryMethod()
            defineChangeFeedMethods()
        }
        recordClass.declareLater { [unowned self] in defineRecord(recordClass) }
        shareClass.declareLater { [unowned self] in
            defineRecord(shareClass)
            defineShare()
        }
        fieldsClass.declareLater { [unowned self] in defineFields() }
        participantClass.declareLater { [unowned self] in defineParticipant() }
        metadataClass.declareLater { [unowned self] in defineMetadata() }
        cursorClass.declareLater { [unowned self] in defineCursor() }
        defineOperations()
    }

    // MARK: Push and read

    /// One handle per account, so an account is the same Lua value wherever it appears.
    @exclusivity(unchecked) private var accountHandles: [Int64: AccountHandle] = [:]

    /// The last account pushed and its userdata, pinned in the registry: an event's caller is
    /// usually the previous event's too, and this skips hashing and the identity cache. The
    /// pin keeps nothing alive that would otherwise go: `accountHandles` holds the handle.
    @exclusivity(unchecked) private var lastAccount: (id: Int64, ref: Int32) = (0, LUA_NOREF)

    package func push(account: Account) {
        if account.id == lastAccount.id, lastAccount.ref != LUA_NOREF {
            lua_rawgeti(lua.L, clua_registryindex(), lua_Integer(lastAccount.ref))
            return
        }
        let handle =
            accountHandles[account.id]
            ?? {
                let h = AccountHandle(engine: engine, account: account)
                accountHandles[account.id] = h
                return h
            }()
        accountClass.push(handle, in: lua)
        lastAccount = (account.id, pinTop(replacing: lastAccount.ref))
    }

    /// Pins the value on top of the stack in the registry (leaving it there) in place of the
    /// value pinned at `old`; returns the new ref.
    private func pinTop(replacing old: Int32) -> Int32 {
        luaL_unref(lua.L, clua_registryindex(), old)
        lua_pushvalue(lua.L, -1)
        return luaL_ref(lua.L, clua_registryindex())
    }

    /// Sets the `caller` and `container` fields of the table on top of the stack (events and
    /// policy requests both carry them), reading them in place through `caller` and
    /// `container`: an `Account` holds a dozen references, and passing it (or the optional
    /// string) by value copied it, retaining and releasing each, on every event and decision.
    /// The account itself is read only when it is not the last one pushed.
    @inline(__always)
    func setCallerAndContainer(_ callerID: Int64?, _ caller: UnsafePointer<Account?>, _ container: UnsafePointer<String?>) {
        if let id = callerID {
            if !pushLastAccount(id: id) { push(account: caller.pointee!) }
            lua_setfield(lua.L, -2, "caller")
        }
        if container.pointee != nil {
            if !pushLastContainer(container) { push(container: container.pointee!) }
            lua_setfield(lua.L, -2, "container")
        }
    }

    /// Pushes the last account pushed if it is account `id`; returns whether it did.
    @inline(__always)
    private func pushLastAccount(id: Int64) -> Bool {
        guard id == lastAccount.id, lastAccount.ref != LUA_NOREF else { return false }
        lua_rawgeti(lua.L, clua_registryindex(), lua_Integer(lastAccount.ref))
        return true
    }

    /// Pushes the last container identifier pushed if it is the one at `identifier` (not
    /// nil); returns whether it did.
    @inline(__always)
    private func pushLastContainer(_ identifier: UnsafePointer<String?>) -> Bool {
        guard lastContainer.ref != LUA_NOREF, identifier.pointee! == lastContainer.identifier else { return false }
        lua_rawgeti(lua.L, clua_registryindex(), lua_Integer(lastContainer.ref))
        return true
    }
    /// A container identifier. Events of one container repeat it, so the last one's Lua
    /// string is kept: comparing Swift strings that share storage is one word, where pushing
    /// would hash and intern it again.
    func push(container identifier: String) {
        if identifier == lastContainer.identifier, lastContainer.ref != LUA_NOREF {
            lua_rawgeti(lua.L, clua_registryindex(), lua_Integer(lastContainer.ref))
            return
        }
        lua.push(string: identifier)
        lastContainer = (identifier, pinTop(replacing: lastContainer.ref))
    }
    @exclusivity(unchecked) private var lastContainer: (identifier: String, ref: Int32) = ("", LUA_NOREF)

    func push(session: Session) { sessionClass.push(session, in: lua) }
    func push(container: Container) { containerClass.push(container, in: lua) }
    func push(database: CloudDatabase) { databaseClass.push(database, in: lua) }
    package func push(participant: Participant?) {
        guard let participant else { return lua_pushnil(lua.L) }
        participantClass.push(participant, in: lua)
    }
    func push(metadata: ShareMetadata?) {
        guard let metadata else { return lua_pushnil(lua.L) }
        metadataClass.push(metadata, in: lua)
    }
    package func push(record: Record?) {
        guard let record else { return lua_pushnil(lua.L) }
        if let share = record as? Share { shareClass.push(share, in: lua) } else { recordClass.push(record, in: lua) }
    }

    func record(at i: Int32) -> Record? {
        lua.object(at: i, typeName: shareClass.typeName, as: Share.self)
            ?? lua.object(at: i, typeName: recordClass.typeName, as: Record.self)
    }

    /// Pushes `value, nil` on success or `nil, err` on a data failure (Lua's convention).
    func pushResult(_ body: () throws -> Void) throws -> Int32 {
        do {
            try body()
            lua_pushnil(lua.L)
            return 2
        } catch let e as ShareFlowError {
            lua_pushnil(lua.L)
            push(e)
            return 2
        }
    }

    /// Runs `body`; a ShareFlow error is raised as an error value (for calls whose failure is
    /// a programming or administration mistake).
    func raising<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as ShareFlowError { throw raise(e) }
    }
}
