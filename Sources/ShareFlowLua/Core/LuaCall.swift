import CLua

/// The arguments of a Swift function called from Lua, with `lauxlib`-style checks that
/// throw `LuaArgumentError` (`bad argument #2 to 'find' (string expected, got nil)`).
///
/// ```swift
/// lua.push(function: "repeated") { call in
///     let text = try call.string(1)
///     let times = try call.integer(2, in: 1...100)
///     call.state.push(string: String(repeating: text, count: times))
///     return 1
/// }
/// lua.setGlobal("repeated")
/// try lua.run("return repeated('ab', 3)")   // [.string("ababab")]
/// ```
public struct LuaCall {
    /// The state called; its `L` is this call's thread while the call runs.
    public let state: LuaState
    /// The raw `lua_State *` of the thread that called (a coroutine's, when one did).
    public let L: OpaquePointer
    /// The function's name as Lua code sees it, for error messages.
    public let name: String
    /// How many arguments were passed.
    public let count: Int32

    init(state: LuaState, L: OpaquePointer, name: String) {
        self.state = state
        self.L = L
        self.name = name
        self.count = lua_gettop(L)
    }

    /// `file:line: ` of the Lua code that made this call, as `luaL_where(L, 1)` gives.
    public var position: String {
        luaL_where(L, 1)
        defer { state.pop() }
        return state.string(at: -1) ?? ""
    }

    /// The type of the value at `i` as lauxlib names it: its metatable's `__name` when that is
    /// a string (`Container`, `RecordID`), else Lua's type name (read raw: no metamethod runs).
    public func typeName(_ i: Int32) -> String {
        let type = lua_type(L, i)
        if type == LUA_TLIGHTUSERDATA { return "light userdata" }
        let found = luaL_getmetafield(L, i, "__name")
        if found != LUA_TNIL {
            defer { state.pop() }
            if found == LUA_TSTRING, let name = state.string(at: -1) { return String(name.prefix(64)) }
        }
        return String(cString: lua_typename(L, type))
    }

    /// Whether the argument at `i` is nil or absent.
    public func isNil(_ i: Int32) -> Bool { lua_type(L, i) <= LUA_TNIL }

    /// A `bad argument #i to '<name>' (reason)` error, to throw.
    public func argumentError(_ i: Int32, _ reason: String) -> LuaArgumentError {
        LuaArgumentError(position: Int(i), function: name, reason: reason)
    }

    func expected(_ i: Int32, _ what: String) -> LuaArgumentError {
        argumentError(i, "\(what) expected, got \(typeName(i))")
    }

    /// The string argument at `i`. A number is not converted: anything but a string is
    /// `bad argument`. Bytes that are not UTF-8 are repaired (U+FFFD).
    public func string(_ i: Int32) throws -> String {
        guard lua_type(L, i) == LUA_TSTRING, let s = state.string(at: i) else { throw expected(i, "string") }
        return s
    }

    /// As `string(_:)`, but nil when the argument is nil or absent.
    public func optionalString(_ i: Int32) throws -> String? {
        isNil(i) ? nil : try string(i)
    }

    /// The integer argument at `i`: a float with an exact integer value counts, a string does
    /// not. Any Lua integer passes; use `integer(_:in:)` to bound it.
    public func integer(_ i: Int32) throws -> Int {
        var ok: Int32 = 0
        let v = lua_tointegerx(L, i, &ok)
        guard ok != 0, lua_type(L, i) == LUA_TNUMBER else { throw expected(i, "integer") }
        return Int(v)
    }

    /// The number argument at `i` (an integer as a `Double`). NaN and ±inf pass: reject them
    /// where they matter (SPEC §8).
    public func number(_ i: Int32) throws -> Double {
        guard lua_type(L, i) == LUA_TNUMBER else { throw expected(i, "number") }
        return clua_tonumber(L, i)
    }

