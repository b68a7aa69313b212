import Foundation
import ShareFlowTestKit
import XCTest

final class PluginsCommandTests: XCTestCase {
    func testListCheckReloadShippedPlugins() throws {
        var r = try CLI.run(["plugins", "list", "--config", "Scripts/demo.config.lua"])
        XCTAssertEqual(r.status, 0, r.stderr)
        for name in ["access-requests", "audit-log", "chaos", "domain-allowlist", "expiring-invitations", "proxy-auth"] {
            XCTAssertTrue(r.stdout.contains(name), r.stdout)
        }
        XCTAssertTrue(r.stdout.contains("1.0.0   on "), r.stdout)
        r = try CLI.run(["plugins", "check"])
        XCTAssertEqual(r.status, 0, r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("6 passed, 0 failed\n"), r.stdout)
        r = try CLI.run(["plugins", "reload", "--store", ":memory:", "--config", "Scripts/demo.config.lua"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "reloaded: audit-log, domain-allowlist, expiring-invitations\n")
        r = try CLI.run(["plugins", "list", "--json"])
        let list = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as! [[String: Any]]
        XCTAssertEqual(list.count, 6)
    }

    func testShippedPluginTestsPassThroughShareflowTest() throws {
        let r = try CLI.run(["test", "Plugins"])
        XCTAssertEqual(r.status, 0, r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("33 passed, 0 failed\n"), r.stdout)
    }

    func testConfigErrorsAreOneClearLine() throws {
        let dir = try CLI.temporaryDirectory()
        try CLI.write("return { plugins = { [\"domain-allowlist\"] = { domains = 7 } } }", to: dir.appendingPathComponent("c.lua"))
        try CLI.write("print('ran')", to: dir.appendingPathComponent("s.lua"))
        let r = try CLI.run(
            [
                "run", "--store", ":memory:", "--plugins", CLI.root.appendingPathComponent("Plugins").path,
                "--config", "c.lua", "s.lua",
            ],
            cwd: dir
        )
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.stderr, "shareflow: plugin 'domain-allowlist': config key 'domains' must be a list of strings, got number 7\n")
        XCTAssertEqual(r.stdout, "")
        try CLI.write("return { plugins = { missing = true } }", to: dir.appendingPathComponent("m.lua"))
        let m = try CLI.run(["run", "--store", ":memory:", "--config", "m.lua", "s.lua"], cwd: dir)
        XCTAssertTrue(m.stderr.contains("no plugin 'missing'"), m.stderr)
    }

