import CLua
import CShareFlowSupport

/// One `lua_State`, owned by Swift.
///
/// A state is not thread-safe: create it, use it and drop it on one thread.
///
/// ```swift
/// let lua = try LuaState()
/// let results = try lua.run("return 1 + 1")   // [.integer(2)]
///
/// let plugin = try LuaState(memoryLimit: 64 << 20, libraries: .sandbox)
/// plugin.cpuBudget = 50_000_000                     // nanoseconds per guarded call
/// try plugin.load("while true do end", chunkName: "=loop")
/// try plugin.guardedCall(arguments: 0, results: 0)  // throws: `budgetReason`
/// ```
public final class LuaState {
    /// The raw `lua_State *` of the thread Swift is serving now: the main thread, or, while a
    /// Swift function called from a coroutine runs, that coroutine — so what Swift pushes lands
    /// on the stack of the thread that called it.
    @exclusivity(unchecked) public internal(set) var L: OpaquePointer
    /// The state's main thread.
    public let mainThread: OpaquePointer
    package let limits: UnsafeMutablePointer<sf_limits>
    private var closed = false
    /// What references hold instead of the state: a weak reference would give the state a
    /// side table and make every retain of it on the hot path take the slow path.
    let lifetime = LuaStateLifetime()
    /// Registry refs of objects pushed as userdata, so the same Swift object is the same
    /// Lua value (weak-valued cache keyed by the object's address).
    @exclusivity(unchecked) private var objectCacheRef: Int32 = 0
    /// Whether engine objects are read-only here unless this state made them (a plugin's
    /// state, SPEC §8): set before classes are registered.
    public var guardsWrites = false
    /// The text a Swift error raised into this state is given, or nil for its own description
    /// (the bindings note outages here, and withhold what only the operator may read).
    public var errorText: ((any Error) -> String?)?
    /// Weak-keyed set of the userdata this state may change (objects it constructed).
    private var writableRef: Int32 = LUA_NOREF

    /// Marks the object at `index` as one this state may change (it made it).
    public func markWritable(at index: Int32) {
        guard guardsWrites else { return }
        let abs = lua_absindex(L, index)
        if writableRef == LUA_NOREF {
            lua_createtable(L, 0, 0)
            lua_createtable(L, 0, 1)
            push(static: "k")
            lua_setfield(L, -2, "__mode")
            lua_setmetatable(L, -2)
            writableRef = luaL_ref(L, clua_registryindex())
        }
        lua_rawgeti(L, clua_registryindex(), lua_Integer(writableRef))
        lua_pushvalue(L, abs)
        lua_pushboolean(L, 1)
        lua_rawset(L, -3)
        pop()
    }

    /// Whether this state may change the object at `index` (always, unless `guardsWrites`).
    public func isWritable(at index: Int32) -> Bool {
        guard guardsWrites else { return true }
        guard writableRef != LUA_NOREF else { return false }
        let abs = lua_absindex(L, index)
        lua_rawgeti(L, clua_registryindex(), lua_Integer(writableRef))
        lua_pushvalue(L, abs)
        defer { pop(2) }
        return lua_rawget(L, -2) == LUA_TBOOLEAN
    }

    /// Whether a chunk this state loads is refused for a function too long for Lua 5.4.4's
    /// error messages (`sf_check_chunk`): every sandboxed state's but the operator's config file.
    public var checksFunctionSize = false

    /// The linked library's release, as `lua_ident` says it ("5.4.4").
    public static let linkedRelease: String = {
        let r = Int(sf_lua_release())
        return r == 0 ? "of an unknown release" : "Lua \(r / 10000).\(r / 100 % 100).\(r % 100)"
    }()

    /// Whether the sandbox covers the linked release.
    static let releaseIsChecked = sf_lua_release_checked(sf_lua_release()) != 0

    /// Per-state data that bindings hang on the state (class metatables and so on).
    public var extensions: [ObjectIdentifier: AnyObject] = [:]

