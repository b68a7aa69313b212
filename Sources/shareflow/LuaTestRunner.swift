import CLua
import CShareFlowSupport
import Foundation
import ShareFlow
import ShareFlowLua
import ShareFlowPostgres

/// Runs `*_test.lua` files: each `test(name, fn)` in a file runs on a fresh in-memory store
/// with a fresh Lua state. Failures are reported with `file:line`.
///
/// ```lua
/// test("R5: a share needs its root in the same save", function()
///   local saved, err = db:modifyRecords{ save = { share } }
///   expect.code(err.partialErrors[...], "invalidArguments")
/// end)
/// ```
public struct LuaTestRunner {
    public struct Outcome {
        public var file: String
        public var name: String
        public var failure: String?
    }

    /// Sets up each fresh host before a test file is loaded (plugins under test, and so on).
    public var prepare: (ScriptHost, String) throws -> Void = { _, _ in }
    public var engineOptions = Engine.Options()
    /// A PostgreSQL store's URL: each test runs on a new database made from it.
    public var storeTemplate: String?
    /// Where tests outside a plugin folder find plugins to load.
    public var pluginDirectories = ["Plugins"]
    /// The config file's fault rules (SPEC §15), armed in each test's engine.
    public var faults: [FaultRule] = []
    /// Seconds one test may run before it fails as timed out (nil: no limit).
    public var timeout: Double? = 10
    /// Set when Ctrl-C stopped a test: the caller stops and reports what ran.
    public private(set) var interrupted = false
    /// Runs only the tests whose name contains this text (plain text, case-sensitive: a name
    /// such as `cases[2]` is matched as written, with no pattern characters to escape).
    public var filter: String?
    /// How many tests the filter let run so far (every test, without one).
    public private(set) var matched = 0

    public init() {}

