import CLua
import Foundation
import Logging
import ShareFlow

/// A Lua state wired to an engine: the `shareflow` module (also `require("shareflow")`),
/// ready to run trusted scripts (`shareflow run`, the console) or a sandboxed one.
///
/// ```swift
/// let host = try ScriptHost(engine: engine)
/// try host.setDefaultSession("alice@example.com")   // who `shareflow.container(id)` acts as
/// try host.runFile("Scripts/demo.lua", arguments: [])
/// let results = try host.run("return shareflow.accounts.count()")   // [.integer(…)]
/// ```
public final class ScriptHost {
    /// The state scripts run in. Never used by two threads at once: the engine's lock serialises
    /// the observers and policies that call into it.
    public let lua: LuaState
    /// The engine the `shareflow` module drives.
    public let engine: Engine
    /// Where `sf.log.*` and a plugin's `print` write (at first the engine's logger).
    public var logger: Logger
    /// Who `shareflow.container(id)` acts as.
    public var defaultSession: String?

    /// Errors raised by Lua callbacks of operations so far (each logged with its traceback).
    public private(set) var callbackErrors = 0
    /// Prefix of the names of this host's observers and policies (a plugin's name).
    public let labelPrefix: String
    /// A candidate plugin's host (shadow mode): see `init`.
    public let isShadow: Bool
    /// Progress of DiscoverAll when the script gave no progress function.
    public var defaultDiscoveryProgress: ((Int, Int) -> Void)?
    package var bindings: Bindings!
    /// Registry refs of the `shareflow` table and (for a plugin) the table `init.lua` returned.
    var moduleTable: Int32 = LUA_NOREF
    var pluginTable: Int32 = LUA_NOREF
    /// Removes each observer and policy registered from this host's Lua, so none outlives it.
    var registrations: [() -> Void] = []

    /// The reason a call over the CPU budget ends with.
    public var budgetReason: String {
        get { lua.budgetReason }
        set { lua.budgetReason = newValue }
    }
    /// The plugins of this process, for `shareflow.plugins` in trusted scripts.
    public var plugins: PluginManager?

    /// Bytes of log one call into this state may write (`limits.logKiB`, SPEC §8); nil: no
    /// bound (trusted scripts). Past it, the rest of the call's output is dropped and one line
    /// says how much.
    public var logLimit: Int?
    /// The call (`sf_limits.calls`) the counts below belong to.
    private var logCall: UInt64 = 0
    private var loggedBytes = 0
    private(set) var droppedLogBytes = 0

    /// Writes a line of this state's log (`sf.log.*`, a plugin's `print`) within `logLimit`.
    func log(_ level: Logger.Level, _ text: String) {
        guard let limit = logLimit else { return logger.log(level: level, "\(prefixed(text))") }
        let call = UInt64(lua.limits.pointee.calls)
        if call != logCall {
            reportDroppedLog()
            logCall = call
            loggedBytes = 0
        }
        let n = text.utf8.count
        if droppedLogBytes == 0 && loggedBytes + n <= limit {
            loggedBytes += n
            return logger.log(level: level, "\(prefixed(text))")
        }
        let room = droppedLogBytes == 0 ? max(limit - loggedBytes, 0) : 0
        if room > 0 { logger.log(level: level, "\(prefixed(String(decoding: text.utf8.prefix(room), as: UTF8.self)))") }
        loggedBytes = limit
        droppedLogBytes += n - room
        lua.limits.pointee.log_dropped = 1
    }

    /// The one line that says how much of a call's log was dropped (at the call's end).
    func reportDroppedLog() {
        lua.limits.pointee.log_dropped = 0
        guard droppedLogBytes > 0, let limit = logLimit else { return }
        logger.warning("\(prefixed("log limit of \(limit / 1024) KiB per call reached: \(droppedLogBytes) bytes dropped"))")
        droppedLogBytes = 0
    }

    private func prefixed(_ text: String) -> String {
        labelPrefix.isEmpty ? text : "[\(labelPrefix.dropLast())] \(text)"
    }

    /// - Parameters:
    ///   - memoryLimit: the state's memory cap in bytes (0: none).
    ///   - labelPrefix: prefixes the names of observers and policies registered here.
    ///   - sandboxFolder: run sandboxed (SPEC §8), `require` confined to this folder.
    ///   - shadow: a candidate plugin (SPEC §18 P6 shadow mode): its policies go to the
    ///     engine's candidate set, which is asked beside the live one and never decides; its
    ///     observers, authenticators and fault rules are not registered.
    public init(engine: Engine, memoryLimit: Int = 0, labelPrefix: String = "", sandboxFolder: String? = nil, shadow: Bool = false) throws {
        self.engine = engine
        self.isShadow = shadow
        self.logger = engine.logger
        self.labelPrefix = labelPrefix
        lua = try LuaState(memoryLimit: memoryLimit, libraries: sandboxFolder == nil ? .standard : .sandbox)
        // Trusted scripts too: coroutine.close's nesting cap (Lua 5.4.4's C-stack bug) and the
        // library functions that stop for Ctrl-C.
        lua.trackCoroutines()
        bindings = Bindings(host: self)
        // A plugin sees the engine's objects read-only (SPEC §8); trusted scripts change them.
        lua.guardsWrites = sandboxFolder != nil && !labelPrefix.isEmpty
        // What a sandboxed state reads of the engine's errors leaves out the operator's
        // detail (the store's path, user, host): a plugin could pass it on to a client (as a
        // policy's reason) or a log the operator does not read (`Bindings.readable`).
        bindings.withholdsOperatorDetail = sandboxFolder != nil
        lua.errorText = { [unowned self] error in (error as? ShareFlowError).map { bindings.readable($0).description } }
        if let folder = sandboxFolder {
            // A plugin's print goes to the log; a sandboxed script keeps standard output.
            let log: ((String) -> Void)? = labelPrefix.isEmpty ? nil : { [unowned self] text in self.log(.info, text) }
            try Sandbox.apply(to: lua, folder: folder, print: log)
        }
        try installModule()
    }