    /// Which of Lua's libraries a new state opens.
    public enum Libraries: Sendable {
        /// All of them (`luaL_openlibs`): trusted scripts.
        case standard
        /// The sandbox's allow-list (SPEC §8, `sf_open_sandbox`): plugins, `run --sandbox`,
        /// configuration files. `io`, `os` (but its time functions), `debug` and `package`'s
        /// loaders are never opened; `Sandbox.apply` adds `require` and the rest.
        case sandbox
        /// None.
        case none
    }

    /// - Parameters:
    ///   - memoryLimit: bytes this state may hold at most (0: no limit).
    ///   - libraries: which of Lua's libraries to open.
    public init(memoryLimit: Int = 0, libraries: Libraries = .standard) throws {
        _ = LuaState.installed
        limits = .allocate(capacity: 1)
        limits.initialize(to: sf_limits())
        limits.pointee.limit = memoryLimit
        guard let L = sf_newstate(limits) else {
            limits.deallocate()
            throw LuaError(kind: .memory, message: "cannot create a Lua state (out of memory)")
        }
        self.L = L
        mainThread = L
        lifetime.L = L
        clua_getextraspace(L).storeBytes(
            of: Unmanaged.passUnretained(self).toOpaque(),
            as: UnsafeMutableRawPointer.self
        )
        switch libraries {
        case .standard:
            luaL_openlibs(L)
            sf_replace_os_exit(L)
        case .sandbox:
            checksFunctionSize = true
            // The sandbox's promises hold for the releases whose known bugs it keeps out of
            // reach (luabugs.c, docs/reference/lua-bugs.md); on another, no plugin state.
            guard LuaState.releaseIsChecked else {
                throw LuaError(
                    kind: .runtime,
                    message:
                        "the linked Lua library is \(LuaState.linkedRelease), whose known bugs the plugin sandbox does not keep out of reach; plugins need Lua 5.4.4 to 5.4.8"
                )
            }
            // Every stored property is set by now: a throw runs deinit, which closes the state.
            guard sf_open_sandbox(L) == LUA_OK else {
                throw LuaError(kind: .memory, message: "cannot create a Lua state (out of memory)")
            }
        case .none: break
        }
        lua_createtable(L, 0, 0)
        lua_createtable(L, 0, 1)
        lua_pushstring(L, "v")
        lua_setfield(L, -2, "__mode")
        lua_setmetatable(L, -2)
        objectCacheRef = luaL_ref(L, clua_registryindex())
    }

    deinit {
        // Never free a state under a call into it; its owner keeps it until the call returns.
        if !closed && limits.pointee.busy == 0 { close() }
    }

    /// Closes the state, running every pending `__gc`: now, or — when called while a call
    /// into the state is under way (a plugin unloaded from an observer of the event it is
    /// handling) — as soon as that call returns.
    public func close() {
        guard !closed else { return }
        if limits.pointee.busy > 0 {
            limits.pointee.close_when_idle = 1
            return
        }
        closed = true
        lifetime.L = nil
        if watched { sf_watchdog_unregister(limits) }
        sf_close(mainThread)
        limits.deallocate()
    }

    /// Whether the state is closed: a `close()` under a call leaves it open until that call returns.
    public var isClosed: Bool { closed }

    /// Closes the state if a `close()` waited for the calls under way, now done.
    func closeIfIdle() {
        if !closed && limits.pointee.close_when_idle != 0 && limits.pointee.busy == 0 { close() }
    }

    private var watched = false
    /// Nanoseconds a guarded call may run (nil: no CPU budget). Kept in the C limits, where
    /// the guarded call reads it without a Swift access check.
    public var cpuBudget: UInt64? {
        get { limits.pointee.budget_ns > 0 ? UInt64(limits.pointee.budget_ns) : nil }
        set {
            limits.pointee.budget_ns = newValue.map { Int64(clamping: max($0, 1)) } ?? 0
            if newValue != nil && !watched {
                // Without a watchdog no budget can be kept: run nothing rather than unbounded.
                precondition(sf_watchdog_register(limits) != 0, "cannot start the CPU-budget watchdog")
                trackCoroutines()
                watched = true
            }
        }
    }

    /// Told `cpu` or `memory` when a call ends by its budget (a plugin's state counts them for
    /// `GET /metrics`).
    public var onBudgetOverrun: ((String) -> Void)?

