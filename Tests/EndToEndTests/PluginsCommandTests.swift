import Foundation
import ShareFlowTestKit
import XCTest

final class PluginsCommandTests: XCTestCase {
    func testListCheckReloadShippedPlugins() throws {
        var r = try CLI.run(["plugins", "list", "--config", "Scripts/demo.config.lua"])
        XCTAssertEqual(r.status, 0, r.stderr)
        for name in ["audit-log", "domain-allowlist", "expiring-invitations", "proxy-auth"] {
            XCTAssertTrue(r.stdout.contains(name), r.stdout)
        }
        XCTAssertTrue(r.stdout.contains("1.0.0   on "), r.stdout)
        r = try CLI.run(["plugins", "check"])
        XCTAssertEqual(r.status, 0, r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("4 passed, 0 failed\n"), r.stdout)
        r = try CLI.run(["plugins", "reload", "--store", ":memory:", "--config", "Scripts/demo.config.lua"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "reloaded: audit-log, domain-allowlist, expiring-invitations\n")
        r = try CLI.run(["plugins", "list", "--json"])
        let list = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as! [[String: Any]]
        XCTAssertEqual(list.count, 4)
    }

    func testShippedPluginTestsPassThroughShareflowTest() throws {
        let r = try CLI.run(["test", "Plugins"])
        XCTAssertEqual(r.status, 0, r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("11 passed, 0 failed\n"), r.stdout)
    }

    func testConfigErrorsAreOneClearLine() throws {
        let dir = try CLI.temporaryDirectory()
        try CLI.write("return { plugins = { [\"domain-allowlist\"] = { domains = 7 } } }", to: dir.appendingPathComponent("c.lua"))
        try CLI.write("print('ran')", to: dir.appendingPathComponent("s.lua"))
        let r = try CLI.run(["run", "--store", ":memory:", "--plugins", CLI.root.appendingPathComponent("Plugins").path,
                             "--config", "c.lua", "s.lua"], cwd: dir)
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.stderr, "shareflow: plugin 'domain-allowlist': config key 'domains' must be a list of strings, got number 7\n")
        XCTAssertEqual(r.stdout, "")
        try CLI.write("return { plugins = { missing = true } }", to: dir.appendingPathComponent("m.lua"))
        let m = try CLI.run(["run", "--store", ":memory:", "--config", "m.lua", "s.lua"], cwd: dir)
        XCTAssertTrue(m.stderr.contains("no plugin 'missing'"), m.stderr)
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
        XCTAssertTrue(r.stdout.contains("FAIL  config \(config.path): plugin 'domain-alowlist' is not in \(searched); did you mean 'domain-allowlist'?"), r.stdout)
        XCTAssertTrue(r.stdout.contains("FAIL  config \(config.path): plugin 'zzz' is not in \(searched)\n"), r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("4 passed, 2 failed\n"), r.stdout)
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