    /// An empty script run in `dir` with each config of `cases` in turn: where a case names
    /// a message, the run fails with one line saying it (starting with `prefix`, when given);
    /// otherwise it runs.
    private func assertConfigsRun(
        _ cases: [(String, String?)],
        in dir: URL,
        prefix: String? = nil,
        file: StaticString = #filePath,
        line: UInt = #line
    ) throws {
        try CLI.write("", to: dir.appendingPathComponent("s.lua"))
        for (n, (config, message)) in cases.enumerated() {
            try CLI.write(config, to: dir.appendingPathComponent("c\(n).lua"))
            let r = try CLI.run(["run", "--store", ":memory:", "--config", "c\(n).lua", "s.lua"], cwd: dir)
            if let message {
                XCTAssertEqual(r.status, 1, config, file: file, line: line)
                if let prefix { XCTAssertTrue(r.stderr.hasPrefix(prefix), "\(config): \(r.stderr)", file: file, line: line) }
                XCTAssertTrue(r.stderr.contains(message), "\(config): \(r.stderr)", file: file, line: line)
                XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "\(config): one line: \(r.stderr)", file: file, line: line)
            } else {
                XCTAssertEqual(r.status, 0, "\(config): \(r.stderr)", file: file, line: line)
            }
        }
    }

    /// SPEC §16's `postgres = { poolSize, statementTimeoutMs }`: whole numbers in range, known
    /// keys, a table; anything else is one line naming it.
    func testPostgresConfigBadValuesAreOneClearLine() throws {
        let dir = try CLI.temporaryDirectory()
        let cases: [(String, String?)] = [
            ("return { postgres = { statementTimeoutMs = 5 } }", "postgres.statementTimeoutMs must be a whole number from 100 to 600000, got 5"),
            ("return { postgres = { statementTimeoutMs = 0/0 } }", "postgres.statementTimeoutMs must be a whole number from 100 to 600000"),
            ("return { postgres = { poolSize = 2.5 } }", "postgres.poolSize must be a whole number from 1 to 1000, got 2.5"),
            ("return { postgres = { poolSize = \"8\" } }", "postgres.poolSize must be a whole number from 1 to 1000"),
            ("return { postgres = { pool = 8 } }", "unknown key postgres.pool (expected poolSize, statementTimeoutMs, passwordFile)"),
            ("return { postgres = { passwordFile = 8 } }", "postgres.passwordFile must be a file's path, got 8"),
            ("return { postgres = { passwordFile = \"\" } }", "postgres.passwordFile must be a file's path"),
            ("return { postgres = { 8 } }", "'postgres' must be a table { poolSize = N, statementTimeoutMs = N }"),
            ("return { postgres = true }", "'postgres' must be a table"),
            ("return { postgres = { poolSize = 16, statementTimeoutMs = 2500 } }", nil),
            // SPEC §16 M5: `store = { busyTimeoutMs = N }`.
            ("return { store = { busyTimeoutMs = -1 } }", "store.busyTimeoutMs must be a whole number from 0 to 600000, got -1"),
            ("return { store = { busyTimeoutMs = 1/0 } }", "store.busyTimeoutMs must be a whole number from 0 to 600000"),
            ("return { store = { busyTimeoutMs = 0.5 } }", "store.busyTimeoutMs must be a whole number from 0 to 600000, got 0.5"),
            ("return { store = { busyTimeout = 5 } }", "unknown key store.busyTimeout (expected busyTimeoutMs)"),
            ("return { store = { 5000 } }", "'store' must be a table { busyTimeoutMs = N }"),
            ("return { store = \"x\" }", "'store' must be a table { busyTimeoutMs = N }"),
            ("return { store = { busyTimeoutMs = 0 } }", nil),
            ("return { store = { busyTimeoutMs = 2500 } }", nil),
        ]
        try assertConfigsRun(cases, in: dir)
    }

    /// SPEC §14's `sync.retentionDays`: every bad value a config file can hold — out of range,
    /// not finite, a string, a cycle, nested 10,000 deep, an unknown key, a metatable that
    /// raises — is one line naming it, or (the metatable, read raw) nothing at all; never a crash.
    func testSyncConfigBadValuesAreOneClearLine() throws {
        let dir = try CLI.temporaryDirectory()
        let cases: [(String, String?)] = [
            ("return { sync = { retentionDays = -1 } }", "sync.retentionDays must be a number of days from 0 to 36500, got -1"),
            ("return { sync = { retentionDays = 0/0 } }", "sync.retentionDays must be a number of days from 0 to 36500, got nan"),
            ("return { sync = { retentionDays = 1/0 } }", "sync.retentionDays must be a number of days from 0 to 36500, got inf"),
            ("return { sync = { retentionDays = 1e308 } }", "sync.retentionDays must be a number of days from 0 to 36500"),
            ("return { sync = { retentionDays = \"3\" } }", "sync.retentionDays must be a number of days from 0 to 36500, got \"3\" (a string)"),
            ("return { sync = { retentionDays = true } }", "sync.retentionDays must be a number of days from 0 to 36500, got a boolean"),
            ("return { sync = { retentionDays = 2.5, extra = 1 } }", "unknown key sync.extra (expected retentionDays)"),
            ("return { sync = 5 }", "'sync' must be a table"),
            ("local t = {}; t.retentionDays = t; return { sync = t }", "table contains a cycle"),
            ("local t = {}; local c = t; for _ = 1, 10000 do c.x = {}; c = c.x end; return { sync = t }", "nested more than 100 levels deep"),
            ("return { sync = setmetatable({}, { __index = function() error('boom') end }) }", nil),
            ("return { sync = { retentionDays = 0.5 } }", nil),
        ]
        try assertConfigsRun(cases, in: dir, prefix: "shareflow: config file ")
    }

    func testSandboxedScript() throws {
        let dir = try CLI.temporaryDirectory()
        try CLI.write("print(io == nil, os.execute == nil, type(os.time()))", to: dir.appendingPathComponent("s.lua"))
        let r = try CLI.run(["run", "--store", ":memory:", "--sandbox", "s.lua"], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "true\ttrue\tnumber\n")
    }

    /// A misspelled name in the config passed `plugins check` (the allow-list then stayed off),
    /// while `run` refused the same file.
    func testCheckReportsConfigNamesThatMatchNoPlugin() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("shareflow.config.lua")
        try CLI.write(#"return { plugins = { ["domain-alowlist"] = true, ["zzz"] = true } }"#, to: config)
        let plugins = CLI.root.appendingPathComponent("Plugins").path
        let r = try CLI.run(["plugins", "check", "--plugins", plugins, "--config", config.path])
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        // Searched: --plugins, then the config file's folder (and its Plugins), then ./Plugins.
        let searched = "\(plugins), \(dir.path)/Plugins, \(dir.path)"
        XCTAssertTrue(
            r.stdout.contains("FAIL  config \(config.path): plugin 'domain-alowlist' is not in \(searched); did you mean 'domain-allowlist'?"),
            r.stdout
        )
        XCTAssertTrue(r.stdout.contains("FAIL  config \(config.path): plugin 'zzz' is not in \(searched)\n"), r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("6 passed, 2 failed\n"), r.stdout)
        let json = try CLI.run(["plugins", "check", "--plugins", plugins, "--config", config.path, "--json"])
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((object["config"] as? [String])?.count, 2)
        XCTAssertEqual(object["failed"] as? Int, 2)
        XCTAssertTrue(json.stdout.contains("\"problems\":[]"), "an empty list is [] in JSON: \(json.stdout)")
        XCTAssertFalse(json.stdout.contains("\\/"), json.stdout)
        let run = try CLI.run(["run", "--store", ":memory:", "--plugins", plugins, "--config", config.path, "/dev/null"])
        XCTAssertEqual(run.stderr, "shareflow: no plugin 'domain-alowlist' in \(searched); did you mean 'domain-allowlist'?\n")
    }
}