    /// The error message of a call that ran past its CPU budget (a plugin's names the plugin
    /// and its budget); `onBudgetOverrun` recognises an overrun by it.
    public var budgetReason = "CPU budget exceeded" {
        didSet { sf_set_budget_reason(limits, budgetReason) }
    }

    private var coroutinesTracked = false
    /// Routes `coroutine.resume` and `close` through C that records the running coroutine, so
    /// a spent budget stops a loop inside a coroutine too, and puts in the budget-checking
    /// string and table functions. Call before anything captures them.
    public func trackCoroutines() {
        guard !coroutinesTracked else { return }
        sf_track_coroutines(L)
        // The pattern functions and table.sort/insert/remove/move as C that checks the budget
        // as it goes: Lua's own run in C for as long as their input makes them.
        sf_open_bounded_libs(L)
        coroutinesTracked = true
        // coroutine.wrap resumes in C without coroutine.resume: rebuild it on the tracked one.
        // The Lua: `Lua/coroutine_wrap.lua`, embedded at build time (the EmbedLua plugin).
        _ = try? run(EmbeddedLua.coroutineWrap, chunkName: "=[coroutines]")
    }

    /// Calls the function below its `nargs` arguments as `call` does, under the CPU budget:
    /// past its deadline a watchdog arms a count hook that ends the call with
    /// `budgetReason`. Within budget, no hook ever runs. A call already under a budget (a
    /// nested one) shares it.
    public func guardedCall(arguments nargs: Int32, results nresults: Int32) throws {
        try LuaState.guardedCall(L, limits, arguments: nargs, results: nresults)
    }

    /// `guardedCall` for callers that hold only the raw state (hooks, on every event).
    static func guardedCall(
        _ L: OpaquePointer,
        _ limits: UnsafeMutablePointer<sf_limits>,
        arguments nargs: Int32,
        results nresults: Int32
    ) throws {
        let status = sf_guarded_pcall(L, limits, nargs, nresults)
        guard status == LUA_OK else { throw owner(of: L).callError(status) }
    }

    /// Runs `body` inside one protected call made by C (`sf_protected`, the pmain pattern of
    /// `lua.c`), with the `nargs` values on top of the stack as its arguments (at 1…nargs):
    /// anything that raises while Swift works on the state is caught there, never unwinding
    /// through Swift. `body` pushes its results and returns how many; errors it throws are
    /// raised from C. Within the CPU budget when one is set.
    public func protected(
        arguments nargs: Int32 = 0,
        results nresults: Int32 = 0,
        _ body: (LuaState) throws -> Int32
    ) throws {
        try withoutActuallyEscaping(body) { body in
            var context = ProtectedBody(state: self, body: body)
            let status = withUnsafeMutablePointer(to: &context) { p in
                let budgeted = limits.pointee.budget_ns != 0 && sf_budget_running(limits) == 0
                if budgeted { sf_begin_budget(limits) }
                defer { if budgeted { sf_end_budget(limits) } }
                return sf_protected(L, nargs, nresults, runProtectedBody, p)
            }
            guard status == LUA_OK else { throw callError(status) }
        }
    }

    /// Throws the budget's error when the running call's budget is spent: long work in a
    /// Swift function (which no hook reaches) calls this as it goes.
    public func checkBudget() throws {
        guard sf_budget_spent(limits) != 0 else { return }
        throw LuaRaise.message(sf_budget_interrupted(limits) != 0 ? "interrupted" : budgetReason)
    }

    /// Steps of host work over caller data since the last budget check.
    @exclusivity(unchecked) private var steps = 0

    /// One step of host work over caller data (an item of a list, a key of a table): every
    /// 256th checks the budget, so a loop in Swift over a long list stops with the call.
    @inline(__always)
    public func budgetStep() throws {
        steps &+= 1
        if steps & 255 == 0 { try checkBudget() }
    }

    /// Bytes copied out of Lua by the conversion under way (`beginCopy`), and where the CPU
    /// budget was last checked.
    @exclusivity(unchecked) private var copiedBytes = 0
    @exclusivity(unchecked) private var copiedAtCheck = 0

