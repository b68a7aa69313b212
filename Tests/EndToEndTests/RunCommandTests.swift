import Foundation
import ShareFlowTestKit
import XCTest

final class RunCommandTests: XCTestCase {
    func testArgTableAndVarargsAsStandaloneLua() throws {
        let dir = try CLI.temporaryDirectory()
        let script = dir.appendingPathComponent("args.lua")
        try CLI.write("""
            local sf = require("shareflow")
            assert(sf == shareflow)
            print(arg[0], arg[1], arg[2], #arg, select('#', ...), ...)
            """, to: script)
        let r = try CLI.run(["run", "--store", ":memory:", script.path, "one", "two words"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "\(script.path)\tone\ttwo words\t2\t2\tone\ttwo words\n")
    }

    func testScriptErrorPrintsFileLineAndTracebackAndFails() throws {
        let dir = try CLI.temporaryDirectory()
        let script = dir.appendingPathComponent("fails.lua")
        try CLI.write("local x = 1\nlocal function boom()\n  error('it broke')\nend\nboom()\n", to: script)
        // Relative, as a user types it (Lua shortens chunk names past 60 characters, as lua.c does).
        let r = try CLI.run(["run", "--store", ":memory:", "fails.lua"], cwd: dir)
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.hasPrefix("shareflow: fails.lua:3: it broke\n"), r.stderr)
        XCTAssertTrue(r.stderr.contains("stack traceback:"), r.stderr)
        XCTAssertTrue(r.stderr.contains("fails.lua:5: in main chunk"), r.stderr)
    }