    /// Every `*_test.lua` under `paths` (files or folders), sorted.
    public static func testFiles(in paths: [String]) -> [String] {
        var files: [String] = []
        let fm = FileManager.default
        for path in paths {
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDir) else {
                files.append(path)  // reported as a failure when loaded
                continue
            }
            if isDir.boolValue {
                let e = fm.enumerator(atPath: path)
                while let f = e?.nextObject() as? String {
                    if f.hasSuffix("_test.lua") { files.append((path as NSString).appendingPathComponent(f)) }
                }
            } else {
                files.append(path)
            }
        }
        return files.sorted()
    }

    /// Runs every test of `file`; `report` is called after each. Ctrl-C fails the running test
    /// with "interrupted" and stops (see `interrupted`).
    public mutating func run(file: String, report: (Outcome) -> Void) {
        guard !interrupted else { return }
        // First pass: learn the test names. Loading the file runs its plugin's setup, and maybe
        // code at the file's top: no test's, so no coverage's (each test loads it again).
        let names: [String]
        sf_coverage_pause(1)
        do {
            let loaded = try loadTests(file: file)
            names = loaded.names
            release(loaded.host)
            sf_coverage_pause(0)
        } catch {
            sf_coverage_pause(0)
            report(Outcome(file: file, name: "(load)", failure: "\(error)"))
            return
        }
        for (index, name) in names.enumerated() where filter.map({ name.contains($0) }) ?? true {
            matched += 1
            var failure: String?
            // Each test starts on the system's clock, and leaves it so (SPEC §18 P5).
            TestClock.reset()
            defer { TestClock.reset() }
            do {
                let (host, _) = try loadTests(file: file)
                defer { release(host) }
                let L = host.lua.L
                host.lua.getGlobal("__shareflow_tests")
                guard lua_type(L, -1) == LUA_TTABLE, lua_rawgeti(L, -1, lua_Integer(index + 1)) == LUA_TTABLE else {
                    throw LuaError(message: "the test list was changed by the tests")
                }
                host.lua.push(static: "fn")
                lua_rawget(L, -2)
                lua_copy(L, -1, -3)
                host.lua.pop(2)
                sf_set_interrupt_target(host.lua.limits)
                defer { sf_set_interrupt_target(nil) }
                try host.lua.guardedCall(arguments: 0, results: 0)
                host.lua.close()
            } catch let e as LuaError {
                failure = e.description
            } catch {
                failure = "\(error)"
            }
            if sf_take_sigint() != 0 { interrupted = true }
            report(Outcome(file: file, name: name, failure: failure))
            if interrupted { return }
        }
    }

    /// Ends a test's store: a PostgreSQL scratch database is dropped.
    private func release(_ host: ScriptHost) {
        guard storeTemplate != nil else { return }
        let url = host.engine.store.path
        host.engine.store.close()
        PostgresStore.dropScratch((host.engine.store.driver as? PostgresStore).map { $0.location.url(database: $0.location.database) } ?? url)
    }

    /// From now on Ctrl-C interrupts the running test instead of killing the process.
    public static func catchInterrupts() { sf_install_sigint() }

    private func loadTests(file: String) throws -> (host: ScriptHost, names: [String]) {
        var options = engineOptions
        options.discoveryProgressInterval = max(options.discoveryProgressInterval, 1)
        // A PostgreSQL store (`--store postgres://…`): a new database for each test, made
        // from the named one and dropped after it (SPEC §16: the Lua suite on both stores).
        let store = try storeTemplate.map { try Store.open(PostgresStore.makeScratch(template: $0)) } ?? Store(path: ":memory:")
        let engine = Engine(store: store, options: options)
        engine.logger.logLevel = .critical
        let host = try ScriptHost(engine: engine)
        if let timeout {
            // The budget's mechanism, on the wall clock: a test stuck in a loop (or in a
            // pattern function) fails with this reason, and pcall cannot keep it going.
            host.lua.cpuBudget = UInt64(max(timeout, 0.001) * 1e9)
            host.lua.budgetReason = "timed out after \(LuaTestRunner.seconds(timeout)) (--timeout)"
        }
        try host.run(LuaTestRunner.harness, chunkName: "=[test harness]")
        LuaTestRunner.addAuthenticate(to: host)
        LuaTestRunner.addClock(to: host)
        try findModules(beside: file, in: host)
        try attachPlugins(host, file: file)
        try prepare(host, file)
        try host.runFile(file, arguments: [])
        let names = try host.run("local n = {} for i, t in ipairs(__shareflow_tests) do n[i] = t.name end return n")
        guard case .table(let t) = names.first ?? .nil else { return (host, []) }
        return (host, t.array.compactMap(\.stringValue))
    }

    /// `require(name)` finds `name.lua` in the test file's folder first (shared helpers, like
    /// Tests/lua/helpers.lua), as the standalone `lua` finds modules beside a script run from
    /// its folder.
    /// A folder whose name holds `;` or `?` (package.path's separator and placeholder) is not
    /// added: it would read as other folders.
    private func findModules(beside file: String, in host: ScriptHost) throws {
        let folder = PathName.folder(of: file)
        guard !folder.contains(";"), !folder.contains("?") else { return }
        try host.lua.push(.string(folder.isEmpty ? "." : folder))
        host.lua.setGlobal("__shareflow_test_folder")
        try host.run(
            """
            package.path = __shareflow_test_folder .. "/?.lua;" .. package.path
            __shareflow_test_folder = nil
            """,
            chunkName: "=[test harness]"
        )
    }

    static func seconds(_ t: Double) -> String {
        t == t.rounded() ? "\(Int(t)) s" : String(format: "%.3g s", t)
    }

    /// Plugins for the test: a file inside `<dir>/<name>/` (with `<dir>/<name>/init.lua`) gets
    /// that plugin loaded with its default config; every test can load others with
    /// `shareflow.plugins.load(name, config)`.
    private func attachPlugins(_ host: ScriptHost, file: String) throws {
        let folder = PathName.folder(of: file)
        let isPlugin = FileManager.default.fileExists(atPath: (folder as NSString).appendingPathComponent("init.lua"))
        let dirs = isPlugin ? [PathName.folder(of: folder)] : pluginDirectories
        let manager = try PluginManager(engine: host.engine, directories: dirs, privateDataDirectory: ())
        host.plugins = manager
        // The config file's fault rules (SPEC §15) apply to every test, as to every command.
        for rule in faults { try host.engine.faults.add(rule, owner: .config) }
        if isPlugin { try manager.load(PathName.lastComponent(of: folder)) }
    }

    /// `test.authenticate(request)`: what the test's authenticators (`ctx.authenticate`, such as
    /// proxy-auth's) say about a request, as `shareflow serve` asks them, so a plugin's
    /// authenticator is tested like its policies. `request` holds `headers` (names are matched
    /// in lowercase, as the server gives them), `query`, `method` (default POST), `path`,
    /// `container`, `environment` and `database`. Returns `{ userRecordID, email, authenticator }`
    /// for the account named, nil when every authenticator passes, or nil and the refusal (a
    /// `permissionFailure` error: `expect.denied` reads it).
    private static func addAuthenticate(to host: ScriptHost) {
        let engine = host.engine
        let lua = host.lua
        lua.getGlobal("test")
        guard lua_type(lua.L, -1) == LUA_TTABLE else { return lua.pop() }
        lua.push(function: "authenticate") { call in
            guard case .table(let t) = try call.value(1) else {
                throw call.argumentError(1, "table expected, got \(call.typeName(1))")
            }
            func strings(_ key: String) throws -> [String: String] {
                guard let value = t[key], value != .nil else { return [:] }
                guard case .table(let table) = value else {
                    throw call.argumentError(1, "field '\(key)' must be a table of strings")
                }
                var out: [String: String] = [:]
                for (k, v) in table.hash {
                    guard case .string(let name) = k, case .string(let text) = v else {
                        throw call.argumentError(1, "field '\(key)' must be a table of strings")
                    }
                    out[key == "headers" ? name.lowercased() : name] = text
                }
                return out
            }
            func text(_ key: String, _ fallback: String) throws -> String {
                guard let value = t[key], value != .nil else { return fallback }
                guard case .string(let s) = value else { throw call.argumentError(1, "field '\(key)' must be a string") }
                return s
            }
            let request = AuthenticationRequest(
                method: try text("method", "POST"),
                path: try text("path", "/database/1/iCloud.test/development/private/records/query"),
                container: try text("container", "iCloud.test"),
                environment: try text("environment", "development"),
                database: try text("database", "private"),
                headers: try strings("headers"),
                query: try strings("query")
            )
            do {
                guard let (account, name) = try engine.authenticate(request) else { return 0 }
                var found: [LuaValue: LuaValue] = [.string("userRecordID"): .string(account.userRecordID), .string("authenticator"): .string(name)]
                if let email = account.email { found[.string("email")] = .string(email) }
                try call.state.push(.table(LuaTable(hash: found)))
                return 1
            } catch let error as ShareFlowError {
                lua_pushnil(call.L)
                try call.state.push(
                    .table(LuaTable(hash: [.string("code"): .string(error.code.rawValue), .string("message"): .string(error.message)]))
                )
                return 2
            }
        }
        lua.setField(-2, "authenticate")
        lua.pop()
    }

    /// `test.clock` (SPEC §18 P5): `set(t)` stops "now" at `t` (seconds since 1970, or an ISO
    /// 8601 time), `advance(s)` moves it on, `now()` reads it, `reset()` gives back the system's
    /// clock. Everything the engine and plugins read as now follows it (`EngineClock`, and
    /// `os.time()`/`os.date()` in every state); each test starts on the system's clock.
    private static func addClock(to host: ScriptHost) {
        let lua = host.lua
        lua.getGlobal("test")
        guard lua_type(lua.L, -1) == LUA_TTABLE else { return lua.pop() }
        lua_createtable(lua.L, 0, 4)
        lua.push(function: "set") { call in
            let date: Date
            if lua_type(call.L, 1) == LUA_TSTRING, let text = call.state.string(at: 1) {
                guard let parsed = DecisionFilter.time(text), !text.hasSuffix("s"), !text.hasSuffix("m"), !text.hasSuffix("h"), !text.hasSuffix("d")
                else {
                    throw call.argumentError(1, "an ISO 8601 time or seconds since 1970 expected, got '\(Naming.printable(text))'")
                }
                date = parsed
            } else {
                let seconds = try call.number(1)
                guard seconds.isFinite, abs(seconds) <= 315_576_000_000 else {
                    throw call.argumentError(1, "seconds since 1970 must be finite and within 10,000 years, got \(seconds)")
                }
                date = Date(timeIntervalSince1970: seconds)
            }
            TestClock.set(date)
            return 0
        }
        lua.setField(-2, "set")
        lua.push(function: "advance") { call in
            let seconds = try call.number(1)
            guard seconds.isFinite, abs(seconds) <= 315_576_000_000 else {
                throw call.argumentError(1, "seconds must be finite and within 10,000 years, got \(seconds)")
            }
            let moved = EngineClock.now().addingTimeInterval(seconds)
            guard EngineClock.accepts(moved) else {
                throw call.argumentError(1, "the clock would leave the 10,000 years either side of 1970 (it reads \(EngineClock.seconds) s)")
            }
            TestClock.set(moved)
            return 0
        }
        lua.setField(-2, "advance")
        lua.push(function: "now") { call in
            lua_pushnumber(call.L, EngineClock.seconds)
            return 1
        }
        lua.setField(-2, "now")
        lua.push(function: "reset") { _ in
            TestClock.reset()
            return 0
        }
        lua.setField(-2, "reset")
        lua.setField(-2, "clock")
        lua.pop()
    }

    /// `test(name, fn)` and the `expect` helpers (Lua/test_harness.lua); failures name the
    /// caller's line.
    static var harness: String { EmbeddedLua.testHarness }
}

/// The test clock, for the engine (`EngineClock`) and every Lua state (`os.time`, `os.date`).
enum TestClock {
    static func set(_ date: Date) {
        EngineClock.set(date)
        // The engine's clock as it took it (held within its range): Lua reads the same.
        sf_clock_set(Int64((EngineClock.seconds * 1e6).rounded()))
    }

    static func reset() {
        EngineClock.reset()
        sf_clock_set(Int64.min)
    }
}