    /// Starts counting what a conversion copies out of Lua into Swift (`chargeCopy`).
    public func beginCopy() {
        copiedBytes = 0
        copiedAtCheck = 0
    }

    /// Charges `n` bytes a conversion copies into Swift: one long string the table holds many
    /// times is copied once per reference, so items alone do not measure the work. The CPU
    /// budget is checked every 64 KiB copied, and under a memory cap the copy may not take the
    /// state past it (what the state holds, its host objects and this copy together).
    @inline(__always)
    public func chargeCopy(_ n: Int) throws {
        copiedBytes &+= n
        guard copiedBytes &- copiedAtCheck >= 65536 else { return }
        copiedAtCheck = copiedBytes
        try checkBudget()
        let lim = limits.pointee
        if lim.limit != 0 && lim.used + lim.host_bytes + copiedBytes > lim.limit {
            throw LuaRaise.message("not enough memory (limit of \(lim.limit / 1024) KiB reached)")
        }
    }

    /// Ends the running Lua code with "interrupted" (Ctrl-C); safe from a signal handler.
    public func interrupt() { sf_limits_expire(limits, 1) }

    /// Clears an interrupt that found no Lua code running.
    public func clearInterrupt() { sf_limits_reset(limits) }

    /// The Swift state that owns `L` (any thread of it).
    public static func owner(of L: OpaquePointer) -> LuaState {
        let raw = clua_getextraspace(L).load(as: UnsafeMutableRawPointer.self)
        return Unmanaged<LuaState>.fromOpaque(raw).takeUnretainedValue()
    }

    // MARK: Limits

    /// Bytes in use by this state right now.
    public var memoryInUse: Int { limits.pointee.used }
    /// The most bytes this state has held.
    public var memoryPeak: Int { limits.pointee.peak }
    /// The memory cap in bytes (0: none).
    public var memoryLimit: Int {
        get { limits.pointee.limit }
        set { limits.pointee.limit = newValue }
    }

    // MARK: Stack

    /// The index of the top of the stack (`lua_gettop`); setting it pops values or pushes nils
    /// (`lua_settop`).
    public var top: Int32 {
        get { lua_gettop(L) }
        set { lua_settop(L, newValue) }
    }

    /// Pops `n` values.
    public func pop(_ n: Int32 = 1) { clua_pop(L, n) }

    /// Pushes a string that lives as long as the program (an event name, a field name):
    /// Lua's string cache recognises its address, so it is not hashed again on each push.
    public func push(static string: StaticString) {
        string.withCString { _ = lua_pushstring(L, $0) }
    }

    /// `t[key] = v` for the table at `index` and the value on top, with a literal key.
    public func setField(_ index: Int32, _ key: StaticString) {
        key.withCString { lua_setfield(L, index, $0) }
    }

    /// `t[key] = string` for the table on top, when there is one: an absent optional field (an
    /// event's `reason`, a request's `from`) stays out of the table, reading as nil.
    func setField(_ key: StaticString, string: String?) {
        guard let string else { return }
        push(string: string)
        setField(-2, key)
    }

    /// `t[key] = integer` for the table on top, when there is one (as `setField(_:string:)`).
    func setField(_ key: StaticString, integer: Int?) {
        guard let integer else { return }
        lua_pushinteger(L, lua_Integer(integer))
        setField(-2, key)
    }

    /// Pushes `string` as its UTF-8 bytes (embedded zeros included).
    public func push(string: String) {
        // Native strings lend their bytes in place; only others (bridged) are copied first.
        let pushed: Void? = string.utf8.withContiguousStorageIfAvailable { buf in
            buf.withMemoryRebound(to: CChar.self) { _ = lua_pushlstring(L, $0.baseAddress, $0.count) }
        }
        if pushed != nil { return }
        var s = string
        s.withUTF8 { buf in
            buf.withMemoryRebound(to: CChar.self) { _ = lua_pushlstring(L, $0.baseAddress, $0.count) }
        }
    }

