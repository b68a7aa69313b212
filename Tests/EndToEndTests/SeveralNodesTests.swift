import Foundation
import ShareFlowTestKit
import XCTest

/// Three `shareflow serve` nodes on one PostgreSQL store, requests spread round-robin (SPEC §16,
/// M2 and M4), on the throw-away cluster `make test` starts (Tests/postgres/with-cluster.sh;
/// without it, as under the sanitizers, these tests are skipped). Each test has a database of
/// its own.
final class SeveralNodesTests: ServerTestCase {
    private var nodes: [ServeProcess] = []
    private var state: URL!

    override func makeStore() throws -> String { try clusterDatabase(prefix: "nodes") }

    override func setUpWithError() throws {
        try super.setUpWithError()
        for _ in 0..<2 { nodes.append(try ServeProcess(store: store, in: dir)) }
        state = dir.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        for node in nodes { node.stop() }
        try super.tearDownWithError()
    }

    /// Every node's URL, comma-separated: the Python drivers take turns.
    private var bases: String { ([base] + nodes.map(\.base)).joined(separator: ",") }

    /// `count` more users with web auth tokens, written with Alice's to STATE/users.json.
    private func users(_ count: Int) throws {
        try script(
            """
            local sf = require("shareflow")
            for i = 1, \(count) do sf.accounts.create{ email = "user" .. i .. "@example.com" } end
            """
        )
        // Made four at a time: each is a process that opens the store.
        final class Made: @unchecked Sendable {
            let lock = NSLock()
            var tokens: [String]
            init(_ count: Int) { tokens = [String](repeating: "", count: count) }
        }
        let made = Made(count)
        let store = self.store!
        DispatchQueue.concurrentPerform(iterations: 4) { lane in
            for i in stride(from: lane, to: count, by: 4) {
                let t =
                    (try? CLI.run(["tokens", "user", "--store", store, "--container", "iCloud.test", "--as", "user\(i + 1)@example.com"]))?
                    .stdout.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
                made.lock.withLock { made.tokens[i] = t }
            }
        }
        let tokens = made.tokens
        XCTAssertFalse(tokens.contains(""), "every user has a token")
        let users: [[String: String]] =
            [["email": "alice@example.com", "token": web]]
            + tokens.enumerated().map { ["email": "user\($0.offset + 1)@example.com", "token": $0.element] }
        try JSONSerialization.data(withJSONObject: ["api": api, "users": users] as [String: Any])
            .write(to: state.appendingPathComponent("users.json"))
    }

    private func python() throws -> String {
        let python = PyiCloudTests.python
        guard FileManager.default.isExecutableFile(atPath: python) else { throw XCTSkip("no Python environment at \(python): run `make pyenv`") }
        return python
    }

    private func driver(_ script: String, _ arguments: [String], timeout: TimeInterval = 240) throws -> (Int32, String) {
        try runTool(try python(), [CLI.root.appendingPathComponent(script).path] + arguments, timeout: timeout)
    }

