import Foundation
import ShareFlowTestKit
import XCTest

/// `shareflow repl` as a person uses it: on a real terminal (tmux) and with piped input.
final class ConsoleTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try CLI.temporaryDirectory()
    }

    func console(_ extra: String = "") throws -> Tmux {
        let history = dir.appendingPathComponent("history").path
        let t = try Tmux(command: "cd \(CLI.root.path) && \(CLI.binary) repl --store :memory: --history \(history) \(extra)")
        try t.waitFor("shareflow> ")
        return t
    }

    func testExpressionsStatementsAndContinuation() throws {
        let t = try console()
        try t.line("1 + 1")
        try t.waitFor("\n2\n")
        try t.line("x = 5")
        try t.line("x * 2")
        try t.waitFor("\n10\n")
        try t.line("local hidden = 1")
        try t.line("hidden")
        try t.waitFor("hidden\nnil\n")  // each entry is its own chunk, as in lua.c
        try t.line("function g(a)")
        try t.waitFor(">> ")
        try t.line("return a * 3")
        try t.line("end")
        try t.line("g(7)")
        try t.waitFor("\n21\n")
        try t.line("s = [[multi")
        try t.line("line]]")
        try t.line("#s")
        try t.waitFor("\n10\n")
        try t.line("t = { 1, 2,")
        try t.line("  k = { deep = true } }")
        try t.line("t")
        try t.waitFor("{ 1, 2, k = { deep = true } }")
        try t.line("c = {} c.me = c")
        try t.line("c")
        try t.waitFor("{ me = <cycle> }")
    }

    func testLineEditingKeys() throws {
        let t = try console()
        try t.type("3 + 4")
        try t.press("Left", "Left", "Left", "Left", "BSpace")
        try t.type("1")
        try t.press("Home")
        try t.type("(")
        try t.press("End")
        try t.type(") * 10")
        try t.press("Enter")
        try t.waitFor("\n50\n")
        try t.type("2 * 3")
        try t.press("C-a")
        try t.type("(")
        try t.press("C-e")
        try t.type(") + 100")
        try t.press("Enter")
        try t.waitFor("\n106\n")
        try t.type("garbage here")
        try t.press("C-u")
        try t.line("7 * 7")
        try t.waitFor("\n49\n")
        try t.type("1 + 2 + junk")
        try t.press("C-w")
        try t.line("40")
        try t.waitFor("\n43\n")
    }

    func testTabCompletesGlobalsFieldsAndMethods() throws {
        let t = try console()
        try t.type("shareflow.acc")
        try t.press("Tab")
        try t.waitFor("shareflow> shareflow.accounts")
        try t.type(".list()")
        try t.press("Enter")
        try t.waitFor("{}")
        try t.line("alice = sf.accounts.create{ email = 'alice@example.com' }")
        try t.line("c = sf.as(alice):container('X') z = c.privateCloudDatabase:saveZone('Z') r = sf.Record{ recordType = 'T', zone = z }")
        try t.line("share = sf.Share{ rootRecord = r }")
        try t.type("share:add")
        try t.press("Tab")
        try t.waitFor("share:addParticipant(")
        try t.press("C-u")
        try t.type("share.ti")
        try t.press("Tab")
        try t.waitFor("share.title")
        try t.press("C-u")
        try t.type("sf.Fetch")
        try t.press("Tab", "Tab")
        try t.waitFor("sf.FetchRecordsOperation  sf.FetchShareMetadataOperation  sf.FetchShareParticipantsOperation")
    }

    func testCtrlCInterruptsAndKeepsState() throws {
        let t = try console()
        try t.line("kept = 42")
        try t.line("while true do end")
        usleep(500_000)
        try t.press("C-c")
        try t.waitFor("interrupted")
        try t.line("kept")
        try t.waitFor("\n42\n")
        try t.line("co = coroutine.wrap(function() while true do end end) co()")
        usleep(300_000)
        try t.press("C-c")
        try t.waitFor("interrupted", count: 2)
        try t.line("kept + 1")
        try t.waitFor("\n43\n")
        try t.press("C-d")
        try t.waitFor("shareflow> ^D\n")  // libedit echoes the EOF key, as its other programs do
        XCTAssertFalse(try t.screen().contains("^Cinterrupted"), "a space after the echoed ^C")
    }

    func testHistoryIsKeptAcrossSessions() throws {
        do {
            let t = try console()
            try t.line("remembered = 'yes'")
            try t.press("C-d")
            usleep(300_000)
        }
        let t = try console()
        try t.press("Up")
        try t.waitFor("shareflow> remembered = 'yes'")
        let history = try String(contentsOf: dir.appendingPathComponent("history"), encoding: .utf8)
        XCTAssertTrue(history.contains("remembered = 'yes'\n"))
    }

    func testCommandsAndPrettyPrintedObjects() throws {
        let t = try console(
            "--plugins \(CLI.root.appendingPathComponent("Plugins").path) --config \(CLI.root.appendingPathComponent("Scripts/demo.config.lua").path)"
        )
        try t.line(":help")
        try t.waitFor(":decisions [N]")
        try t.line("sf.accounts.create{ email = 'alice@example.com' } sf.accounts.create{ email = 'bob@example.com' }")
        try t.line(":as alice@example.com")
        try t.waitFor("shareflow(alice@example.com)> ")
        try t.line(":events")
        try t.waitFor("printing events")
        try t.line("c = sf.container('X') z = c.privateCloudDatabase:saveZone('Z') r = sf.Record{ recordType = 'T', zone = z }")
        try t.line("s = sf.Share{ rootRecord = r, title = 'Plans' } s:addParticipant(c:fetchShareParticipants{ 'bob@example.com' }[1])")
        try t.waitFor("· participant.fetched by alice@example.com")
        try t.line("c.privateCloudDatabase:modifyRecords{ save = { r, s } }")
        try t.waitFor("· share.saved by alice@example.com share \"Plans\"")
        try t.line(":events")
        try t.waitFor("events off")
        try t.line("s")
        let screen = try t.waitFor("participants (2):")
        XCTAssertTrue(screen.contains("Share \"Plans\"  https://shareflow.invalid/share/"), screen)
        XCTAssertTrue(screen.contains("bob@example.com    privateUser   readOnly  pending"), screen)
        try t.line(":as bob@example.com")
        try t.line("bc = sf.container('X') m = bc:fetchShareMetadata{ s.url }[s.url] bc:acceptShares{ m }")
        try t.line(":decisions")
        try t.waitFor("share.accept allow by domain-allowlist/accept")
        // A count below 1 (once a crash: a suffix of negative length) or not a number: one line.
        try t.line(":decisions -1")
        try t.waitFor(":decisions takes a count of 1 or more, not '-1'")
        try t.line(":decisions many")
        try t.waitFor(":decisions takes a count of 1 or more, not 'many'")
        try t.line(":plugins")
        try t.waitFor("● audit-log")
        try t.line(":reload")
        try t.waitFor("reloaded: audit-log, domain-allowlist, expiring-invitations")
        try t.line("#sf.accounts.list()")
        try t.waitFor("\n2\n")
        try t.line(":quit")
        try t.waitFor("shareflow(bob@example.com)> :quit\n")
    }

    func testPipedInputIsAScriptedConsole() throws {
        var r = try CLI.run(
            ["repl", "--store", ":memory:"],
            stdin: """
                1 + 1
                sf.accounts.create{ email = "a@example.com" }
                function double(x)
                  return 2 * x
                end
                double(21)
                "text", 3.5, nil
                :as a@example.com
                """
        )
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("2\nAccount(a@example.com, _"), r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("\n42\ntext\t3.5\tnil\nacting as a@example.com\n"), r.stdout)
        XCTAssertFalse(r.stdout.contains("shareflow>"), "no prompts when piped")
        r = try CLI.run(["repl", "--store", ":memory:"], stdin: "x = 1\nerror('bad thing')\nx + 1\n")
        XCTAssertEqual(r.status, 1, "a failed statement makes the exit code non-zero")
        XCTAssertEqual(r.stdout, "2\n", "later statements still run")
        XCTAssertTrue(r.stderr.contains("stdin:2: bad thing"), "the input's line: \(r.stderr)")
        r = try CLI.run(["repl", "--store", ":memory:"], stdin: ":nonsense\n")
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("unknown command ':nonsense'"), r.stderr)
    }

    /// libedit: Ctrl-R searches history backwards; editing stays whole on multi-byte characters.
    func testLibeditHistorySearchAndUTF8Editing() throws {
        let t = try console()
        try t.line("greeting = 'olá'")
        try t.waitFor("shareflow> ", count: 2)
        try t.line("other = 1")
        try t.waitFor("shareflow> ", count: 3)
        try t.press("C-r")
        try t.type("greet")
        try t.press("Enter")
        try t.press("Enter")
        try t.line("greeting")
        try t.waitFor("\nolá\n", count: 1)
        try t.type("s = 'ñandú'")
        try t.press("Left", "BSpace")  // deletes the ú before the quote, both its bytes
        try t.press("Enter")
        try t.line("#s")
        try t.waitFor("\n5\n")  // ñ (2 bytes) a n d: 5 bytes
    }

    /// Tab after an index (`ps[1].userIdentity.`) and on a record's fields.
    func testCompletionAfterIndexesAndOnRecordFields() throws {
        let t = try console()
        // Each line once the prompt is back: keys typed while a statement runs reach the
        // terminal, not the editor (slow under a sanitizer).
        try t.line("alice = sf.accounts.create{ email = 'alice@example.com' }")
        try t.waitFor("shareflow> ", count: 2)
        try t.line("c = sf.as(alice):container('X') ps = c:fetchShareParticipants{ 'bob@example.com' }")
        try t.waitFor("shareflow> ", count: 3)
        try t.type("ps[1].userIdentity.look")
        try t.press("Tab")
        try t.waitFor("ps[1].userIdentity.lookupInfo")
        try t.press("C-u")
        try t.line("r = sf.Record{ recordType = 'T', fields = { title = 'x', tally = 2 } }")
        try t.waitFor("shareflow> ", count: 4)
        try t.type("r.fields.ti")
        try t.press("Tab")
        try t.waitFor("r.fields.title")
        try t.press("C-u")
        try t.type("r.fields.t")
        try t.press("Tab", "Tab")
        try t.waitFor("r.fields.tally  r.fields.title")
    }

    /// History goes to $HOME (not the password file's home), or $XDG_STATE_HOME when set.
    func testHistoryLivesInHomeOrXDGStateHome() throws {
        for (env, file) in [
            ("HOME=\(dir.path)/home", "home/.shareflow_history"),
            ("XDG_STATE_HOME=\(dir.path)/state", "state/shareflow/history"),
        ] {
            let t = try Tmux(command: "cd \(CLI.root.path) && mkdir -p \(dir.path)/home && \(env) \(CLI.binary) repl --store :memory:")
            try t.waitFor("shareflow> ")
            try t.line("noted = 1")
            try t.waitFor("shareflow> ", count: 2)
            try t.press("C-d")
            usleep(300_000)
            let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
            XCTAssertTrue(text.contains("noted = 1\n"), "\(file): \(text)")
        }
    }

    /// Piped with --json: one object per statement or command, with its input line.
    func testPipedJSON() throws {
        let r = try CLI.run(["repl", "--store", ":memory:", "--json"], stdin: "1 + 1\n\nerror('no')\n:as nobody@x.com\n")
        XCTAssertEqual(r.status, 1)
        let lines = r.stdout.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        XCTAssertEqual(lines.count, 3, r.stdout)
        XCTAssertEqual(lines[0]?["output"] as? [String], ["2"])
        XCTAssertEqual(lines[1]?["line"] as? Int, 3)
        XCTAssertTrue((lines[1]?["error"] as? String)?.hasPrefix("stdin:3: no") ?? false, r.stdout)
        XCTAssertEqual(lines[2]?["error"] as? String, "no account for 'nobody@x.com'")
    }

    /// Piped, an error names the line of the input, not of the statement.
    func testPipedErrorsNameTheInputLine() throws {
        let r = try CLI.run(["repl", "--store", ":memory:"], stdin: "x = 1\n\nfunction f()\n  return nil + 1\nend\nf()\n")
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.hasPrefix("stdin:4: attempt to perform arithmetic on a nil value"), r.stderr)
    }

    func testDryRunLeavesTheStoreByteForByteAndReportsChanges() throws {
        let store = dir.appendingPathComponent("s.sqlite").path
        try CLI.write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "alice@example.com" }
            sf.accounts.create{ email = "bob@example.com" }
            local c = sf.as("alice@example.com"):container("X")
            local zone = c.privateCloudDatabase:saveZone("Trips")
            local r = sf.Record{ recordType = "Trip", recordName = "lisbon", zone = zone, fields = { title = "Lisbon" } }
            local s = sf.Share{ rootRecord = r, title = "Lisbon" }
            s:addParticipant(c:fetchShareParticipants{ "bob@example.com" }[1])
            c.privateCloudDatabase:modifyRecords{ save = { r, s } }
            io.open(arg[1], "w"):write(s.url):close()
            """,
            to: dir.appendingPathComponent("setup.lua")
        )
        try CLI.write(
            """
            local sf = require("shareflow")
            local url = io.open(arg[1]):read("a")
            sf.accounts.create{ email = "carol@example.com" }
            local bc = sf.as("bob@example.com"):container("X")
            bc:acceptShares{ bc:fetchShareMetadata{ url }[url] }
            local c = sf.as("alice@example.com"):container("X")
            local zone = c.privateCloudDatabase:saveZone("Trips")
            c.privateCloudDatabase:modifyRecords{ delete = { { recordName = "lisbon", zoneID = zone.zoneID } } }
            print("script ran")
            """,
            to: dir.appendingPathComponent("change.lua")
        )
        let url = dir.appendingPathComponent("url").path
        XCTAssertEqual(try CLI.run(["run", "--store", store, "setup.lua", url], cwd: dir).status, 0)
        func bytes() throws -> [String: Data] {
            var files: [String: Data] = [:]
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: store + suffix) {
                files[suffix] = try Data(contentsOf: URL(fileURLWithPath: store + suffix))
            }
            return files
        }
        let before = try bytes()
        let r = try CLI.run(["run", "--store", store, "--dry-run", "change.lua", url], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try bytes(), before, "the store is byte-for-byte as it was")
        XCTAssertTrue(r.stdout.hasPrefix("script ran\ndry run: nothing was written to \(store). The script would have made "), r.stdout)
        XCTAssertTrue(r.stdout.contains("changes (+1 account, -1 record, -1 share, -2 participants):"), r.stdout)
        for line in [
            "  accounts:\n    + account carol@example.com",
            "  zone Trips of alice@example.com in X:\n    - record Trip lisbon {title=\"Lisbon\"}",
            "\n    - share \"Lisbon\" root lisbon, publicPermission none\n    - participant alice@example.com: owner readWrite accepted\n    - participant bob@example.com: privateUser readOnly pending\n",
        ] {
            XCTAssertTrue(r.stdout.contains(line), "missing \(line):\n\(r.stdout)")
        }
        // The same as JSON; a dry run that fails leaves the store as it was and nothing behind.
        let json = try CLI.run(["run", "--store", store, "--dry-run", "--json", "change.lua", url], cwd: dir)
        let object = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data((json.stdout.split(separator: "\n").last ?? "").utf8)) as? [String: Any]
        )
        let dryRun = try XCTUnwrap(object["dryRun"] as? [String: Any])
        XCTAssertEqual(dryRun["changes"] as? Int, 5)
        XCTAssertEqual((dryRun["counts"] as? [String: [String: Int]])?["participants"], ["-": 2])
        XCTAssertEqual(try bytes(), before)
        try CLI.write(
            "require('shareflow').accounts.create{ email = 'dave@example.com' }\nerror('halfway')",
            to: dir.appendingPathComponent("fails.lua")
        )
        let temp = try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory()).filter { $0.hasPrefix("shareflow-dry-run") }
        let failed = try CLI.run(["run", "--store", store, "--dry-run", "--json", "fails.lua"], cwd: dir)
        XCTAssertEqual(failed.status, 1)
        XCTAssertTrue(failed.stdout.contains("\"code\":\"scriptError\""), failed.stdout)
        XCTAssertTrue(failed.stdout.contains("fails.lua:2: halfway"), failed.stdout)
        XCTAssertEqual(try bytes(), before, "a failed dry run changes nothing")
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory()).filter { $0.hasPrefix("shareflow-dry-run") },
            temp,
            "nothing left in TMPDIR"
        )
        // And a real run does change it.
        XCTAssertEqual(try CLI.run(["run", "--store", store, "change.lua", url], cwd: dir).status, 0)
        XCTAssertNotEqual(try bytes(), before)
    }
}