    /// A list of strings as a sequence table, without going through `LuaValue`.
    public func push(strings: [String]) {
        lua_createtable(L, Int32(strings.count), 0)
        for (i, s) in strings.enumerated() {
            push(string: s)
            lua_rawseti(L, -2, lua_Integer(i + 1))
        }
    }

    /// Room for `n` more values on the stack, or an error: never push without it.
    public func checkStack(_ n: Int32) throws {
        guard lua_checkstack(L, n) != 0 else { throw LuaError(kind: .memory, message: "Lua stack overflow") }
    }

    /// Pushes a value copied from Swift. A `LuaValue` is a tree (no cycles); one nested past
    /// `maxDepth` is refused, and the stack is checked at each level.
    public func push(_ value: LuaValue) throws {
        try push(value, depth: 0)
    }

    private func push(_ value: LuaValue, depth: Int) throws {
        try checkStack(3)
        switch value {
        case .nil: lua_pushnil(L)
        case .boolean(let b): lua_pushboolean(L, b ? 1 : 0)
        case .integer(let i): lua_pushinteger(L, lua_Integer(i))
        case .number(let d): lua_pushnumber(L, d)
        case .string(let s): push(string: s)
        case .bytes(let b):
            b.withUnsafeBufferPointer { buf in
                buf.withMemoryRebound(to: CChar.self) { _ = lua_pushlstring(L, $0.baseAddress, $0.count) }
            }
        case .table(let t):
            guard depth < LuaState.maxDepth else {
                throw LuaError(message: "table nested more than \(LuaState.maxDepth) levels deep")
            }
            lua_createtable(L, Int32(clamping: t.array.count), Int32(clamping: t.hash.count))
            for (i, v) in t.array.enumerated() {
                try push(v, depth: depth + 1)
                lua_rawseti(L, -2, lua_Integer(i + 1))
            }
            for (k, v) in t.hash {
                // A nil or NaN key would raise in lua_rawset.
                if case .nil = k { continue }
                if case .number(let d) = k, d.isNaN { continue }
                try push(k, depth: depth + 1)
                try push(v, depth: depth + 1)
                lua_rawset(L, -3)
            }
        case .reference(let r): pushReference(r)
        }
    }

    /// The string at `index` (no conversion from numbers), or nil.
    public func string(at index: Int32) -> String? {
        guard lua_type(L, index) == LUA_TSTRING else { return nil }
        var len = 0
        guard let p = lua_tolstring(L, index, &len) else { return nil }
        return p.withMemoryRebound(to: UInt8.self, capacity: len) {
            String(decoding: UnsafeBufferPointer(start: $0, count: len), as: UTF8.self)
        }
    }

    /// How deep a table may nest to be copied between Lua and Swift.
    public static let maxDepth = 100

    /// The most values one copy visits: a table shared many times over (a DAG) would
    /// otherwise be copied once per path, without end.
    public static let maxValues = 100_000

    /// Copies the value at `index` into Swift; `function` names the caller in errors
    /// (a cycle, nesting past `maxDepth`, more than `maxValues` values). Reads raw: no
    /// metamethod runs. The copy checks the CPU budget as it goes and may not take a capped
    /// state past its memory cap (`chargeCopy`).
    public func value(at index: Int32, function: String = "value") throws -> LuaValue {
        beginCopy()
        // The tables on the path to the value being copied (a cycle is one met again on its
        // own path): at most `maxDepth`, so an array searched in order. A Set of pointers
        // cost a scan of every conformance in the binary the first time a process made one
        // (UnsafeRawPointer's Hashable), 0.6M instructions, 2% of a cold start (issue 48).
        var seen: [UnsafeRawPointer] = []
        var budget = LuaState.maxValues
        return try value(at: lua_absindex(L, index), seen: &seen, depth: 0, function: function, budget: &budget)
    }