    /// The boolean argument at `i`; no truthiness: nil or any other value is `bad argument`.
    public func boolean(_ i: Int32) throws -> Bool {
        guard lua_type(L, i) == LUA_TBOOLEAN else { throw expected(i, "boolean") }
        return lua_toboolean(L, i) != 0
    }

    /// Checks that the argument at `i` is a table (read it with `field`, `element`, `length`).
    public func table(_ i: Int32) throws {
        guard lua_type(L, i) == LUA_TTABLE else { throw expected(i, "table") }
    }

    /// The function argument at `i`, pinned in the registry until the reference goes.
    public func function(_ i: Int32) throws -> LuaReference {
        guard lua_type(L, i) == LUA_TFUNCTION else { throw expected(i, "function") }
        return state.reference(at: i)
    }

    /// The argument at `i` copied into Swift (`LuaState.value(at:function:)`, with its limits).
    public func value(_ i: Int32) throws -> LuaValue { try state.value(at: i) }

    /// The object at `i` if it is a `T` registered as `typeName`.
    public func object<T: AnyObject>(_ i: Int32, _ type: T.Type, typeName: String) throws -> T {
        guard let o = state.object(at: i, typeName: typeName, as: type) else {
            throw expected(i, typeName)
        }
        return o
    }

    // MARK: Table fields (raw access: no metamethod may run under Swift frames)

    /// Pushes `t[key]` (raw) for the table at `i` and returns its Lua type.
    @discardableResult
    public func field(_ i: Int32, _ key: String) -> Int32 {
        let abs = lua_absindex(L, i)
        // Raw access needs a table (anything else is undefined behaviour in Lua's C API).
        guard lua_type(L, abs) == LUA_TTABLE else {
            lua_pushnil(L)
            return LUA_TNIL
        }
        state.push(string: key)
        return lua_rawget(L, abs)
    }

    /// The string field `key` of the table at `i`, or nil; a non-string is an error naming the key.
    public func stringField(_ i: Int32, _ key: String) throws -> String? {
        let t = field(i, key)
        defer { state.pop() }
        if t == LUA_TNIL { return nil }
        guard t == LUA_TSTRING else {
            throw argumentError(i, "field '\(key)' must be a string, got \(typeName(-1))")
        }
        return state.string(at: -1)
    }

    /// The boolean field `key` of the table at `i`, or nil; any other value is an error naming the key.
    public func booleanField(_ i: Int32, _ key: String) throws -> Bool? {
        let t = field(i, key)
        defer { state.pop() }
        if t == LUA_TNIL { return nil }
        guard t == LUA_TBOOLEAN else {
            throw argumentError(i, "field '\(key)' must be a boolean, got \(typeName(-1))")
        }
        return lua_toboolean(L, -1) != 0
    }

    /// An integer field within `range`: a float with an exact integer value counts; NaN,
    /// ±inf, fractions and values outside the range are `bad argument` errors naming the key.
    public func integerField(_ i: Int32, _ key: String, in range: ClosedRange<Int>) throws -> Int? {
        let t = field(i, key)
        defer { state.pop() }
        if t == LUA_TNIL { return nil }
        guard t == LUA_TNUMBER else {
            throw argumentError(i, "field '\(key)' must be an integer, got \(typeName(-1))")
        }
        return try LuaCall.integer(L, -1, in: range) { throw argumentError(i, "field '\(key)' \($0)") }
    }

    /// An integer argument within `range` (as `integerField`).
    public func integer(_ i: Int32, in range: ClosedRange<Int>) throws -> Int {
        guard lua_type(L, i) == LUA_TNUMBER else { throw expected(i, "number") }
        return try LuaCall.integer(L, i, in: range) { throw argumentError(i, $0) }
    }

