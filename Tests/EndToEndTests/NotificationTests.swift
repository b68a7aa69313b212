import Foundation
import ShareFlowTestKit
import XCTest

/// SPEC §20 over a real server: a participant's write reaches the owner's held webcourier poll
/// within a second; a held poll is not an idle connection; SIGTERM answers every held poll at
/// once; the change stream carries the same notifications as the poll.
final class NotificationTests: ServerTestCase {
    /// A curl GET of `path` into a file, until it answers or `seconds` pass.
    private func poll(_ path: String, seconds: Int = 40) throws -> (Process, URL) {
        let out = dir.appendingPathComponent("poll-\(UUID().uuidString)")
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        curl.arguments = ["curl", "-s", "-o", out.path, "--max-time", String(seconds), base + path]
        try curl.run()
        return (curl, out)
    }

    private func text(_ file: URL) -> String { (try? String(contentsOf: file, encoding: .utf8)) ?? "" }

    private func json(_ file: URL) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(contentsOf: file))) as? [String: Any] ?? [:]
    }

    /// A device token's poll path for the caller of `query`.
    private func pollPath(_ query: String? = nil) throws -> String {
        let r = try call("POST", "/device/1/iCloud.test/development/tokens/create", query: query, body: #"{"apnsEnvironment":"production"}"#)
        XCTAssertEqual(r.0, 200, "\(r.1)")
        return try XCTUnwrap(URL(string: try XCTUnwrap(r.1["webcourierURL"] as? String))?.path)
    }

    /// Alice's Trips zone with a trip shared read-write with Bob, who accepted; Bob's query.
    private func sharedWithBob() throws -> String {
        let bob = "ckAPIToken=\(api)&ckWebAuthToken=\(try token("bob@example.com"))"
        try makeZone("Trips")
        var r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {"zoneID":{"zoneName":"Trips"},"operations":[
                 {"operationType":"create","record":{"recordName":"lisbon","recordType":"Trip","createShortGUID":true,"fields":{"title":{"value":"Lisbon"}}}},
                 {"operationType":"create","record":{"recordName":"share-1","recordType":"cloudkit.share","forRecord":{"recordName":"lisbon"},
                  "publicPermission":"NONE","participants":[{"type":"USER","permission":"READ_WRITE","acceptanceStatus":"INVITED",
                  "userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}]}
                """
        )
        let guid = try XCTUnwrap((r.1["records"] as? [[String: Any]])?.last?["shortGUID"] as? String, "\(r.1)")
        r = try call("POST", db + "/public/records/accept", query: bob, body: #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
        XCTAssertEqual((r.1["results"] as? [[String: Any]])?.first?["participantStatus"] as? String, "ACCEPTED", "\(r.1)")
        return bob
    }

    private func restart(_ settings: String) throws {
        let config = dir.appendingPathComponent("notify.config.lua")
        try CLI.write("return { \(settings) }", to: config)
        stopServer()
        try startServer(["--config", config.path])
    }

    /// N5: a participant's write fires the owner's zone subscription within 1 s; the poll was
    /// held past the server's idle deadline (a held poll is the server's time, not idleness).
    func testAParticipantsWriteReachesTheOwnersHeldPollWithinASecond() throws {
        try restart("server = { idleSeconds = 1 }, notifications = { pollSeconds = 3 }")
        let bob = try sharedWithBob()
        let owner = try XCTUnwrap(
            (try call("POST", db + "/private/zones/list", body: "{}").1["zones"] as? [[String: Any]])?
                .compactMap { $0["zoneID"] as? [String: Any] }.first { $0["zoneName"] as? String == "Trips" }?["ownerRecordName"] as? String
        )
        let made = try call(
            "POST",
            db + "/private/subscriptions/modify",
            body:
                #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"trips","subscriptionType":"zone","zoneID":{"zoneName":"Trips"}}}]}"#
        )
        XCTAssertEqual(made.0, 200, "\(made.1)")
        let path = try pollPath()
        // Idle: held for pollSeconds (3 s, past idleSeconds = 1), then nothing.
        let started = Date()
        let (idle, idleOut) = try poll(path)
        idle.waitUntilExit()
        XCTAssertEqual(idle.terminationStatus, 0, "cut short: \(text(idleOut))")
        XCTAssertEqual(text(idleOut), #"{"ck":{}}"#)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 2.5)
        // Held, then Bob writes in his shared database: the poll answers with the zone.
        var delays: [Double] = []
        for i in 0..<3 {
            let (curl, out) = try poll(path)
            usleep(300_000)
            let written = Date()
            let r = try call(
                "POST",
                db + "/shared/records/modify",
                query: bob,
                body: """
                    {"zoneID":{"zoneName":"Trips","ownerRecordName":"\(owner)"},"operations":[{"operationType":"create","record":{"recordName":"day\(i)","recordType":"Day","parent":{"recordName":"lisbon"},"fields":{}}}]}
                    """
            )
            XCTAssertEqual(r.0, 200, "\(r.1)")
            curl.waitUntilExit()
            delays.append(Date().timeIntervalSince(written))
            let fet = (json(out)["ck"] as? [String: Any])?["fet"] as? [String: Any]
            XCTAssertEqual(fet?["sid"] as? String, "trips", text(out))
            XCTAssertEqual(fet?["zid"] as? String, "Trips", text(out))
            XCTAssertEqual(fet?["zoid"] as? String, owner, text(out))
        }
        XCTAssertLessThan(delays.sorted()[1], 1.0, "\(delays)")
    }

    /// SIGTERM with polls held: every one is answered `{"ck":{}}` at once (its client polls
    /// again elsewhere), and the node exits well inside its shutdown time. One account holds
    /// at most 16: the rest are answered after a short hold, never at once.
    func testSIGTERMAnswersEveryHeldPollAtOnce() throws {
        let path = try pollPath()
        let polls = try (0..<20).map { _ in try poll(path) }
        defer { for (curl, _) in polls where curl.isRunning { curl.terminate() } }
        // Held: give them a moment to arrive (the answer comes only at SIGTERM either way).
        var held = 0.0
        let asked = Date()
        for _ in 0..<100 where held < 16 {
            let metrics = try Tools.curl("GET", base + "/metrics", in: dir)
            let raw = metrics.1["raw"] as? String ?? ""
            held =
                raw.split(separator: "\n").first { $0.hasPrefix("shareflow_notification_polls_held") }
                .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            usleep(100_000)
        }
        XCTAssertEqual(held, 16)
        let overflow = polls.filter { !$0.0.isRunning }
        XCTAssertLessThanOrEqual(overflow.count, 4)
        for (curl, out) in overflow {
            XCTAssertEqual(text(out), #"{"ck":{}}"#)
            XCTAssertEqual(curl.terminationStatus, 0)
        }
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(asked), overflow.isEmpty ? 0 : 1.5)
        let start = Date()
        server.terminate()
        for (curl, out) in polls {
            curl.waitUntilExit()
            XCTAssertEqual(curl.terminationStatus, 0, text(out))
            XCTAssertEqual(text(out), #"{"ck":{}}"#)
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
        server.waitUntilExit()
        XCTAssertEqual(server.terminationStatus, 0)
    }

    /// The change stream sends the caller's notifications of its database as `notification`
    /// events, the same a poll of a token hands out, and a plugin's `subscription.fired`
    /// observer sees the same ones.
    func testLuaTheChangeStreamAndThePollSeeTheSameNotifications() throws {
        try restartServer(
            withPlugin: "told",
            """
            return {
              name = "told", version = "1.0.0", description = "Fixture: notes each notification's ID.",
              setup = function(ctx)
                ctx.on("subscription.fired", function(ev) ctx.appendFile("nids.txt", ev.notification.notificationID .. "\\n") end)
              end,
            }
            """
        )
        try makeZone("Notes")
        XCTAssertEqual(
            try call(
                "POST",
                db + "/private/subscriptions/modify",
                body:
                    #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"q","subscriptionType":"query","zoneID":{"zoneName":"Notes"},"query":{"recordType":"Note"},"firesOn":["create","update","delete"]}}]}"#
            ).0,
            200
        )
        let path = try pollPath()
        let out = dir.appendingPathComponent("stream")
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        curl.arguments = [
            "curl", "-sN", "-o", out.path, "--max-time", "30", base + db + "/private/changes/stream?ckAPIToken=\(api)&ckWebAuthToken=\(web)",
        ]
        try curl.run()
        defer { if curl.isRunning { curl.terminate() } }
        let deadline = Date().addingTimeInterval(10)
        while !text(out).contains("id: "), Date() < deadline { usleep(20_000) }
        for i in 0..<3 {
            let r = try call(
                "POST",
                db + "/private/records/modify",
                body:
                    #"{"zoneID":{"zoneName":"Notes"},"operations":[{"operationType":"create","record":{"recordName":"n\#(i)","recordType":"Note","fields":{}}}]}"#
            )
            XCTAssertEqual(r.0, 200, "\(r.1)")
        }
        var polled: [String] = []
        for _ in 0..<3 {
            let (p, o) = try poll(path, seconds: 30)
            p.waitUntilExit()
            if let nid = (json(o)["ck"] as? [String: Any])?["nid"] as? String { polled.append(nid) }
        }
        func streamed() -> [String] {
            text(out).components(separatedBy: "event: notification\ndata: ").dropFirst().compactMap { part in
                let line = part.prefix { $0 != "\n" }
                return ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]).flatMap {
                    ($0["ck"] as? [String: Any])?["nid"] as? String
                }
            }
        }
        let until = Date().addingTimeInterval(10)
        while streamed().count < 3, Date() < until { usleep(50_000) }
        XCTAssertEqual(polled.count, 3, text(out))
        XCTAssertEqual(streamed(), polled, text(out))
        let files = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL }.filter {
            $0.lastPathComponent == "nids.txt"
        }
        let lua = try files?.first.map { try String(contentsOf: $0, encoding: .utf8).split(separator: "\n").map(String.init) } ?? []
        XCTAssertEqual(lua, polled, "the plugin's observer saw the same notifications")
    }
}