    private func value(
        at index: Int32,
        seen: inout [UnsafeRawPointer],
        depth: Int,
        function: String,
        budget: inout Int
    ) throws -> LuaValue {
        budget -= 1
        guard budget >= 0 else { throw LuaError(message: "\(function): more than \(LuaState.maxValues) values to copy") }
        try budgetStep()
        switch lua_type(L, index) {
        case LUA_TNIL, LUA_TNONE: return .nil
        case LUA_TBOOLEAN: return .boolean(lua_toboolean(L, index) != 0)
        case LUA_TNUMBER:
            if lua_isinteger(L, index) != 0 { return .integer(Int64(clua_tointeger(L, index))) }
            return .number(clua_tonumber(L, index))
        case LUA_TSTRING:
            var len = 0
            let p = lua_tolstring(L, index, &len)!
            try chargeCopy(len)
            let bytes = UnsafeRawBufferPointer(start: p, count: len)
            if let s = String(validating: bytes, as: UTF8.self) { return .string(s) }
            return .bytes(Array(bytes))
        case LUA_TTABLE:
            guard depth < LuaState.maxDepth else {
                throw LuaError(message: "\(function): table nested more than \(LuaState.maxDepth) levels deep")
            }
            let id = lua_topointer(L, index)!
            guard !seen.contains(id) else { throw LuaError(message: "\(function): table contains a cycle") }
            seen.append(id)
            defer { seen.removeLast() }
            try checkStack(3)
            var table = LuaTable()
            let n = Int(lua_rawlen(L, index))
            table.array.reserveCapacity(n)
            for i in 1...max(n, 1) where n > 0 {
                lua_rawgeti(L, index, lua_Integer(i))
                table.array.append(try value(at: top, seen: &seen, depth: depth + 1, function: function, budget: &budget))
                pop()
            }
            lua_pushnil(L)
            while lua_next(L, index) != 0 {
                if lua_isinteger(L, -2) != 0 {
                    let k = clua_tointeger(L, -2)
                    if k >= 1 && k <= n {
                        pop()
                        continue
                    }
                }
                let key = try value(at: top - 1, seen: &seen, depth: depth + 1, function: function, budget: &budget)
                table.hash[key] = try value(at: top, seen: &seen, depth: depth + 1, function: function, budget: &budget)
                pop()
            }
            return .table(table)
        default:
            return .reference(reference(at: index))
        }
    }

    // MARK: Registry

    /// Pins the value at `index` in the registry.
    public func reference(at index: Int32) -> LuaReference {
        let typeName = String(cString: lua_typename(L, lua_type(L, index)))
        lua_pushvalue(L, index)
        return LuaReference(lifetime: lifetime, ref: luaL_ref(L, clua_registryindex()), typeName: typeName)
    }

    /// Pushes the value `r` pins; `r` must be one of this state's (`reference(at:)`).
    public func pushReference(_ r: LuaReference) {
        lua_rawgeti(L, clua_registryindex(), lua_Integer(r.ref))
    }

    // MARK: Loading and calling

    /// Loads a text chunk (binary chunks are refused) and leaves the function on the stack.
    public func load(_ code: String, chunkName: String, environmentIndex: Int32? = nil) throws {
        var code = code
        let status = code.withUTF8 { buf in
            buf.withMemoryRebound(to: CChar.self) {
                clua_loadbuffer(L, $0.baseAddress, $0.count, chunkName, "t")
            }
        }
        guard status == LUA_OK else {
            let message = string(at: -1) ?? "cannot load chunk"
            pop()
            throw LuaError(kind: status == LUA_ERRMEM ? .memory : .syntax, message: message)
        }
        if checksFunctionSize {
            let checked = sf_check_chunk(L)
            guard checked == LUA_OK else {
                let message =
                    "\(chunkName.hasPrefix("@") || chunkName.hasPrefix("=") ? String(chunkName.dropFirst()) : chunkName): \(string(at: -1) ?? "cannot be checked")"
                lua_settop(L, -3)
                throw LuaError(kind: checked == LUA_ERRMEM ? .memory : .syntax, message: message)
            }
        }
        if let env = environmentIndex {
            lua_pushvalue(L, env < 0 ? env - 1 : env)
            lua_setupvalue(L, -2, 1)
        }
    }

    /// Calls the function below its `nargs` arguments through `lua_pcall` with a traceback
    /// handler; leaves `nresults` results (or all with `nil`).
    public func call(arguments nargs: Int32, results nresults: Int32? = nil) throws {
        let status = sf_pcall(L, nargs, nresults ?? clua_multret())
        guard status == LUA_OK else { throw callError(status) }
    }