    /// Every bound type and its field and method names (the console's completion and the
    /// docs tests use it).
    public var apiSurface: [String: [String]] {
        boundTypes { $0.fields + $0.methods }
    }

    /// Every bound type's method names (called with `:`).
    public var methodNames: [String: [String]] {
        boundTypes { $0.methods }
    }

    /// `names` of each bound type's members, by type name: one list of the bound types for
    /// both the API surface and the method names, so neither misses a type the other has.
    private func boundTypes(_ names: ((fields: [String], methods: [String])) -> [String]) -> [String: [String]] {
        var surface: [String: [String]] = [:]
        func add<T>(_ c: LuaClass<T>) { surface[c.typeName] = names(c.memberNames) }
        let b = bindings!
        add(b.accountClass)
        add(b.sessionClass)
        add(b.containerClass)
        add(b.databaseClass)
        add(b.recordClass)
        add(b.shareClass)
        add(b.participantClass)
        add(b.metadataClass)
        for name in b.operationNames { add(b.operationClass(named: name)) }
        return surface
    }

    /// Reports an error raised by a Lua callback: logged with its traceback, counted.
    func reportCallbackError(_ name: String, _ error: Error) {
        callbackErrors += 1
        logger.error("\(name) raised an error: \(error)")
    }

    deinit {
        for remove in registrations { remove() }
        // The state's own functions hold the bindings, which hold the state: closing breaks
        // that loop, runs the finalizers and frees the state (or, under a call, when it returns).
        lua.close()
    }

    /// Installs the module table as global `shareflow` and in `package.loaded`.
    private func installModule() throws {
        let L = lua.L
        lua_createtable(L, 0, 16)
        bindings.register()
        try ShareFlowModule.install(into: lua, host: self, bindings: bindings)
        lua_pushvalue(L, -1)
        moduleTable = luaL_ref(L, clua_registryindex())
        lua_pushvalue(L, -1)
        lua.setGlobal("shareflow")
        lua_getglobal(L, "package")
        if lua_type(L, -1) == LUA_TTABLE {
            lua_getfield(L, -1, "loaded")
            lua_pushvalue(L, -3)
            lua_setfield(L, -2, "shareflow")
            lua.pop(2)
        } else {
            lua.pop()
        }
        lua.pop()
    }

    /// Runs a script file as the standalone `lua` does: `arg` holds the script name at 0 and
    /// the arguments from 1, and the chunk receives the arguments as `...`.
    public func runFile(_ path: String, arguments: [String], interpreter: String = "shareflow") throws {
        let data = try ScriptHost.read(path)
        var code = String(decoding: data, as: UTF8.self)
        if code.hasPrefix("#") {  // a shebang line, skipped as lua.c does (keeping line numbers)
            code = "--" + code
        }
        var argTable = LuaTable()
        argTable.hash[.integer(-1)] = .string(interpreter)
        argTable.hash[.integer(0)] = .string(path)
        argTable.array = arguments.map { .string($0) }
        try lua.push(.table(argTable))
        lua.setGlobal("arg")
        let base = lua.top
        defer { lua.top = base }
        try lua.load(code, chunkName: path == "-" ? "=stdin" : "@" + path)
        // Any number of arguments: room for each on the stack first (45 overran Lua's 20 free
        // slots and corrupted the heap).
        try lua.checkStack(Int32(clamping: arguments.count + 1))
        for a in arguments { lua.push(string: a) }
        try lua.call(arguments: Int32(arguments.count), results: 0)
    }

    /// A script's text: `-` is standard input; a pipe, `/dev/stdin` or `<(…)` is read to its
    /// end as a file is (lua.c reads all three). A folder or a missing file is "cannot open",
    /// with the reason.
    static func read(_ path: String) throws -> Data {
        do {
            return try BoundedFile.read(path, maxBytes: maxScriptBytes)
        } catch let failure as BoundedFile.Failure {
            throw LuaError(message: failure.description)
        }
    }

    /// The largest script `run` reads (standard input or a file): `/dev/zero` took all memory.
    static let maxScriptBytes = 64 << 20

    /// Runs a chunk of text and returns its results.
    @discardableResult
    public func run(_ code: String, chunkName: String = "=(shareflow)") throws -> [LuaValue] {
        try lua.run(code, chunkName: chunkName)
    }
}

extension ScriptHost {
    /// Sets the session `shareflow.container(id)` acts as (`--as`).
    public func setDefaultSession(_ who: String) throws {
        defaultSession = who
    }
}
