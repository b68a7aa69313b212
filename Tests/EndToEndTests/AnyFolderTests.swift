import Foundation
import ShareFlowTestKit
import XCTest

/// SPEC §9: every command works from any folder — plugins through --plugins, the config
/// file's folder, then ./Plugins; `bench` finds the shipped plugins or says up front what it
/// needs; every error is one `shareflow:` line.
final class AnyFolderTests: XCTestCase {
    private var dir: URL!

    override func setUpWithError() throws {
        dir = try CLI.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    func testPluginsAreFoundBesideTheConfigFile() throws {
        // A deployment folder elsewhere: its config and its Plugins folder side by side.
        let deploy = dir.appendingPathComponent("deploy")
        try FileManager.default.createDirectory(at: deploy, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: CLI.root.appendingPathComponent("Plugins"), to: deploy.appendingPathComponent("Plugins"))
        try CLI.write(
            #"return { plugins = { ["domain-allowlist"] = { domains = { "example.com" } } } }"#,
            to: deploy.appendingPathComponent("shareflow.config.lua")
        )
        let cwd = dir.appendingPathComponent("somewhere")
        try FileManager.default.createDirectory(at: cwd, withIntermediateDirectories: true)
        let config = deploy.appendingPathComponent("shareflow.config.lua").path
        let list = try CLI.run(["plugins", "list", "--config", config], cwd: cwd)
        XCTAssertEqual(list.status, 0, list.stderr)
        XCTAssertTrue(list.stdout.contains("domain-allowlist"), list.stdout)
        XCTAssertEqual(try CLI.run(["plugins", "check", "--config", config], cwd: cwd).status, 0)
        try CLI.write("print(#require('shareflow').plugins.loaded())", to: cwd.appendingPathComponent("s.lua"))
        let run = try CLI.run(["run", "--store", ":memory:", "--config", config, "s.lua"], cwd: cwd)
        XCTAssertEqual(run.stdout, "1\n", run.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: cwd.path), ["s.lua"], "nothing made where it ran")
    }

    func testTestAndBenchOutsideTheCheckout() throws {
        let test = try CLI.run(["test"], cwd: dir)
        XCTAssertEqual(test.status, 1)
        XCTAssertEqual(test.stderr, "shareflow: no tests found in Plugins, Scripts (test files are named *_test.lua)\n")
        // Without --plugins, the bench finds the shipped plugins of the checkout its binary was
        // built in; told a folder without them, it says so before measuring anything.
        let missing = dir.appendingPathComponent("empty").path
        let start = Date()
        let bench = try CLI.run(["bench", "--smoke", "--plugins", missing], cwd: dir)
        XCTAssertEqual(bench.status, 1)
        XCTAssertTrue(
            bench.stderr.hasPrefix(
                "shareflow: bench needs the shipped plugins (domain-allowlist, audit-log, expiring-invitations not found in \(missing)); pass --plugins DIR"
            ),
            bench.stderr
        )
        XCTAssertLessThan(Date().timeIntervalSince(start), 10, "up front")
        let found = try CLI.run(["bench", "--smoke", "--only", "accept"], cwd: dir, timeout: 300)
        XCTAssertEqual(found.status, 0, found.stderr)
        XCTAssertTrue(found.stdout.contains("AcceptShares with the allow-list policy"), found.stdout)
    }

    /// Store errors came in two formats (`Error:` from the argument parser, `shareflow:`).
    func testErrorsAreOneLineInOneFormat() throws {
        let notAStore = dir.appendingPathComponent("data.txt")
        try CLI.write("hello", to: notAStore)
        for args in [
            ["run", "--store", notAStore.path, "/dev/null"], ["store", "info", "--store", notAStore.path],
            ["repl", "--store", notAStore.path], ["plugins", "reload", "--store", notAStore.path],
        ] {
            let r = try CLI.run(args, stdin: "")
            XCTAssertEqual(r.status, 1, args.joined(separator: " "))
            XCTAssertTrue(r.stderr.hasPrefix("shareflow: \(notAStore.path) is not a ShareFlow store"), "\(args): \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
        }
    }
}