    /// The error a failed `lua_pcall` left on top of the stack (popped).
    func callError(_ status: Int32) -> LuaError {
        var text = string(at: -1) ?? "(error object is not a string)"
        // An error's text goes to logs and callers: a plugin's 16 MiB message would be kept
        // and copied on every failure.
        if text.utf8.count > 8192 { text = String(decoding: text.utf8.prefix(8192), as: UTF8.self) + "..." }
        pop()
        let kind: LuaError.Kind = status == LUA_ERRMEM ? .memory : .runtime
        if let overrun = onBudgetOverrun {
            if kind == .memory || text.contains("not enough memory") {
                overrun("memory")
            } else if text.contains(budgetReason) {
                overrun("cpu")
            }
        }
        return LuaError(kind: kind, handled: kind == .memory ? "not enough memory" : text)
    }

    /// Runs a chunk and returns its results copied into Swift.
    @discardableResult
    public func run(_ code: String, chunkName: String = "=(swift)") throws -> [LuaValue] {
        let base = top
        try load(code, chunkName: chunkName)
        try call(arguments: 0)
        defer { top = base }
        return try (base + 1..<top + 1).map { try value(at: $0, function: chunkName) }
    }

    /// `_G[name] = value on top` (popped), raw: no metamethod of `_G` runs.
    public func setGlobal(_ name: String) {
        lua_rawgeti(L, clua_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
        push(string: name)
        lua_rotate(L, -3, -1)
        lua_rawset(L, -3)
        pop()
    }

    /// Pushes `_G[name]`, raw: no metamethod of `_G` runs.
    public func getGlobal(_ name: String) {
        lua_rawgeti(L, clua_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
        push(string: name)
        lua_rawget(L, -2)
        lua_copy(L, -1, -2)
        pop()
    }

    // MARK: Swift functions and objects

    /// Pushes a Swift function. `body` reads its arguments from `call`, pushes its
    /// results and returns how many; a thrown error becomes a Lua error.
    public func push(function name: String, _ body: @escaping (LuaCall) throws -> Int32) {
        let box = LuaFunctionBox(name: name, body: body)
        sf_push_swift_function(L, Unmanaged.passRetained(box).toOpaque())
    }

    /// Pushes a Swift object as userdata with the metatable registered as `typeName`.
    /// The same object pushed twice is the same Lua value while Lua holds it.
    public func push(object: AnyObject, typeName: String) {
        push(unretained: .passUnretained(object), typeName: typeName)
    }

    /// As `push(object:typeName:)`, for callers on the event path: the object travels as an
    /// unmanaged reference, so the call costs no retain when it is already in the cache.
    /// Returns whether it made a new userdata (the object was not in the cache).
    @inline(__always) @discardableResult
    func push(unretained object: Unmanaged<AnyObject>, typeName: String) -> Bool {
        let address = object.toOpaque()
        if sf_push_cached_object(L, objectCacheRef, address) != 0 { return false }
        lua_rawgeti(L, clua_registryindex(), lua_Integer(objectCacheRef))
        sf_push_object(L, object.retain().toOpaque(), typeName)
        lua_pushlightuserdata(L, address)
        lua_pushvalue(L, -2)
        lua_rawset(L, -4)
        lua_copy(L, -1, -2)
        pop()
        return true
    }

    /// Charges the object at `index` again after it changed (a record's fields were set).
    public func recharge(at index: Int32) {
        guard limits.pointee.limit != 0, let raw = sf_to_object(L, index) else { return }
        guard let bytes = hostBytes(of: Unmanaged<AnyObject>.fromOpaque(raw).takeUnretainedValue()) else { return }
        sf_charge_object(L, index, bytes)
    }

    /// The Swift object at `index` if it is userdata of `typeName`.
    public func object<T: AnyObject>(at index: Int32, typeName: String, as type: T.Type) -> T? {
        guard let slot = luaL_testudata(L, index, typeName) else { return nil }
        let raw = slot.load(as: UnsafeMutableRawPointer?.self)
        guard let raw else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(raw).takeUnretainedValue() as? T
    }

    /// Any ShareFlow object at `index`, whatever its type.
    public func anyObject(at index: Int32) -> AnyObject? {
        guard let raw = sf_to_object(L, index) else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(raw).takeUnretainedValue()
    }

    // MARK: Setup

    private static let installed: Bool = {
        sf_install(luaDispatch, luaRelease)
        return true
    }()
}

/// A body for `LuaState.protected`, reached from C through a pointer.
private struct ProtectedBody {
    let state: LuaState
    let body: (LuaState) throws -> Int32
}

private let runProtectedBody: sf_body_fn = { L, context in
    let p = context!.assumingMemoryBound(to: ProtectedBody.self)
    let state = p.pointee.state
    do {
        return try p.pointee.body(state)
    } catch let raise as LuaRaise {
        raise.push(state)
    } catch let error as LuaError {
        state.push(string: error.message)
    } catch {
        state.push(string: state.errorText?(error) ?? "\(error)")
    }
    return SF_SWIFT_ERROR
}

/// The box behind a Swift function pushed into Lua.
final class LuaFunctionBox {
    let name: String
    let body: (LuaCall) throws -> Int32
    init(name: String, body: @escaping (LuaCall) throws -> Int32) {
        self.name = name
        self.body = body
    }
}

private let luaDispatch: sf_swift_dispatch_fn = { L, box in
    let L = L!
    let function = Unmanaged<LuaFunctionBox>.fromOpaque(box!).takeUnretainedValue()
    let state = LuaState.owner(of: L)
    // The bindings push through `state.L`: point it at the calling thread for this call.
    let caller = state.L
    state.L = L
    defer { state.L = caller }
    do {
        return try function.body(LuaCall(state: state, L: L, name: function.name))
    } catch let raise as LuaRaise {
        raise.push(state)
    } catch let error as LuaArgumentError {
        state.push(string: where_(L) + lauxlibMessage(L, error))
    } catch {
        state.push(string: where_(L) + "\(function.name): " + (state.errorText?(error) ?? "\(error)"))
    }
    return SF_SWIFT_ERROR
}

/// An argument error worded as `luaL_argerror` words it: a method's arguments counted
/// without `self` ("calling 'f' on bad self" when `self` is wrong), the name the caller used;
/// a property set (`obj.key = v`) names the key.
private func lauxlibMessage(_ L: OpaquePointer, _ error: LuaArgumentError) -> String {
    if error.function == "__newindex" && error.position == 3 {
        let key = lua_type(L, 2) == LUA_TSTRING ? (LuaState.owner(of: L).string(at: 2) ?? "?") : "?"
        return "bad value for '\(key)' (\(error.reason))"
    }
    var position = error.position
    var name = error.function.split(separator: ".").last.map(String.init) ?? error.function
    var ar = lua_Debug()
    if lua_getstack(L, 0, &ar) != 0, lua_getinfo(L, "n", &ar) != 0 {
        if let called = ar.name { name = String(cString: called) }
        if let what = ar.namewhat, String(cString: what) == "method" {
            position -= 1
            if position == 0 { return "calling '\(name)' on bad self (\(error.reason))" }
        }
    }
    return "bad argument #\(position) to '\(name)' (\(error.reason))"
}

/// `file:line: ` of the Lua code that called the running Swift function, as luaL_where gives.
private func where_(_ L: OpaquePointer) -> String {
    luaL_where(L, 1)
    defer { clua_pop(L, 1) }
    return LuaState.owner(of: L).string(at: -1) ?? ""
}

private let luaRelease: sf_swift_release_fn = { raw in
    Unmanaged<AnyObject>.fromOpaque(raw!).release()
}

extension StaticString {
    /// The literal as a C string: its own bytes, nul-terminated in the binary, so the same
    /// address on every call (a one-scalar literal is copied instead).
    func withCString<T>(_ body: (UnsafePointer<CChar>) -> T) -> T {
        guard hasPointerRepresentation else { return description.withCString(body) }
        return body(UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self))
    }
}
