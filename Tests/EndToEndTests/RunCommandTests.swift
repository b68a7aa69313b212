import Foundation
import ShareFlowTestKit
import XCTest

final class RunCommandTests: XCTestCase {
    func testArgTableAndVarargsAsStandaloneLua() throws {
        let dir = try CLI.temporaryDirectory()
        let script = dir.appendingPathComponent("args.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            assert(sf == shareflow)
            print(arg[0], arg[1], arg[2], #arg, select('#', ...), ...)
            """,
            to: script
        )
        let r = try CLI.run(["run", "--store", ":memory:", script.path, "one", "two words"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "\(script.path)\tone\ttwo words\t2\t2\tone\ttwo words\n")
    }

    /// `run [OPTIONS] SCRIPT` with plain options is read without the argument parser (cold
    /// start); each line here is run that way and, spelled `--option=value` so that the parser
    /// reads it, the other way: the two must not differ in anything.
    func testCommandLinesReadWithoutTheParserActAsParsed() throws {
        let dir = try CLI.temporaryDirectory()
        try CLI.write(
            """
            local sf = require("shareflow")
            print(arg[0], #arg, select('#', ...), io ~= nil)
            sf.accounts.create{ emails = { "a@example.com" } }
            """,
            to: dir.appendingPathComponent("ok.lua")
        )
        try CLI.write("error('it broke')\n", to: dir.appendingPathComponent("fails.lua"))
        try CLI.write(
            "return { plugins = { [\"domain-allowlist\"] = true, [\"audit-log\"] = true } }\n",
            to: dir.appendingPathComponent("on.config.lua")
        )
        let plugins = CLI.root.appendingPathComponent("Plugins").path
        let lines: [[String]] = [
            ["--store", ":memory:", "ok.lua"],
            ["--store", ":memory:", "--dry-run", "ok.lua"],
            ["--store", ":memory:", "--json", "--dry-run", "ok.lua"],
            ["--store", ":memory:", "--sandbox", "ok.lua"],
            ["--json", "--store", ":memory:", "fails.lua"],
            ["--store", ":memory:", "fails.lua"],
            ["--store", ":memory:", "missing.lua"],
            ["--store", ":memory:", "--as", "b@example.com", "ok.lua"],
            ["--store", ":memory:", "--json", "--as", "b@example.com", "ok.lua"],
            ["--store", ":memory:", "--log-level", "warn", "--config", "on.config.lua", "--plugins", plugins, "ok.lua"],
            ["--store", ":memory:", "--config", "missing.config.lua", "ok.lua"],
            ["--store", "sub/store.sqlite", "--plugins", plugins, "--plugins", "elsewhere", "ok.lua"],
        ]
        for line in lines {
            let parsed = line.enumerated().reduce(into: [String]()) { out, item in
                // The value joined to its option: only the parser reads that form.
                if item.offset > 0, line[item.offset - 1].hasPrefix("--"), !item.element.hasPrefix("-"),
                    ["--store", "--as", "--log-level", "--config", "--plugins"].contains(line[item.offset - 1])
                {
                    out[out.count - 1] += "=" + item.element
                } else {
                    out.append(item.element)
                }
            }
            XCTAssertNotEqual(parsed, line)
            let direct = try CLI.run(["run"] + line, cwd: dir)
            try? FileManager.default.removeItem(at: dir.appendingPathComponent("sub"))
            let viaParser = try CLI.run(["run"] + parsed, cwd: dir)
            try? FileManager.default.removeItem(at: dir.appendingPathComponent("sub"))
            XCTAssertEqual(direct.status, viaParser.status, "\(line)")
            XCTAssertEqual(direct.stdout, viaParser.stdout, "\(line)")
            XCTAssertEqual(direct.stderr, viaParser.stderr, "\(line)")
        }
        // What only the parser can answer still reaches it.
        let bogus = try CLI.run(["run", "--log-level", "bogus", "ok.lua"], cwd: dir)
        XCTAssertEqual(bogus.status, 64)
        XCTAssertTrue(bogus.stderr.contains("--log-level 'bogus' is not one of"), bogus.stderr)
        let help = try CLI.run(["run", "--store", ":memory:", "--help"], cwd: dir)
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.contains("USAGE: shareflow run"), help.stdout)
        let twice = try CLI.run(["run", "--store", ":memory:", "--store", ":memory:", "ok.lua"], cwd: dir)
        XCTAssertEqual(twice.status, 0, twice.stderr)
        let passed = try CLI.run(["run", "--store", ":memory:", "ok.lua", "--json"], cwd: dir)
        XCTAssertEqual(passed.status, 0, passed.stderr)
        XCTAssertEqual(passed.stdout, "ok.lua\t1\t1\ttrue\n")
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

    /// As the standalone lua: `-` (and no script, piped) reads standard input, `/dev/stdin` and a
    /// process substitution (a pipe) are read as files, `-e` runs chunks first, `-i` opens the
    /// console on the same state; a one-character path (`-`, `.`, `a`) is no crash (Foundation's
    /// deletingLastPathComponent traps on those: SIGILL, rc 132).
    func testStandardInputChunksAndTheConsoleAsLuaHasThem() throws {
        let dir = try CLI.temporaryDirectory()
        let dash = try CLI.run(["run", "--store", ":memory:", "-", "a", "b"], stdin: "print('stdin', arg[0], ...)")
        XCTAssertEqual(dash.status, 0, dash.stderr)
        XCTAssertEqual(dash.stdout, "stdin\t-\ta\tb\n")
        let piped = try CLI.run(["run", "--store", ":memory:"], stdin: "print(1 + 1)")
        XCTAssertEqual(piped.stdout, "2\n", piped.stderr)
        let failing = try CLI.run(["run", "--store", ":memory:", "-"], stdin: "\nerror('boom')")
        XCTAssertEqual(failing.status, 1)
        XCTAssertTrue(failing.stderr.hasPrefix("shareflow: stdin:2: boom"), failing.stderr)
        let devStdin = try CLI.run(["run", "--store", ":memory:", "/dev/stdin"], stdin: "print('dev')")
        XCTAssertEqual(devStdin.stdout, "dev\n", devStdin.stderr)
        let substituted = try CLI.runTool("bash", ["-c", "\(CLI.binary) run --store :memory: <(echo 'print(\"fifo\")')"])
        XCTAssertEqual(substituted.stdout, "fifo\n", substituted.stderr)
        let chunks = try CLI.run(["run", "--store", ":memory:", "-e", "x = 20", "-e", "print(x * 2)"])
        XCTAssertEqual(chunks.stdout, "40\n", chunks.stderr)
        let script = dir.appendingPathComponent("s.lua")
        try CLI.write("y = (x or 0) + 1", to: script)
        let console = try CLI.run(["run", "--store", ":memory:", "-e", "x = 41", "-i", script.path], stdin: "print(y)\nreturn y * 2\n")
        XCTAssertEqual(console.status, 0, console.stderr)
        XCTAssertTrue(console.stdout.contains("42") && console.stdout.contains("84"), console.stdout)
        XCTAssertNotEqual(try CLI.run(["run", "--store", ":memory:", "-i", "--dry-run", script.path]).status, 0)
        for odd in [".", "a", "-x-"] {
            let r = try CLI.run(["run", "--store", ":memory:", "--", odd], cwd: dir)
            XCTAssertEqual(r.status, 1, "\(odd): \(r.stderr)")
            XCTAssertTrue(r.stderr.hasPrefix("shareflow: cannot open \(odd) ("), r.stderr)
        }
        let folder = try CLI.run(["run", "--store", ":memory:", dir.path])
        XCTAssertTrue(folder.stderr.contains("Is a directory"), folder.stderr)
        // `test .` and `test a` read the folder as given.
        let tests = try CLI.run(["test", "--store", ":memory:", "."], cwd: dir)
        XCTAssertEqual(tests.status, 1)
        XCTAssertTrue(tests.stderr.contains("no tests found in ."), tests.stderr)
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
        try Tools.sqlite(
            store.path,
            "update shareflow_meta set value='99' where key='schemaVersion'; pragma wal_checkpoint(truncate); pragma journal_mode=delete;"
        )
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
        for (who, message) in [
            ("nobody@x.com", "no account has this email address in store :memory:"),
            ("not an email@", "is not a valid email address (R1)"),
            ("_nope", "no account has this userRecordID"),
        ] {
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
        let ok = dir.appendingPathComponent("ok.lua")
        let bad = dir.appendingPathComponent("bad.lua")
        try CLI.write("print('hello')", to: ok)
        try CLI.write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "a@example.com" }
            sf.accounts.create{ email = "a@example.com" }
            """,
            to: bad
        )
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

    /// A script's `__gc` finalizers run while the run's host is alive, whichever way the script
    /// ends: on a failed script they ran from ScriptHost.deinit, where a finalizer calling
    /// sf.plugins (bound through an unowned reference to the host) crashed the process.
    func testFinalizersOfAFailedScriptCanUseTheModule() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("gc_fails.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            setmetatable({}, { __gc = function()
              io.stderr:write("finalizer saw plugins: ", type(sf.plugins.list()), "\\n")
            end })
            error("the script fails")
            """,
            to: script
        )
        for options in [[], ["--dry-run"]] {
            let r = try CLI.run(["run", "--store", ":memory:"] + options + [script.path])
            XCTAssertEqual(r.status, 1, "\(options): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("the script fails"), r.stderr)
            XCTAssertTrue(r.stderr.contains("finalizer saw plugins: table"), r.stderr)
            XCTAssertFalse(r.stderr.contains("Fatal error"), r.stderr)
        }
    }

    /// `run --dry-run` writes nothing, the script's finalizers included: they run inside the
    /// rolled-back transaction (closed after it, a `__gc`'s save reached the store) and what
    /// they would have written is in the report.
    func testDryRunFinalizersWriteNothing() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = dir.appendingPathComponent("store.sqlite").path
        let setup = dir.appendingPathComponent("setup.lua")
        let gc = dir.appendingPathComponent("gc.lua")
        let check = dir.appendingPathComponent("check.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "a@example.com" }
            sf.as("a@example.com"):container("iCloud.t").privateCloudDatabase:saveZone("Z")
            """,
            to: setup
        )
        try CLI.write(
            """
            local sf = require("shareflow")
            local db = sf.as("a@example.com"):container("iCloud.t").privateCloudDatabase
            setmetatable({}, { __gc = function() db:saveZone("FromFinalizer") end })
            if arg[1] == "fail" then error("the script fails") end
            """,
            to: gc
        )
        try CLI.write(
            """
            local sf = require("shareflow")
            local zones = sf.as("a@example.com"):container("iCloud.t").privateCloudDatabase:fetchAllRecordZones()
            local names = {}
            for _, z in ipairs(zones) do names[#names + 1] = z.zoneID.zoneName end
            table.sort(names)
            print(table.concat(names, ","))
            """,
            to: check
        )
        XCTAssertEqual(try CLI.run(["run", "--store", store, setup.path]).status, 0)
        let dry = try CLI.run(["run", "--dry-run", "--json", "--store", store, gc.path])
        XCTAssertEqual(dry.status, 0, dry.stderr)
        XCTAssertTrue(dry.stdout.contains("\"changes\":1"), dry.stdout)
        let failed = try CLI.run(["run", "--dry-run", "--store", store, gc.path, "fail"])
        XCTAssertEqual(failed.status, 1, failed.stderr)
        let after = try CLI.run(["run", "--store", store, check.path])
        XCTAssertEqual(after.status, 0, after.stderr)
        XCTAssertFalse(after.stdout.contains("FromFinalizer"), "a dry run's finalizer wrote to the store: \(after.stdout)")
        // A real run's finalizer still saves.
        XCTAssertEqual(try CLI.run(["run", "--store", store, gc.path]).status, 0)
        XCTAssertTrue(try CLI.run(["run", "--store", store, check.path]).stdout.contains("FromFinalizer"))
    }