    private static func integer(
        _ L: OpaquePointer,
        _ i: Int32,
        in range: ClosedRange<Int>,
        fail: (String) throws -> Never
    ) throws -> Int {
        if lua_isinteger(L, i) != 0 {
            let v = clua_tointeger(L, i)
            guard v >= range.lowerBound && v <= range.upperBound else {
                try fail("must be between \(range.lowerBound) and \(range.upperBound), got \(v)")
            }
            return Int(v)
        }
        let d = clua_tonumber(L, i)
        guard d.isFinite, d == d.rounded() else { try fail("number has no integer representation") }
        // `Int(exactly:)`: Double(Int.max) is 2^63, one past Int.max, which `Int(_:)` traps on.
        guard let n = Int(exactly: d), range.contains(n) else {
            try fail("must be between \(range.lowerBound) and \(range.upperBound), got \(d)")
        }
        return n
    }

    /// The number field `key` of the table at `i`, or nil; a non-number is an error naming the
    /// key. NaN and ±inf pass, as with `number(_:)`.
    public func numberField(_ i: Int32, _ key: String) throws -> Double? {
        let t = field(i, key)
        defer { state.pop() }
        if t == LUA_TNIL { return nil }
        guard t == LUA_TNUMBER else {
            throw argumentError(i, "field '\(key)' must be a number, got \(typeName(-1))")
        }
        return clua_tonumber(L, -1)
    }

    /// Throws when the table at `i` has a key outside `allowed` (a positional value too: an
    /// options table is read by name, so `{ "production" }` would be silently ignored): at the
    /// first one, so a table of a million keys is not copied first.
    public func checkKeys(_ i: Int32, allowed: Set<String>) throws {
        let abs = lua_absindex(L, i)
        guard lua_type(L, abs) == LUA_TTABLE else { return }
        try state.checkStack(3)
        lua_pushnil(L)
        while lua_next(L, abs) != 0 {
            state.pop()
            try state.budgetStep()
            let expected = "expected one of: \(allowed.sorted().joined(separator: ", "))"
            guard lua_type(L, -1) == LUA_TSTRING, let k = state.string(at: -1) else {
                let n = lua_type(L, -1) == LUA_TNUMBER ? clua_tonumber(L, -1) : .nan
                let shown = n.isFinite ? (n == n.rounded() && Swift.abs(n) < 1e15 ? "[\(Int64(n))]" : "[\(n)]") : "with a \(typeName(-1)) key"
                state.pop()
                throw argumentError(i, "unexpected field \(shown) (fields are named; \(expected))")
            }
            guard !allowed.contains(k) else { continue }
            state.pop()
            throw argumentError(i, "unknown field '\(k)' (\(expected))")
        }
    }

    /// Length of the sequence part of the table at `i`.
    public func length(_ i: Int32) -> Int { Int(lua_rawlen(L, i)) }

    /// The most items a list given to a host function for the engine to work through may
    /// hold: the engine's own batch limit (R22), so a call's Swift work stays in proportion
    /// to the budget that Lua code is held to.
    public static let maxListItems = 400

    /// The length of the list at `i` (a positive index) that the engine will work through: at
    /// most `maxListItems` in a state under a CPU budget (a plugin's); trusted scripts, like
    /// shell scripts, may hand the engine any number.
    public func listLength(_ i: Int32) throws -> Int {
        let n = length(i)
        guard n <= LuaCall.maxListItems || state.limits.pointee.budget_ns == 0 else {
            throw argumentError(i, "a list of at most \(LuaCall.maxListItems) items expected, got \(n)")
        }
        return n
    }

    /// Pushes `t[n]` (raw) and returns its type. Loops over a caller's list call this for each
    /// item, so it is where the CPU budget is checked as they go.
    @discardableResult
    public func element(_ i: Int32, _ n: Int) throws -> Int32 {
        try state.budgetStep()
        guard lua_type(L, i) == LUA_TTABLE else {
            lua_pushnil(L)
            return LUA_TNIL
        }
        return lua_rawgeti(L, i, lua_Integer(n))
    }
}
