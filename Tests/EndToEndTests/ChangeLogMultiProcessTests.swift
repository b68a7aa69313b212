import Foundation
import ShareFlowTestKit
import XCTest

/// SPEC §14 with several processes on one store file: `shareflow run` writers and a
/// `shareflow serve` taking HTTP writes at once (the zone counter is taken in memory per
/// transaction and written just before COMMIT, schema v9): no position is handed out twice,
/// the counter is at or past every position, the store checks healthy, and readers following
/// tokens during the writes (in Lua and over HTTP) end equal to a fetch from the start.
final class ChangeLogMultiProcessTests: ServerTestCase {
    var fixtures: URL { CLI.root.appendingPathComponent("Tests/EndToEndTests/Fixtures") }

    /// Starts `shareflow run --store … script args…`; its output goes to files in `dir`.
    func startRun(_ script: String, _ args: [String], label: String) throws -> (Process, URL, URL) {
        let out = dir.appendingPathComponent("\(label).out")
        let err = dir.appendingPathComponent("\(label).err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.binary)
        process.arguments = ["run", "--store", store, fixtures.appendingPathComponent(script).path] + args
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        process.standardInput = FileHandle.nullDevice
        process.currentDirectoryURL = CLI.root
        try process.run()
        return (process, out, err)
    }

    /// Waits for `process` (killed after `timeout` seconds).
    func wait(_ process: Process, timeout: TimeInterval = 60) {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Waits for each of `writers` (as `startRun` gives them): each must exit 0.
    func waitForAll(_ writers: [(Process, URL, URL)], file: StaticString = #filePath, line: UInt = #line) {
        for (process, _, err) in writers {
            wait(process)
            XCTAssertEqual(process.terminationStatus, 0, (try? String(contentsOf: err, encoding: .utf8)) ?? "", file: file, line: line)
        }
    }

    /// Tells mp_read.lua's `reader` (as `startRun` gives it) to stop, by making `doneFile`,
    /// and waits for it: it must exit 0, having met no mismatch. What it printed.
    func stopReader(_ reader: (Process, URL, URL), doneFile: URL, file: StaticString = #filePath, line: UInt = #line) -> String {
        _ = FileManager.default.createFile(atPath: doneFile.path, contents: nil)
        wait(reader.0)
        let said = (try? String(contentsOf: reader.1, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOf: reader.2, encoding: .utf8)) ?? ""
        XCTAssertEqual(reader.0.terminationStatus, 0, err, file: file, line: line)
        XCTAssertTrue(said.contains("mismatches=0"), said + err, file: file, line: line)
        return said
    }

    /// Rows of `sql` on the store, read by Python's sqlite3 (another program), one a line.
    static func query(_ store: String, _ sql: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c",
            """
            import sqlite3,sys
            c=sqlite3.connect(sys.argv[1])
            for row in c.execute(sys.argv[2]): print(*row)
            """, store, sql,
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Loads the tests' accounts, zones and shares (mp_setup.lua) into the store.
    func loadSetup(file: StaticString = #filePath, line: UInt = #line) throws {
        let setup = try CLI.run(["run", "--store", store, fixtures.appendingPathComponent("mp_setup.lua").path])
        XCTAssertEqual(setup.status, 0, setup.stderr, file: file, line: line)
    }

    /// The change log's invariants, then `store check`'s: the store is whole.
    func checkStoreWhole(file: StaticString = #filePath, line: UInt = #line) throws {
        try Self.checkLogInvariants(store, file: file, line: line)
        let check = try CLI.run(["store", "check", "--store", store])
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr, file: file, line: line)
    }

    /// The change log's invariants, read from the file: each position once per zone (records
    /// and tombstones together; each viewer's), the counter at or past every position.
    static func checkLogInvariants(_ store: String, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(
            try query(
                store,
                """
                SELECT zoneID, seq, COUNT(*) FROM (SELECT zoneID, seq FROM record WHERE seq > 0 UNION ALL SELECT zoneID, seq FROM zone_change)
                GROUP BY 1, 2 HAVING COUNT(*) > 1
                """
            ),
            "",
            "a position of the owner's feed taken twice",
            file: file,
            line: line
        )
        XCTAssertEqual(
            try query(store, "SELECT zoneID, viewerID, seq, COUNT(*) FROM view_change GROUP BY 1, 2, 3 HAVING COUNT(*) > 1"),
            "",
            "a position of a viewer's feed taken twice",
            file: file,
            line: line
        )
        XCTAssertEqual(
            try query(
                store,
                """
                SELECT z.id, z.changeSeq, MAX(COALESCE((SELECT MAX(seq) FROM record WHERE zoneID = z.id), 0),
                    COALESCE((SELECT MAX(seq) FROM zone_change WHERE zoneID = z.id), 0), COALESCE((SELECT MAX(seq) FROM view_change WHERE zoneID = z.id), 0)) m
                FROM zone z WHERE z.changeSeq < m
                """
            ),
            "",
            "a zone's counter behind its positions",
            file: file,
            line: line
        )
        XCTAssertEqual(
            try query(store, "SELECT zoneID, name FROM zone_change WHERE deleted = 0"),
            "",
            "a live owner entry in zone_change (v9: records are)",
            file: file,
            line: line
        )
    }

    /// Follows the zone over HTTP (changes/zone) from `token`, `limit` records a page; the
    /// records by name (their tags; deleted ones removed) and the last token.
    func follow(_ scope: String, _ records: inout [String: String], token: String?, limit: Int, query q: String? = nil) throws -> String? {
        var token = token
        var more = true
        var pages = 0
        while more {
            pages += 1
            XCTAssertLessThan(pages, 10_000)
            var zone: [String: Any] = ["zoneID": scope == "private" ? ["zoneName": "Mix"] : ["zoneName": "Mix", "ownerRecordName": aliceName]]
            if let token { zone["syncToken"] = token }
            let body = String(decoding: try JSONSerialization.data(withJSONObject: ["zones": [zone], "resultsLimit": limit]), as: UTF8.self)
            let r = try call("POST", db + "/\(scope)/changes/zone", query: q, body: body)
            guard r.0 == 200, let z = (r.1["zones"] as? [[String: Any]])?.first, let next = z["syncToken"] as? String else {
                XCTFail("changes/zone: \(r.0) \(r.1)")
                return token
            }
            for rec in z["records"] as? [[String: Any]] ?? [] {
                let name = rec["recordName"] as? String ?? "?"
                if rec["deleted"] as? Bool == true { records[name] = nil } else { records[name] = rec["recordChangeTag"] as? String ?? "" }
            }
            token = next
            more = z["moreComing"] as? Bool ?? false
        }
        return token
    }

    var aliceName = ""

    func testWritersInSeveralProcessesAndAServerKeepTheLogWhole() throws {
        try loadSetup()
        let r = try call("GET", db + "/public/users/caller")
        aliceName = (r.1["users"] as? [[String: Any]])?.first?["userRecordName"] as? String ?? ""
        XCTAssertFalse(aliceName.isEmpty, "\(r.1)")
        let bobQuery = "ckAPIToken=\(api)&ckWebAuthToken=\(try token("bob@example.com"))"

        let doneFile = dir.appendingPathComponent("writers-done")
        let reader = try startRun("mp_read.lua", [doneFile.path], label: "reader")
        var writers: [(Process, URL, URL)] = []
        for seed in 1...3 { writers.append(try startRun("mp_write.lua", [String(seed), "150"], label: "writer\(seed)")) }

        // Over HTTP meanwhile: writes from another thread (some deleting a name and saving
        // it in one request), and both feeds followed here, a record or two a page.
        var owner: [String: String] = [:]
        var viewer: [String: String] = [:]
        var ownerToken: String?
        var viewerToken: String?
        let httpDone = DispatchSemaphore(value: 0)
        let statuses = Gathered<Int>()
        let base = self.base
        let api = self.api
        let web = self.web
        let db = self.db
        let dir = self.dir!
        let writersDone = Gathered<Int>()
        Thread.detachNewThread {
            var step = 0
            while step < 30 || (writersDone.all.isEmpty && step < 150) {
                step += 1
                let n = "n\(step % 8 + 1)"
                let h = "h\(step % 5)"
                func op(_ type: String, _ name: String, _ value: String) -> String {
                    #"{"operationType":"\#(type)","record":{"recordName":"\#(name)","recordType":"Item","fields":{"w":{"value":"\#(value)"}}}}"#
                }
                let ops =
                    step % 3 == 0
                    ? [op("forceDelete", n, ""), op("forceReplace", n, "again\(step)")]
                    : [op("forceUpdate", h, "s\(step)"), op("forceDelete", "h\((step + 2) % 5)", ""), op("forceUpdate", n, "x\(step)")]
                let r = try? Tools.curl(
                    "POST",
                    base + db + "/private/records/modify?ckAPIToken=\(api)&ckWebAuthToken=\(web)",
                    body: #"{"zoneID":{"zoneName":"Mix"},"atomic":false,"operations":[\#(ops.joined(separator: ","))]}"#,
                    in: dir
                )
                statuses.add(r?.0 ?? 0)
            }
            httpDone.signal()
        }
        var rounds = 0
        while httpDone.wait(timeout: .now()) == .timedOut {
            rounds += 1
            if writersDone.all.isEmpty && !writers.contains(where: { $0.0.isRunning }) { writersDone.add(1) }
            ownerToken = try follow("private", &owner, token: ownerToken, limit: 3)
            viewerToken = try follow("shared", &viewer, token: viewerToken, limit: 4, query: bobQuery)
        }
        XCTAssertEqual(statuses.all.filter { $0 != 200 }, [], "every HTTP write answered 200")
        let step = statuses.all.count
        waitForAll(writers)
        let said = stopReader(reader, doneFile: doneFile)

        print(
            "HTTP writes: \(step), HTTP follow rounds: \(rounds); Lua reader: \(said)",
            try ChangeLogMultiProcessTests.query(store, "SELECT MAX(changeSeq) FROM zone")
        )
        // The HTTP followers end where a fetch from the start does.
        ownerToken = try follow("private", &owner, token: ownerToken, limit: 3)
        viewerToken = try follow("shared", &viewer, token: viewerToken, limit: 4, query: bobQuery)
        var freshOwner: [String: String] = [:]
        var freshViewer: [String: String] = [:]
        let freshOwnerToken = try follow("private", &freshOwner, token: nil, limit: 200)
        let freshViewerToken = try follow("shared", &freshViewer, token: nil, limit: 200, query: bobQuery)
        XCTAssertEqual(owner, freshOwner)
        XCTAssertEqual(viewer, freshViewer)
        XCTAssertEqual(ownerToken, freshOwnerToken)
        XCTAssertEqual(viewerToken, freshViewerToken)

        try checkStoreWhole()
    }

    /// kill -9 of writers mid-batch (one writing batches of 150 items, another of 3, a
    /// third left running), twice: every token printed before still reads, a record saved
    /// after is given from each of them (no position below one handed out is reused), and the
    /// store checks healthy.
    func testWritersKilledMidBatchLeaveNoPositionReusedAndEveryTokenReadable() throws {
        try loadSetup()
        stopServer()
        var outputs: [URL] = []
        for round in 1...2 {
            let big = try startRun("mp_crash_write.lua", [String(round), "150"], label: "big\(round)")
            let small = try startRun("mp_crash_write.lua", [String(round + 10), "3"], label: "small\(round)")
            let other = try startRun("mp_write.lua", [String(round + 20), "30"], label: "other\(round)")
            outputs += [big.1, small.1]
            let wanted = 3 + round * 2 + Int.random(in: 0..<4)
            let deadline = Date().addingTimeInterval(30)
            while big.0.isRunning && Date() < deadline {
                let lines = ((try? String(contentsOf: big.1, encoding: .utf8)) ?? "").split(separator: "\n").count
                if lines >= wanted { break }
                usleep(2_000)
            }
            // Mid-batch: some moments after a commit, the next batch is being written.
            usleep(UInt32.random(in: 0..<60_000))
            XCTAssertTrue(big.0.isRunning && small.0.isRunning, (try? String(contentsOf: big.2, encoding: .utf8)) ?? "")
            kill(big.0.processIdentifier, SIGKILL)
            kill(small.0.processIdentifier, SIGKILL)
            big.0.waitUntilExit()
            small.0.waitUntilExit()
            wait(other.0)
            XCTAssertEqual(other.0.terminationStatus, 0, (try? String(contentsOf: other.2, encoding: .utf8)) ?? "")
            try ChangeLogMultiProcessTests.checkLogInvariants(store)
            let verify = try CLI.run(["run", "--store", store, fixtures.appendingPathComponent("mp_crash_verify.lua").path] + outputs.map(\.path))
            XCTAssertEqual(verify.status, 0, verify.stderr)
            XCTAssertTrue(verify.stdout.contains("broken=0"), "round \(round): \(verify.stdout)\n\(verify.stderr.prefix(2_000))")
            try checkStoreWhole()
        }
    }

    /// Over HTTP with pyicloud strict (Tests/pyicloud/sync_recreate.py): names deleted and
    /// made again in one request and across requests, paged a record at a time across the
    /// superseded tombstones, the zone's token right after, and Bob's feed around his accept
    /// and removal.
    func testPyiCloudFollowsNamesDeletedAndMadeAgain() throws {
        guard hasPyiCloud() else { return }
        let (status, text) = try runPyiCloud("sync_recreate.py", ["PYTHONPATH": CLI.root.appendingPathComponent("Tests/pyicloud").path], timeout: 60)
        XCTAssertEqual(status, 0, text)
        XCTAssertTrue(text.hasSuffix("sync recreate ok\n"), text)
        try ChangeLogMultiProcessTests.checkLogInvariants(store)
    }

    /// `getCurrentSyncToken` (records/query, records/lookup) while two other processes make
    /// records: a copy started from the answer's records and followed from its token ends
    /// equal to a fetch from the start (Tests/pyicloud/sync_snapshot_token.py).
    func testAnAnswersRecordsAndItsSyncTokenAreOneSnapshot() throws {
        guard hasPyiCloud() else { return }
        try loadSetup()
        let done = dir.appendingPathComponent("snapshot-done")
        let (asker, output) = try startTool(
            PyiCloudTests.python,
            [CLI.root.appendingPathComponent("Tests/pyicloud/sync_snapshot_token.py").path],
            environment: [
                "PYICLOUD_CK_EXTRA": "forbid", "SHAREFLOW_BASE": base, "SHAREFLOW_API": api, "SHAREFLOW_ALICE": web, "SNAPSHOT_DONE": done.path,
            ]
        )
        let ready = Date().addingTimeInterval(20)
        while Date() < ready && asker.isRunning && !((try? String(contentsOf: output, encoding: .utf8)) ?? "").contains("ready") { usleep(10_000) }
        let writers = try (1...2).map { try startRun("mp_append.lua", [String($0), "100"], label: "append\($0)") }
        waitForAll(writers)
        _ = FileManager.default.createFile(atPath: done.path, contents: nil)
        let deadline = Date().addingTimeInterval(60)
        while asker.isRunning && Date() < deadline { usleep(50_000) }
        if asker.isRunning { asker.terminate() }
        asker.waitUntilExit()
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        print(text.split(separator: "\n").suffix(3).joined(separator: "\n"))
        XCTAssertEqual(asker.terminationStatus, 0, text)
        XCTAssertTrue(text.hasSuffix("snapshot token ok\n"), text)
    }

    /// kill -9 of `shareflow serve` in the middle of records/modify requests of 150 items:
    /// restarted, every token it answered before (getCurrentSyncToken) still reads, a record
    /// saved after is given from each, and no position is taken twice.
    func testAServerKilledMidRequestLeavesEveryTokenItGaveReadable() throws {
        try loadSetup()
        var tokens: [String] = []
        for round in 1...2 {
            let pid = server.processIdentifier
            // The kill comes at a random moment after the round's first answer (an event, not
            // a clock: under ASan on a loaded machine no answer came within a fixed 350 ms),
            // or after 60 s without one.
            var killScheduled = false
            func scheduleKill(after delay: UInt32) {
                guard !killScheduled else { return }
                killScheduled = true
                Thread.detachNewThread {
                    usleep(delay)
                    kill(pid, SIGKILL)
                }
            }
            let started = Date()
            let answeredBefore = tokens.count
            var batch = 0
            while server.isRunning {
                if tokens.count > answeredBefore { scheduleKill(after: UInt32(Int.random(in: 0..<200_000))) }
                if Date().timeIntervalSince(started) > 60 { scheduleKill(after: 0) }
                batch += 1
                let ops = (1...150).map { k in
                    #"{"operationType":"\#(k % 4 == 0 ? "forceDelete" : "forceUpdate")","record":{"recordName":"s\#((k * 7 + batch) % 200)","recordType":"Item","fields":{"b":{"value":"\#(batch)"}}}}"#
                }
                guard
                    let r = try? Tools.curl(
                        "POST",
                        base + db + "/private/records/modify?ckAPIToken=\(api)&ckWebAuthToken=\(web)&getCurrentSyncToken=true",
                        body: #"{"zoneID":{"zoneName":"Mix"},"atomic":false,"operations":[\#(ops.joined(separator: ","))]}"#,
                        in: dir
                    ),
                    r.0 == 200, let token = r.1["syncToken"] as? String
                else { continue }
                tokens.append(token)
            }
            server.waitUntilExit()
            XCTAssertEqual(server.terminationReason, .uncaughtSignal)
            try ChangeLogMultiProcessTests.checkLogInvariants(store)
            try startServer()
            // One more record, then every token: it reads, gives that record, ends at the end.
            let r = try call(
                "POST",
                db + "/private/records/modify",
                body:
                    #"{"zoneID":{"zoneName":"Mix"},"operations":[{"operationType":"forceUpdate","record":{"recordName":"after\#(round)","recordType":"Item","fields":{}}}]}"#
            )
            XCTAssertEqual(r.0, 200, "\(r.1)")
            var all: [String: String] = [:]
            let end = try follow("private", &all, token: nil, limit: 200)
            XCTAssertNotNil(all["after\(round)"])
            XCTAssertFalse(tokens.isEmpty, "round \(round): some request was answered before the kill")
            for token in tokens {
                var seen: [String: String] = [:]
                XCTAssertEqual(try follow("private", &seen, token: token, limit: 200), end)
                XCTAssertNotNil(seen["after\(round)"], "a record saved after the kill is given from a token of before")
            }
            let check = try CLI.run(["store", "check", "--store", store])
            XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
        }
    }

    /// `store compact --older-than 0` run again and again by other processes while three
    /// writers write and a reader follows both feeds (S5: it takes effect at once for every
    /// process): a token the log was pruned past is changeTokenExpired, never a silent gap, and
    /// the reader, starting again from the start when told, ends equal to a fetch from the start.
    func testCompactingWhileOthersWriteAndReadNeverLeavesASilentGap() throws {
        try loadSetup()
        stopServer()
        let doneFile = dir.appendingPathComponent("writers-done")
        let reader = try startRun("mp_read.lua", [doneFile.path, "expiring"], label: "reader")
        let writers = try (1...3).map { try startRun("mp_write.lua", [String($0 + 40), "120"], label: "writer\($0)") }
        var compactions = 0
        while writers.contains(where: { $0.0.isRunning }) {
            let r = try CLI.run(["store", "compact", "--store", store, "--older-than", "0"])
            XCTAssertEqual(r.status, 0, r.stderr)
            compactions += 1
        }
        waitForAll(writers)
        let said = stopReader(reader, doneFile: doneFile)
        print("compactions: \(compactions); reader: \(said)")
        try checkStoreWhole()
    }

    /// records/modify with getCurrentSyncToken, now answered inside the write: the token is
    /// after the request's own changes and nothing else; an atomic request that failed moves
    /// nothing; a request error is still one; the public database has no token.
    func testGetCurrentSyncTokenOnModifyIsTheWritesOwnEnd() throws {
        try loadSetup()
        let q = "ckAPIToken=\(api)&ckWebAuthToken=\(web)&getCurrentSyncToken=true"
        func create(_ names: [String], atomic: Bool = true) throws -> (Int, [String: Any]) {
            let ops = names.map { #"{"operationType":"create","record":{"recordName":"\#($0)","recordType":"Item","fields":{}}}"# }
            return try call(
                "POST",
                db + "/private/records/modify",
                query: q,
                body: #"{"zoneID":{"zoneName":"Mix"},"atomic":\#(atomic),"operations":[\#(ops.joined(separator: ","))]}"#
            )
        }
        var r = try create(["g1"])
        XCTAssertEqual(r.0, 200, "\(r.1)")
        let t1 = r.1["syncToken"] as? String
        var all: [String: String] = [:]
        XCTAssertEqual(try follow("private", &all, token: nil, limit: 200), t1, "the token is where a fetch from the start ends")
        XCTAssertNotNil(all["g1"])
        let listed = try call("POST", db + "/private/zones/list", body: "{}")
        XCTAssertEqual(
            ((listed.1["zones"] as? [[String: Any]])?.first { ($0["zoneID"] as? [String: Any])?["zoneName"] as? String == "Mix" })?["syncToken"]
                as? String,
            t1
        )
        r = try create(["g1", "g2"])
        XCTAssertEqual(r.0, 200, "\(r.1)")
        XCTAssertEqual((r.1["records"] as? [[String: Any]])?.compactMap { $0["serverErrorCode"] as? String }, ["EXISTS", "ATOMIC_ERROR"])
        XCTAssertEqual(r.1["syncToken"] as? String, t1, "an atomic request that failed moves nothing")
        r = try create(["g1", "g3"], atomic: false)
        var seen: [String: String] = [:]
        XCTAssertEqual(try follow("private", &seen, token: t1, limit: 200), r.1["syncToken"] as? String)
        XCTAssertEqual(Array(seen.keys), ["g3"], "after the first token: what the third request made")
        r = try call("POST", db + "/private/records/modify", query: q, body: #"{"zoneID":{"zoneName":"Mix"}}"#)
        XCTAssertEqual(r.0, 400, "\(r.1)")
        r = try call(
            "POST",
            db + "/public/records/modify",
            query: q,
            body: #"{"operations":[{"operationType":"create","record":{"recordName":"p1","recordType":"Item","fields":{}}}]}"#
        )
        XCTAssertEqual(r.0, 200, "\(r.1)")
        XCTAssertNil(r.1["syncToken"], "the public database has no feeds")
    }
}