    /// The one JSON object line a driver printed.
    private func summary(_ output: String, prefix: String = "{") throws -> [String: Any] {
        let line = try XCTUnwrap(output.split(separator: "\n").last { $0.hasPrefix(prefix) }, output)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.dropFirst(prefix == "{" ? 0 : prefix.count).utf8)) as? [String: Any])
    }

    /// No node answered a 5xx; `store check` finds nothing wrong.
    private func storeIsWhole(file: StaticString = #filePath, line: UInt = #line) throws {
        for log in [serverLog!] + nodes.map(\.log) {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            // The 5xx's line and the operator's lines before it (the cause, an incident's).
            if let found = text.range(of: #" 5\d\d [0-9.]+ ms"#, options: .regularExpression) {
                let before = text[..<found.lowerBound].split(separator: "\n").suffix(6).joined(separator: "\n")
                XCTFail("a 5xx in \(log.lastPathComponent):\n\(before)\(text[found.lowerBound...].prefix { $0 != "\n" })", file: file, line: line)
            }
        }
        let check = try CLI.run(["store", "check", "--store", store])
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr, file: file, line: line)
    }

    func testSixtyFourClientsAndANodeKilledLoseNoAcknowledgedEdit() throws {
        try users(15)
        let load = CLI.root.appendingPathComponent("Tests/load/sharing_load.py").path
        var r = try runTool(try python(), [load, "setup", bases, state.path], timeout: 180)
        XCTAssertEqual(r.0, 0, r.1)
        let (clients, output) = try startTool(try python(), [load, "load", bases, state.path, "12", "64"])
        sleep(5)
        // One node killed mid-load: what it acknowledged is committed; its open transaction is
        // rolled back by PostgreSQL (its lock with it), and the others go on.
        kill(nodes[1].process.processIdentifier, SIGKILL)
        nodes[1].process.waitUntilExit()
        while clients.isRunning { usleep(100_000) }
        let text = try String(contentsOf: output, encoding: .utf8)
        XCTAssertEqual(clients.terminationStatus, 0, text)
        print(text, terminator: "")
        let counts = try summary(text, prefix: "load: ")
        // The load did real work: edits decided under the write lock, acknowledged or stale.
        // How they split depends on how fast the clients' reads come back (with reads beside
        // the write, SPEC §16 M5, they come back sooner, so more edits are stale), not on
        // whether an acknowledged edit is kept, which `verify` checks below.
        let decided = (counts["acknowledged"] as? Int ?? 0) + (counts["conflict"] as? Int ?? 0)
        XCTAssertGreaterThan(decided, 100, text)
        XCTAssertGreaterThan(counts["acknowledged"] as? Int ?? 0, 10, text)
        XCTAssertGreaterThan(counts["conflict"] as? Int ?? 0, 0, "overlapping edits: stale ones are CONFLICT: \(text)")
        XCTAssertGreaterThan(counts["lost_connection"] as? Int ?? 0, 0, "the killed node's requests failed: \(text)")
        nodes.remove(at: 1)
        r = try runTool(try python(), [load, "verify", bases, state.path], timeout: 120)
        XCTAssertEqual(r.0, 0, r.1)
        print(r.1, terminator: "")
        try storeIsWhole()
        try feedsAreGapless()
    }

    func testOneHundredFiftyAcceptsOfOnePublicShareLeaveExactlyOneHundred() throws {
        try users(150)
        let r = try driver("Tests/postgres/nodes.py", ["accepts", bases, state.path])
        XCTAssertEqual(r.0, 0, r.1)
        print(r.1, terminator: "")
        let result = try summary(r.1)
        XCTAssertEqual(result["participants"] as? Int, 100, "the owner and 99 who accepted (R8): \(r.1)")
        XCTAssertEqual(result["accepted"] as? Int, 99, r.1)
        XCTAssertEqual(result["refused"] as? Int, 51, r.1)
        try storeIsWhole()
    }

    func testTwoSharesOverAParentAndItsChildAtOnceMakeExactlyOne() throws {
        try users(0)
        let r = try driver("Tests/postgres/nodes.py", ["parents", bases, state.path, "12"])
        XCTAssertEqual(r.0, 0, r.1)
        print(r.1, terminator: "")
        let result = try summary(r.1)
        XCTAssertEqual(result["exactlyOne"] as? Int, 12, "R5, every round: \(r.1)")
        // alreadyShared (R5) is BAD_REQUEST on the wire (docs/reference/operations.md, errors).
        XCTAssertEqual(result["codes"] as? [String], ["BAD_REQUEST"], r.1)
        try storeIsWhole()
    }

    /// Every zone's positions: each handed out once, none past the zone's counter (store check),
    /// and a reader that follows the owner's zone feed from the start gets every record the
    /// zone holds (nothing skipped by a slower transaction that committed later).
    private func feedsAreGapless(file: StaticString = #filePath, line: UInt = #line) throws {
        let read = try script(
            """
            local sf = require("shareflow")
            local db = sf.as("alice@example.com"):container("iCloud.test").privateCloudDatabase
            local zone
            for _, z in ipairs(assert(db:fetchAllRecordZones())) do if z.zoneID.zoneName == "Load" then zone = z.zoneID end end
            local seen, token = {}, nil
            repeat
              local page = assert(db:recordZoneChanges{ zoneID = zone, since = token, resultsLimit = 7 })
              for _, r in ipairs(page.modifications) do seen[r.recordID.recordName] = r.recordChangeTag end
              token = page.changeToken
            until not page.moreComing
            local all = assert(db:query{ recordType = "Doc", zoneID = zone })
            local missing = 0
            for _, r in ipairs(all) do if seen[r.recordID.recordName] ~= r.recordChangeTag then missing = missing + 1 end end
            print(#all, missing)
            """
        )
        XCTAssertEqual(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "6\t0", read.stderr, file: file, line: line)
    }

    func testPostgreSQLStoppedAndStartedUnderARunningNode() throws {
        guard let clusterDir = ProcessInfo.processInfo.environment["SHAREFLOW_TEST_CLUSTER_DIR"] else {
            throw XCTSkip("no cluster folder (SHAREFLOW_TEST_CLUSTER_DIR)")
        }
        let cluster = CLI.root.appendingPathComponent("Tests/postgres/cluster.sh").path
        // A request that reads the store (a caller's identity may be answered from what the
        // node remembers of their token).
        let zones = db + "/private/zones/list"
        XCTAssertEqual(try call("GET", zones).0, 200)
        XCTAssertEqual(try CLI.runTool("bash", [cluster, "pause", clusterDir]).status, 0)
        defer { _ = try? CLI.runTool("bash", [cluster, "resume", clusterDir]) }
        // A request during the outage: 503 TRY_AGAIN_LATER well within the statement timeout.
        let started = Date()
        let down = try call("GET", zones)
        XCTAssertEqual(down.0, 503, "\(down.1)")
        XCTAssertEqual(down.1["serverErrorCode"] as? String, "TRY_AGAIN_LATER")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5.5)
        // Nothing of the operator's reaches a client: not the database's user, host, port or name.
        let location = try XCTUnwrap(URLComponents(string: store))
        let secrets = [location.user, location.host, location.port.map(String.init), String(location.path.dropFirst())].compactMap { $0 }
        func assertNothingOfTheOperators(_ body: [String: Any]) {
            let text = "\(body)"
            for secret in secrets { XCTAssertFalse(text.contains(secret), "\(secret) in \(text)") }
            XCTAssertFalse(text.lowercased().contains("postgres"), text)
        }
        assertNothingOfTheOperators(down.1)
        XCTAssertNotNil(down.1["retryAfter"], "\(down.1)")
        sleep(2)
        let unready = try call("GET", "/readyz", query: "")
        XCTAssertEqual(unready.0, 503)
        assertNothingOfTheOperators(unready.1)
        // A CLI command during the outage: one line, non-zero.
        let cli = try CLI.run(["store", "info", "--store", store])
        XCTAssertNotEqual(cli.status, 0)
        XCTAssertEqual(cli.stderr.split(separator: "\n").count, 1, cli.stderr)
        XCTAssertTrue(cli.stderr.contains("cannot be reached") || cli.stderr.contains("unreachable"), cli.stderr)
        XCTAssertEqual(try CLI.runTool("bash", [cluster, "resume", clusterDir]).status, 0)
        // Served again within 10 s, without a restart.
        let back = Date()
        var statuses: [Int] = []
        while Date().timeIntervalSince(back) < 10 {
            statuses.append(try call("GET", zones).0)
            if statuses.last == 200 { break }
            usleep(200_000)
        }
        XCTAssertEqual(statuses.last, 200, "\(statuses): \((try? String(contentsOf: serverLog, encoding: .utf8))?.suffix(2000) ?? "")")
        // Ready again at the watch's next probe (once a second).
        var ready = 0
        for _ in 0..<15 where ready != 200 {
            ready = try call("GET", "/readyz", query: "").0
            if ready != 200 { usleep(200_000) }
        }
        XCTAssertEqual(ready, 200)
        XCTAssertTrue(server.isRunning)
    }

    /// PostgreSQL frozen (SIGSTOP: a partition that sends no reset, a machine that hangs): no
    /// answer comes and PostgreSQL's own statement timeout cannot fire. A node gives up on the
    /// connection after its statement timeout plus 5 s and answers 503, rather than waiting
    /// for ever; once PostgreSQL thaws it serves again.
    func testAFrozenPostgreSQLHoldsNoNodeForEver() throws {
        guard let clusterDir = ProcessInfo.processInfo.environment["SHAREFLOW_TEST_CLUSTER_DIR"] else {
            throw XCTSkip("no cluster folder (SHAREFLOW_TEST_CLUSTER_DIR)")
        }
        let config = dir.appendingPathComponent("short.config.lua")
        try CLI.write("return { postgres = { statementTimeoutMs = 1000 } }\n", to: config)
        let node = try ServeProcess(store: store, in: dir, arguments: ["--config", config.path])
        defer { node.stop() }
        let zones = node.base + "/database/1/iCloud.test/development/private/zones/list?ckAPIToken=\(api)&ckWebAuthToken=\(web)"
        func get(_ url: String, timeout: TimeInterval) -> Int { (try? Tools.curl("GET", url, in: dir).0) ?? 0 }
        XCTAssertEqual(get(zones, timeout: 10), 200)
        // The postmaster and every backend, stopped where they are.
        let postmaster = try String(contentsOfFile: clusterDir + "/data/postmaster.pid", encoding: .utf8).split(separator: "\n")[0]
        let backends = try CLI.runTool("pgrep", ["-P", String(postmaster)]).stdout.split(separator: "\n").map(String.init)
        let frozen = [String(postmaster)] + backends
        XCTAssertEqual(try CLI.runTool("kill", ["-STOP"] + frozen).status, 0)
        var thawed = false
        defer { if !thawed { _ = try? CLI.runTool("kill", ["-CONT"] + frozen) } }
        let started = Date()
        // Unready once the store's probe (sent within a second) has waited 5 s, before its
        // statement gives up (at 6 s).
        var unready: Double?
        while unready == nil, Date().timeIntervalSince(started) < 10 {
            if get(node.base + "/readyz", timeout: 5) == 503 { unready = Date().timeIntervalSince(started) } else { usleep(200_000) }
        }
        XCTAssertNotNil(unready, "ready with the store frozen")
        XCTAssertLessThan(unready ?? 99, 8)
        let during = get(zones, timeout: 30)
        let took = Date().timeIntervalSince(started)
        XCTAssertEqual(during, 503, "after \(took) s")
        XCTAssertLessThan(took, 12, "the probe's 1 s statement timeout + 5 s, and a new connection's 1 s")
        XCTAssertEqual(try CLI.runTool("kill", ["-CONT"] + frozen).status, 0)
        thawed = true
        var status = 0
        let back = Date()
        while Date().timeIntervalSince(back) < 15 && status != 200 {
            status = get(zones, timeout: 10)
            if status != 200 { usleep(200_000) }
        }
        XCTAssertEqual(status, 200, "served again once PostgreSQL thawed")
    }

    /// The README's example of two nodes, as written, on this test's database and free ports.
    func testTheReadmesExampleRuns() throws {
        let readme = try String(contentsOf: CLI.root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try XCTUnwrap(readme.range(of: "### Beyond one machine"))
        let rest = readme[section.upperBound...]
        let open = try XCTUnwrap(rest.range(of: "```sh\n"))
        let close = try XCTUnwrap(rest[open.upperBound...].range(of: "```"))
        var script = String(rest[open.upperBound..<close.lowerBound])
        let free = try (0..<2).map { _ in try Tools.freePort() }
        // An empty database of its own, as the README asks.
        let empty = try makeStore()
        // Ports first: the database's own port may hold "8080" or "8081".
        script = script.replacingOccurrences(of: "8080", with: String(free[0])).replacingOccurrences(of: "8081", with: String(free[1]))
            .replacingOccurrences(of: #"(?m)^PG=\S+"#, with: "PG='\(empty)'", options: .regularExpression)
        let bin = try CLI.readmeFolder(dir)
        let file = dir.appendingPathComponent("nodes.sh")
        try CLI.write("set -euo pipefail\nexport PATH='\(bin.path)':\"$PATH\"\n" + script, to: file)
        let r = try runTool("/bin/bash", [file.path], timeout: 120)
        XCTAssertEqual(r.0, 0, r.1)
        XCTAssertTrue(r.1.contains(#"{"ready":true}"#), r.1)
        XCTAssertTrue(r.1.contains("revoked"), r.1)
    }

    func testAnAccountChangedOnOneNodeIsSeenByTheOthers() throws {
        let bases = [base] + nodes.map(\.base)
        func givenName(_ node: String) throws -> String? {
            let r = try Tools.curl("GET", node + db + "/public/users/caller?ckAPIToken=\(api)&ckWebAuthToken=\(web)", in: dir)
            let user = (r.1["users"] as? [[String: Any]])?.first
            return (user?["nameComponents"] as? [String: Any])?["givenName"] as? String
        }
        for node in bases { XCTAssertEqual(try givenName(node), "Alice") }
        try script(
            """
            local sf = require("shareflow")
            sf.accounts.find("alice@example.com"):setName{ given = "Alicia" }
            """
        )
        usleep(1_500_000)
        for node in bases { XCTAssertEqual(try givenName(node), "Alicia", node) }
    }

    /// SPEC §19 A4, A6: an asset uploaded through one node is served by another (its blob in
    /// the database, its URL sealed with the store's key, which every node shares).
    func testAnAssetUploadedOnOneNodeDownloadsFromAnother() throws {
        let other = nodes[0].base
        let q = "?ckAPIToken=\(api)&ckWebAuthToken=\(web)"
        var r = try Tools.curl(
            "POST",
            base + db + "/private/assets/upload" + q,
            body: #"{"tokens":[{"recordType":"Photo","fieldName":"image"}]}"#,
            in: dir
        )
        XCTAssertEqual(r.0, 200, "\(r.1)")
        let token = try XCTUnwrap((r.1["tokens"] as? [[String: Any]])?.first)
        let upload = try XCTUnwrap(token["url"] as? String)
        let bytes = Data((0..<2_500_000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ ($0 >> 11)) })
        let file = dir.appendingPathComponent("photo.bin")
        try bytes.write(to: file)
        r = try Tools.curl("POST", upload, bodyFile: file, in: dir)
        XCTAssertEqual(r.0, 200, "\(r.1)")
        let single = try XCTUnwrap(r.1["singleFile"] as? [String: Any])
        let record = try XCTUnwrap(token["recordName"] as? String)
        let body = try JSONSerialization.data(withJSONObject: [
            "operations": [
                ["operationType": "create", "record": ["recordName": record, "recordType": "Photo", "fields": ["image": ["value": single]]]]
            ]
        ])
        r = try Tools.curl("POST", base + db + "/private/records/modify" + q, body: String(decoding: body, as: UTF8.self), in: dir)
        XCTAssertEqual(r.0, 200, "\(r.1)")
        // Read and downloaded through the other node.
        r = try Tools.curl("POST", other + db + "/private/records/lookup" + q, body: #"{"records":[{"recordName":"\#(record)"}]}"#, in: dir)
        let fields = try XCTUnwrap(((r.1["records"] as? [[String: Any]])?.first?["fields"] as? [String: Any]), "\(r.1)")
        let url = try XCTUnwrap(((fields["image"] as? [String: Any])?["value"] as? [String: Any])?["downloadURL"] as? String)
        XCTAssertTrue(url.hasPrefix(other), url)
        let out = dir.appendingPathComponent("downloaded.bin")
        let got = try CLI.runTool("curl", ["-s", "-o", out.path, "-w", "%{http_code}", url.replacingOccurrences(of: "${f}", with: "photo.bin")])
        XCTAssertEqual(got.stdout, "200")
        XCTAssertEqual(try Data(contentsOf: out), bytes)
        // The URL the first node made serves from the second node too.
        let firstURL = url.replacingOccurrences(of: other, with: base)
        let again = try CLI.runTool("curl", ["-s", "-o", out.path, "-w", "%{http_code}", "-H", "Range: bytes=1048570-1048589", firstURL])
        XCTAssertEqual(again.stdout, "206")
        XCTAssertEqual(try Data(contentsOf: out), bytes.subdata(in: 1_048_570..<1_048_590), "a range across a chunk's edge")
    }

    /// SPEC §16: rate limits are shared by all nodes (overshoot at most half a bucket). Three
    /// nodes with a bucket of 20 each would grant 45 requests spread over them without sharing.
    func testTheRateLimitIsSharedByEveryNode() throws {
        let config = dir.appendingPathComponent("limited.config.lua")
        try CLI.write("return { server = { rateLimit = { requests = 20, perSeconds = 600 } } }", to: config)
        let limited = try (0..<3).map { _ in try ServeProcess(store: store, in: dir, arguments: ["--config", config.path]) }
        defer { for node in limited { node.stop() } }
        var granted = 0
        var throttled = 0
        for i in 0..<45 {
            let r = try Tools.curl("GET", limited[i % 3].base + db + "/public/users/caller?ckAPIToken=\(api)&ckWebAuthToken=\(web)", in: dir)
            switch r.0 {
            case 200: granted += 1
            case 429:
                throttled += 1
                XCTAssertTrue(((r.1["_headers"] as? String) ?? "").contains("retry-after:"), "\(r.1)")
            default: XCTFail("status \(r.0): \(r.1)")
            }
        }
        XCTAssertGreaterThanOrEqual(granted, 20, "a bucket's worth is granted")
        XCTAssertLessThanOrEqual(granted, 30, "at most half a bucket more across the nodes (granted \(granted))")
        XCTAssertEqual(granted + throttled, 45)

        // While the shared buckets cannot answer (their table locked), no node grants alone:
        // each request is 503 TRY_AGAIN_LATER, and service comes back with the buckets.
        let bob = try token("bob@example.com")
        let lock = Process()
        lock.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        lock.arguments = ["psql", store, "-qc", "BEGIN; LOCK TABLE shareflow.rate_bucket IN EXCLUSIVE MODE; SELECT pg_sleep(4); COMMIT;"]
        lock.standardOutput = FileHandle.nullDevice
        try lock.run()
        usleep(700_000)
        var during: [Int] = []
        for i in 0..<6 {
            during.append(try Tools.curl("GET", limited[i % 3].base + db + "/public/users/caller?ckAPIToken=\(api)&ckWebAuthToken=\(bob)", in: dir).0)
        }
        lock.waitUntilExit()
        XCTAssertEqual(Set(during), [503], "never granted unchecked: \(during)")
        let after = try Tools.curl("GET", limited[0].base + db + "/public/users/caller?ckAPIToken=\(api)&ckWebAuthToken=\(bob)", in: dir)
        XCTAssertEqual(after.0, 200, "\(after.1)")
    }

    /// SPEC §14 across nodes: a change committed through one node pokes the streams of another
    /// at once (PostgreSQL's NOTIFY), not at its next poll (every 500 ms).
    func testAWriteOnOneNodePokesAStreamOnAnother() throws {
        let r = try Tools.curl(
            "POST",
            base + db + "/private/zones/modify?ckAPIToken=\(api)&ckWebAuthToken=\(web)",
            body:
                #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Live"}}}]}"#,
            in: dir
        )
        XCTAssertEqual(r.0, 200, "\(r.1)")
        let out = dir.appendingPathComponent("stream-\(UUID().uuidString)")
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        curl.arguments = [
            "curl", "-sN", "-o", out.path, "--max-time", "60",
            nodes[0].base + db + "/private/changes/stream?ckAPIToken=\(api)&ckWebAuthToken=\(web)",
        ]
        try curl.run()
        defer { if curl.isRunning { curl.terminate() } }
        func events() -> Int {
            ((try? String(contentsOf: out, encoding: .utf8)) ?? "").components(separatedBy: "event: zone").count - 1
        }
        let opened = Date().addingTimeInterval(10)
        while Date() < opened, ((try? String(contentsOf: out, encoding: .utf8)) ?? "").isEmpty { usleep(10_000) }
        let delays = try Tools.streamDelays(
            write: { i in
                let r = try Tools.curl(
                    "POST",
                    base + db + "/private/records/modify?ckAPIToken=\(api)&ckWebAuthToken=\(web)",
                    body: """
                        {"zoneID":{"zoneName":"Live"},"operations":[{"operationType":"create","record":{"recordType":"Note","recordName":"n\(i)","fields":{}}}]}
                        """,
                    in: dir
                )
                XCTAssertEqual(r.0, 200, "\(r.1)")
            },
            events: events
        )
        // A poll every 500 ms would make the median about 250 ms.
        let median = delays.sorted()[delays.count / 2]
        XCTAssertLessThan(median, 0.15, "poked at once, not at the next poll: \(delays)")
    }

    /// SPEC §20 N4: a write on one node reaches a webcourier poll held on another (the
    /// dispatch commits, PostgreSQL's NOTIFY wakes the other node, one read finds the inbox
    /// moved); and changes a node left in the outbox (it died after its commit) are taken over
    /// by another once they wait past `takeoverSeconds`.
    func testAWriteOnOneNodeReachesAPollHeldOnAnotherAndADeadNodesChangesAreTakenOver() throws {
        func post(_ node: String, _ path: String, _ body: String) throws -> [String: Any] {
            let r = try Tools.curl("POST", node + path + "?ckAPIToken=\(api)&ckWebAuthToken=\(web)", body: body, in: dir)
            XCTAssertEqual(r.0, 200, "\(r.1)")
            return r.1
        }
        _ = try post(base, db + "/private/zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Live"}}}]}"#)
        _ = try post(
            base,
            db + "/private/subscriptions/modify",
            #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"live","subscriptionType":"zone","zoneID":{"zoneName":"Live"}}}]}"#
        )
        let made = try post(base, "/device/1/iCloud.test/development/tokens/create", #"{"apnsEnvironment":"production"}"#)
        let path = try XCTUnwrap(URL(string: try XCTUnwrap(made["webcourierURL"] as? String))?.path)
        func heldPoll() throws -> (Process, URL) {
            let out = dir.appendingPathComponent("poll-\(UUID().uuidString)")
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            curl.arguments = ["curl", "-s", "-o", out.path, "--max-time", "30", nodes[0].base + path]
            try curl.run()
            usleep(300_000)
            return (curl, out)
        }
        func told(_ out: URL) -> [String: Any]? {
            (((try? JSONSerialization.jsonObject(with: Data(contentsOf: out))) as? [String: Any])?["ck"] as? [String: Any])?["fet"] as? [String: Any]
        }
        var delays: [Double] = []
        for i in 0..<5 {
            let (curl, out) = try heldPoll()
            let written = Date()
            _ = try post(
                base,
                db + "/private/records/modify",
                #"{"zoneID":{"zoneName":"Live"},"operations":[{"operationType":"create","record":{"recordType":"Note","recordName":"n\#(i)","fields":{}}}]}"#
            )
            curl.waitUntilExit()
            delays.append(Date().timeIntervalSince(written))
            XCTAssertEqual(told(out)?["sid"] as? String, "live", (try? String(contentsOf: out, encoding: .utf8)) ?? "")
        }
        XCTAssertLessThan(delays.sorted()[2], 0.5, "\(delays)")
        XCTAssertLessThan(delays.max()!, 2, "\(delays)")
        // A change a dead node committed and never dispatched (its row, as it left it).
        let (curl, out) = try heldPoll()
        let zone = try CLI.runTool("psql", [store, "-tAc", "SELECT id FROM shareflow.zone WHERE name = 'Live'"]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        let inserted = try CLI.runTool(
            "psql",
            [
                store, "-qc",
                "INSERT INTO shareflow.notify_change (zoneID, node, name, type, reason, seq, at) VALUES (\(zone), 'a-node-gone', 'ghost', 'Note', 1, 0, \(Date().timeIntervalSince1970 - 1))",
            ]
        )
        XCTAssertEqual(inserted.status, 0, inserted.stderr)
        curl.waitUntilExit()
        XCTAssertEqual(told(out)?["sid"] as? String, "live", (try? String(contentsOf: out, encoding: .utf8)) ?? "")
    }

    func testARevokedTokenIsRefusedByEveryNode() throws {
        let bob = try token("bob@example.com")
        let bases = [base] + nodes.map(\.base)
        for node in bases {
            let r = try Tools.curl("GET", node + db + "/public/users/caller?ckAPIToken=\(api)&ckWebAuthToken=\(bob)", in: dir)
            XCTAssertEqual(r.0, 200)
        }
        let revoked = try CLI.run(["tokens", "revoke", "--store", store, bob])
        XCTAssertEqual(revoked.status, 0, revoked.stderr)
        // Each node sees the revocation at its next store probe (about a second); on a loaded
        // machine a probe can come late, so each node is asked until it refuses, for a while.
        for node in bases {
            var r = try Tools.curl("GET", node + db + "/public/users/caller?ckAPIToken=\(api)&ckWebAuthToken=\(bob)", in: dir)
            let deadline = Date().addingTimeInterval(15)
            while r.0 != 401 && Date() < deadline {
                usleep(200_000)
                r = try Tools.curl("GET", node + db + "/public/users/caller?ckAPIToken=\(api)&ckWebAuthToken=\(bob)", in: dir)
            }
            XCTAssertEqual(r.0, 401, "\(node): \(r.1)")
        }
        XCTAssertEqual(try call("GET", db + "/public/users/caller").0, 200, "Alice's token is untouched")
    }
}