    /// A finalizer run while the state closes may use what it holds, though the functions of
    /// that value's class were made after the finalizer's table and so are finalized before it
    /// (lua_close finalizes newest first): their objects stay until the close is over. And
    /// closing stays bounded: a close a finalizer causes (a plugin unloaded) keeps the outer
    /// close's 2 s, and `os.exit(code, true)` closes the same way (a crash, a hang and a leak
    /// before, each found by an attack on the close ledger).
    func testFinalizersWhileAStateClosesUseWhatTheyHoldAndStayBounded() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = dir.appendingPathComponent("store.sqlite").path
        let late = dir.appendingPathComponent("late.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "a@example.com" }
            local db = sf.as("a@example.com"):container("iCloud.t").privateCloudDatabase
            local r, z
            setmetatable({}, { __gc = function()
              print("record", r.recordName, tostring(z) ~= nil, pcall(function() return r.recordType end))
              print("zone", db:saveZone("G").zoneID.zoneName)
            end })
            r = sf.Record{ recordType = "T", recordName = "late" }
            z = db:saveZone("C")
            -- A block the state's registry holds: its reference must not be let go after the
            -- state is freed (os.exit gives nothing back: the process ends).
            local op = sf.AcceptSharesOperation{}
            op.perShareResultBlock = function() end
            if arg[1] == "exit" then os.exit(3, true) end
            """,
            to: late
        )
        let run = try CLI.run(["run", "--store", store, late.path])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("record\tlate\ttrue\ttrue\tT"), run.stdout + run.stderr)
        XCTAssertTrue(run.stdout.contains("zone\tG"), run.stdout + run.stderr)
        // os.exit(code, true): the finalizers run, the process ends with the code.
        // exit() from inside the script's call: what the Swift frames under it hold is never
        // unwound, which LeakSanitizer (make sanitize) would count; its address checks stay on.
        let asan = ProcessInfo.processInfo.environment["ASAN_OPTIONS"].map { $0 + ":detect_leaks=0" } ?? "detect_leaks=0"
        let exited = try CLI.run(
            ["run", "--store", dir.appendingPathComponent("exit.sqlite").path, late.path, "exit"],
            environment: ["ASAN_OPTIONS": asan]
        )
        XCTAssertEqual(exited.status, 3, exited.stderr)
        XCTAssertTrue(exited.stdout.contains("zone\tG"), exited.stdout + exited.stderr)

        // A finalizer that never ends: the process says so and ends (70), when a plugin's
        // state was closed from it first and when the script asked os.exit to close.
        let loops = dir.appendingPathComponent("loops.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            if arg[1] == "unload" then sf.plugins.load("audit-log", {}) end
            setmetatable({}, { __gc = function()
              if arg[1] == "unload" then sf.plugins.unload("audit-log") end
              while true do end
            end })
            if arg[1] == "exit" then os.exit(0, true) end
            """,
            to: loops
        )
        for how in ["unload", "exit", "plain"] {
            let looped = try CLI.run(
                [
                    "run", "--store", dir.appendingPathComponent("\(how).sqlite").path, "--plugins", CLI.root.appendingPathComponent("Plugins").path,
                    loops.path, how,
                ],
                timeout: 300
            )
            XCTAssertEqual(looped.status, 70, "\(how): \(looped.stderr)")
            XCTAssertTrue(looped.stderr.contains("finalizer was still running after 2 s"), "\(how): \(looped.stderr)")
        }
    }

    /// SPEC §18 P3: on SQLite too the decision log is in the store, so a later process reads
    /// the decisions an earlier one made; a dry run's decisions were never made and stay out.
    func testTheDecisionLogIsKeptInTheStoreAndADryRunAddsNothing() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("shareflow.config.lua")
        let count = dir.appendingPathComponent("count.lua")
        try CLI.write(#"return { plugins = { ["domain-allowlist"] = { domains = { "example.com" } } } }"#, to: config)
        try CLI.write(
            """
            local sf = require("shareflow")
            local accepts = 0
            for _, d in ipairs(sf.decisions{ limit = 100 }) do
              if d.point == "share.accept" and d.allow then accepts = accepts + 1 end
            end
            print("accepts " .. accepts)
            """,
            to: count
        )
        let store = dir.appendingPathComponent("store.sqlite").path
        let made = try CLI.run(["run", "--store", store, "--config", config.path, "Scripts/examples/audit_access.lua"])
        XCTAssertEqual(made.status, 0, made.stderr)
        let read = try CLI.run(["run", "--store", store, "--config", config.path, count.path])
        XCTAssertEqual(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "accepts 2", read.stderr)
        let dryStore = dir.appendingPathComponent("dry.sqlite").path
        let dry = try CLI.run(["run", "--dry-run", "--store", dryStore, "--config", config.path, "Scripts/examples/audit_access.lua"])
        XCTAssertEqual(dry.status, 0, dry.stderr)
        let after = try CLI.run(["run", "--store", dryStore, "--config", config.path, count.path])
        XCTAssertEqual(after.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "accepts 0", after.stderr)
    }

    /// A `run` whose script fails after a denial keeps the denial (the store's last act at
    /// any exit writes the log), each of several times.
    func testARunThatFailsKeepsTheDecisionThatFailedIt() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let deny = dir.appendingPathComponent("deny.lua")
        let count = dir.appendingPathComponent("count.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            sf.policy("share.save", function() return sf.deny("nope") end)
            local who = "u" .. arg[1] .. "@example.com"
            sf.accounts.create{ email = who }
            local db = sf.as(who):container("iCloud.t").privateCloudDatabase
            local zone = db:saveZone("Z")
            local r = sf.Record{ recordType = "T", recordName = "r", zone = zone }
            local _, err = db:modifyRecords{ save = { r, sf.Share{ rootRecord = r } } }
            assert(err, "the share was denied")
            error("the script fails after a denial")
            """,
            to: deny
        )
        try CLI.write(
            """
            local sf = require("shareflow")
            local denied = 0
            for _, d in ipairs(sf.decisions{ limit = 100 }) do if not d.allow then denied = denied + 1 end end
            print("denied " .. denied)
            """,
            to: count
        )
        let store = dir.appendingPathComponent("store.sqlite").path
        for n in 1...3 {
            let failed = try CLI.run(["run", "--store", store, deny.path, String(n)])
            XCTAssertEqual(failed.status, 1, failed.stderr)
            XCTAssertTrue(failed.stderr.contains("the script fails after a denial"), failed.stderr)
            let read = try CLI.run(["run", "--store", store, count.path])
            XCTAssertEqual(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "denied \(n)", read.stderr)
        }
    }
}