    func testSyntaxErrorAndMissingFile() throws {
        let dir = try CLI.temporaryDirectory()
        let script = dir.appendingPathComponent("syntax.lua")
        try CLI.write("local = 3\n", to: script)
        let r = try CLI.run(["run", "--store", ":memory:", script.path])
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("syntax.lua:1:"), r.stderr)
        let missing = try CLI.run(["run", "--store", ":memory:", dir.appendingPathComponent("nope.lua").path])
        XCTAssertNotEqual(missing.status, 0)
        XCTAssertTrue(missing.stderr.contains("cannot open"), missing.stderr)
    }

    func testDefaultStoreIsCreatedWithItsFolder() throws {
        let dir = try CLI.temporaryDirectory()
        try CLI.write("print('ok')", to: dir.appendingPathComponent("ok.lua"))
        let r = try CLI.run(["run", "ok.lua"], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.appendingPathComponent(".shareflow/store.sqlite").path))
    }

    func testForeignFilesAreRefusedAndLeftUntouched() throws {
        let dir = try CLI.temporaryDirectory()
        try CLI.write("print('should not run')", to: dir.appendingPathComponent("s.lua"))

        let text = dir.appendingPathComponent("notes.txt")
        try CLI.write("my precious notes\n", to: text)
        let textBefore = try Data(contentsOf: text)
        var r = try CLI.run(["run", "--store", text.path, "s.lua"], cwd: dir)
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("is not a ShareFlow store"), r.stderr)
        XCTAssertFalse(r.stdout.contains("should not run"))
        XCTAssertEqual(try Data(contentsOf: text), textBefore)

        // Another program's SQLite database.
        let other = dir.appendingPathComponent("other.sqlite")
        try Tools.sqlite(other.path, "create table t(x); insert into t values (1);")
        let otherBefore = try Data(contentsOf: other)
        r = try CLI.run(["run", "--store", other.path, "s.lua"], cwd: dir)
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("another program"), r.stderr)
        XCTAssertEqual(try Data(contentsOf: other), otherBefore)
        XCTAssertFalse(FileManager.default.fileExists(atPath: other.path + "-wal"))
    }

    func testNewerSchemaIsRefusedAndLeftUntouched() throws {
        let dir = try CLI.temporaryDirectory()
        try CLI.write("print('ran')", to: dir.appendingPathComponent("s.lua"))
        let store = dir.appendingPathComponent("s.sqlite")
        XCTAssertEqual(try CLI.run(["run", "--store", store.path, "s.lua"], cwd: dir).status, 0)
        try Tools.sqlite(store.path, "update shareflow_meta set value='99' where key='schemaVersion'; pragma wal_checkpoint(truncate); pragma journal_mode=delete;")
        let before = try Data(contentsOf: store)
        let r = try CLI.run(["run", "--store", store.path, "s.lua"], cwd: dir)
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("schema version 99"), r.stderr)
        XCTAssertEqual(try Data(contentsOf: store), before)
    }

    func testBadLogLevelIsAClearError() throws {
        let r = try CLI.run(["run", "--store", ":memory:", "--log-level", "loud", "x.lua"])
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("--log-level 'loud' is not one of trace, debug, info, notice, warning, error, critical"), r.stderr)
        // `warn` is taken for `warning`, and --help lists the levels.
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try CLI.write("print('ok')", to: dir.appendingPathComponent("ok.lua"))
        let warn = try CLI.run(["run", "--store", ":memory:", "--log-level", "warn", dir.appendingPathComponent("ok.lua").path])
        XCTAssertEqual(warn.status, 0, warn.stderr)
        XCTAssertTrue(try CLI.run(["run", "--help"]).stdout.contains("debug, info, notice, warning, error, critical"))
    }

    /// `--as nobody@x.com` was accepted and failed later, at the script's first call, with a traceback.
    func testAsIsCheckedAtStartUp() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("s.lua")
        try CLI.write("print('ran')", to: script)
        for (who, message) in [("nobody@x.com", "no account has this email address in store :memory:"),
                               ("not an email@", "is not a valid email address (R1)"),
                               ("_nope", "no account has this userRecordID")] {
            let r = try CLI.run(["run", "--store", ":memory:", "--as", who, script.path])
            XCTAssertEqual(r.status, 1)
            XCTAssertEqual(r.stdout, "", "the script never ran")
            XCTAssertTrue(r.stderr.hasPrefix("shareflow: --as \(who): "), r.stderr)
            XCTAssertTrue(r.stderr.contains(message), r.stderr)
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "one line: \(r.stderr)")
        }
    }

    /// `--json` did nothing for `run`; a failing script now prints its code, message and traceback.
    func testRunJSON() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ok = dir.appendingPathComponent("ok.lua"), bad = dir.appendingPathComponent("bad.lua")
        try CLI.write("print('hello')", to: ok)
        try CLI.write("""
            local sf = require("shareflow")
            sf.accounts.create{ email = "a@example.com" }
            sf.accounts.create{ email = "a@example.com" }
            """, to: bad)
        let r = try CLI.run(["run", "--store", ":memory:", "--json", ok.path])
        XCTAssertEqual(r.stdout, "hello\n{\"ok\":true}\n")
        let f = try CLI.run(["run", "--store", ":memory:", "--json", bad.path])
        XCTAssertEqual(f.status, 1)
        XCTAssertEqual(f.stderr, "")
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(f.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(object["ok"] as? Bool, false)
        let error = try XCTUnwrap(object["error"] as? [String: String])
        XCTAssertEqual(error["code"], "invalidArguments")
        XCTAssertEqual(error["message"], "invalidArguments (12): email 'a@example.com' already belongs to another account")
        XCTAssertTrue(error["traceback"]?.contains("bad.lua:3: in main chunk") ?? false, f.stdout)
        XCTAssertFalse(f.stdout.contains("\\/"), f.stdout)
        // Without --json the error value reads as a person reads it, not "(error object is a Error value)".
        let plain = try CLI.run(["run", "--store", ":memory:", bad.path])
        XCTAssertTrue(plain.stderr.hasPrefix("shareflow: invalidArguments (12): email 'a@example.com' already belongs"), plain.stderr)
    }
}