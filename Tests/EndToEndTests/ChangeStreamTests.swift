import Foundation
import ShareFlowTestKit
import XCTest

/// SPEC §14's poke channel over a real server: `GET …/changes/stream` as server-sent events,
/// read by curl as a live app's client would, resumed with `Last-Event-ID`.
final class ChangeStreamTests: ServerTestCase {
    /// A curl following the stream into a file, until killed or `seconds` pass.
    private func follow(_ database: String, lastEventID: String? = nil, seconds: Int = 30, token: String? = nil) throws -> (Process, URL) {
        let out = dir.appendingPathComponent("stream-\(UUID().uuidString)")
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var args = ["curl", "-sN", "-D", out.path + ".headers", "-o", out.path, "--max-time", String(seconds)]
        if let lastEventID { args += ["-H", "Last-Event-ID: \(lastEventID)"] }
        curl.arguments = args + [base + db + "/\(database)/changes/stream?ckAPIToken=\(api)&ckWebAuthToken=\(token ?? web)"]
        try curl.run()
        return (curl, out)
    }

    private func text(_ file: URL) -> String { (try? String(contentsOf: file, encoding: .utf8)) ?? "" }

    /// Waits until `file` holds `needle` (at most 10 s).
    private func wait(for needle: String, in file: URL) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if text(file).contains(needle) { return true }
            usleep(20_000)
        }
        return false
    }

    /// The `id:` of each frame, in order.
    private func ids(_ stream: String) -> [String] {
        stream.split(separator: "\n").filter { $0.hasPrefix("id: ") }.map { String($0.dropFirst(4)) }
    }

    /// On SQLite, a write through this node wakes its streams at once, not at their next poll
    /// (every 500 ms).
    func testAWriteThroughTheNodeWakesItsStreamsAtOnce() throws {
        try makeZone("Live")
        let (curl, out) = try follow("private", seconds: 60)
        defer { if curl.isRunning { curl.terminate() } }
        XCTAssertTrue(wait(for: "id: ", in: out), text(out))
        func events() -> Int { text(out).components(separatedBy: "event: zone").count - 1 }
        let delays = try Tools.streamDelays(
            write: { i in
                let r = try call(
                    "POST",
                    db + "/private/records/modify",
                    body: """
                        {"zoneID":{"zoneName":"Live"},"operations":[{"operationType":"create","record":{"recordType":"Note","recordName":"n\(i)","fields":{}}}]}
                        """
                )
                XCTAssertEqual(r.0, 200, "\(r.1)")
            },
            events: events
        )
        // A poll every 500 ms would make the median about 250 ms.
        let median = delays.sorted()[delays.count / 2]
        XCTAssertLessThan(median, 0.15, "woken at once, not at the next poll: \(delays)")
    }

    /// SIGTERM with streams open: they end at once (their clients resume elsewhere with
    /// `Last-Event-ID`), so the node exits in well under its 10 s `shutdownSeconds`.
    func testSIGTERMEndsOpenStreamsAtOnce() throws {
        let streams = try (0..<2).map { _ in try follow("private", seconds: 60) }
        defer { for (curl, _) in streams where curl.isRunning { curl.terminate() } }
        for (_, out) in streams { XCTAssertTrue(wait(for: "id: ", in: out), text(out)) }
        let start = Date()
        server.terminate()
        let deadline = Date().addingTimeInterval(15)
        while server.isRunning && Date() < deadline { usleep(50_000) }
        let took = Date().timeIntervalSince(start)
        XCTAssertFalse(server.isRunning)
        XCTAssertLessThan(took, 5, "the streams held the shutdown")
        XCTAssertEqual(server.terminationStatus, 0)
        for (curl, out) in streams {
            curl.waitUntilExit()
            // The stream ended as a response does (curl exits 0), not cut mid-way (18) or
            // timed out (28).
            XCTAssertEqual(curl.terminationStatus, 0, text(out))
        }
    }

    func testTheStreamPokesEachZoneChangedAndResumesFromLastEventID() throws {
        let (curl, out) = try follow("private")
        defer { if curl.isRunning { curl.terminate() } }
        // Opened now: its first frame carries the current token, no backlog.
        XCTAssertTrue(wait(for: "id: ", in: out), text(out))
        XCTAssertTrue(text(out).hasPrefix(": shareflow change stream\nid: "), text(out))
        let headers = text(URL(fileURLWithPath: out.path + ".headers")).lowercased()
        XCTAssertTrue(headers.contains("content-type: text/event-stream"), headers)
        let start = ids(text(out))[0]

        try makeZone("Live")
        let r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {"zoneID":{"zoneName":"Live"},"operations":[{"operationType":"create","record":{"recordType":"Note","recordName":"n1","fields":{"t":{"value":"x"}}}}]}
                """
        )
        XCTAssertEqual(r.0, 200, "\(r.1)")
        XCTAssertTrue(wait(for: "\"zoneName\":\"Live\"", in: out), text(out))
        // The zone's making and the record's saving may come as one event or two (each write
        // wakes the stream): the live stream is read once it has been quiet past a poll.
        var live = text(out)
        var quietSince = Date()
        while Date().timeIntervalSince(quietSince) < 0.8 {
            usleep(50_000)
            let now = text(out)
            if ids(now) != ids(live) {
                live = now
                quietSince = Date()
            }
        }
        XCTAssertTrue(live.contains("event: zone\nid: "), live)
        // Each event's data is one JSON object naming the zone.
        for line in live.split(separator: "\n") where line.hasPrefix("data: ") {
            let object = try JSONSerialization.jsonObject(with: Data(line.dropFirst(6).utf8)) as? [String: Any]
            XCTAssertEqual((object?["zoneID"] as? [String: Any])?["zoneName"] as? String, "Live", String(line))
        }
        curl.terminate()
        curl.waitUntilExit()

        // Resumed from the first id: every change since it is announced again, at once.
        let (again, resumed) = try follow("private", lastEventID: start, seconds: 3)
        again.waitUntilExit()
        let backlog = text(resumed)
        XCTAssertTrue(backlog.contains("\"zoneName\":\"Live\""), backlog)
        XCTAssertFalse(backlog.contains(": shareflow change stream"), "a resumed stream starts with the backlog: \(backlog)")
        XCTAssertEqual(ids(backlog).last, ids(live).last, "the backlog ends where the live stream did")
        // Resumed from the last id: nothing to say yet.
        let (quiet, nothing) = try follow("private", lastEventID: ids(live).last, seconds: 2)
        quiet.waitUntilExit()
        XCTAssertFalse(text(nothing).contains("event: zone"), text(nothing))
        // Bob's shared database saw none of it: Alice shared nothing.
        web = try token("bob@example.com")
        let (bobs, bobOut) = try follow("shared", seconds: 2)
        bobs.waitUntilExit()
        XCTAssertFalse(text(bobOut).contains("event: zone"), text(bobOut))
    }

    /// A stream ends when its web auth token expires (SPEC §13), not at its lifetime: its last
    /// frame an `error` event saying so; reopening it is refused.
    func testAStreamEndsWhenItsTokenExpires() throws {
        let short = try CLI.run(["tokens", "user", "--store", store, "--container", "iCloud.test", "--as", "alice@example.com", "--ttl", "3"])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let opened = Date()
        let (curl, out) = try follow("private", token: short)
        defer { if curl.isRunning { curl.terminate() } }
        XCTAssertTrue(wait(for: "id: ", in: out), text(out))
        let deadline = Date().addingTimeInterval(15)
        while curl.isRunning, Date() < deadline { usleep(50_000) }
        XCTAssertFalse(curl.isRunning, "the stream ended")
        XCTAssertLessThan(Date().timeIntervalSince(opened), 8, "at the token's expiry, give or take a poll")
        XCTAssertTrue(text(out).contains("event: error") && text(out).contains("ckWebAuthToken has expired"), text(out))
        let again = try call("GET", db + "/private/changes/stream", query: "ckAPIToken=\(api)&ckWebAuthToken=\(short)")
        XCTAssertEqual(again.0, 421, "expired: sign in again")
    }

    /// A token revoked while its stream is open (`shareflow tokens revoke`, any process): the
    /// stream ends within the store watch's second or so, and reopening it is refused.
    func testARevokedTokensStreamEnds() throws {
        let second = try token("alice@example.com")
        let (curl, out) = try follow("private", token: second)
        defer { if curl.isRunning { curl.terminate() } }
        XCTAssertTrue(wait(for: "id: ", in: out), text(out))
        let revoked = try CLI.run(["tokens", "revoke", "--store", store, second])
        XCTAssertEqual(revoked.status, 0, revoked.stderr)
        let deadline = Date().addingTimeInterval(5)
        while curl.isRunning, Date() < deadline { usleep(50_000) }
        XCTAssertFalse(curl.isRunning, "the stream ended")
        let again = try call("GET", db + "/private/changes/stream", query: "ckAPIToken=\(api)&ckWebAuthToken=\(second)")
        XCTAssertEqual(again.0, 401)
    }

    func testBadStreamsAreErrorsNamingTheCause() throws {
        var r = try call("GET", db + "/private/changes/stream", headers: ["Last-Event-ID: garbage"])
        XCTAssertEqual(r.0, 400)
        XCTAssertTrue((r.1["reason"] as? String ?? "").contains("change token"), "\(r.1)")
        r = try call("GET", db + "/private/changes/stream", headers: ["Last-Event-ID: " + String(repeating: "A", count: 5_000)])
        XCTAssertEqual(r.0, 400, "\(r.1)")
        r = try call("GET", db + "/public/changes/stream")
        XCTAssertEqual(r.0, 400)
        XCTAssertTrue((r.1["reason"] as? String ?? "").hasPrefix("badDatabase"), "\(r.1)")
        r = try call("POST", db + "/private/changes/stream", body: "{}")
        XCTAssertEqual(r.0, 400)
        XCTAssertTrue((r.1["reason"] as? String ?? "").contains("GET"), "\(r.1)")
        r = try call("GET", db + "/private/changes/stream", query: "ckAPIToken=\(api)")
        XCTAssertEqual(r.0, 421, "no user: sign in first \(r.1)")
        // A token of Alice's private feed is no token of Bob's.
        let (curl, out) = try follow("private")
        XCTAssertTrue(wait(for: "id: ", in: out), text(out))
        let alices = ids(text(out))[0]
        curl.terminate()
        curl.waitUntilExit()
        web = try token("bob@example.com")
        r = try call("GET", db + "/private/changes/stream", headers: ["Last-Event-ID: \(alices)"])
        XCTAssertEqual(r.0, 400, "\(r.1)")
    }

    /// At most four streams an account: a fifth is served at once and ends the oldest. A
    /// browser reconnects before the server can know its old connection is gone, and
    /// EventSource gives up for good on a 429.
    func testAnAccountHoldsAFewStreamsAtMostTheNewestWinning() throws {
        var open: [(Process, URL)] = []
        defer { for (p, _) in open where p.isRunning { p.terminate() } }
        for _ in 0..<4 {
            let (curl, out) = try follow("private")
            open.append((curl, out))
            XCTAssertTrue(wait(for: "id: ", in: out), text(out))
        }
        for round in 0..<3 {
            let (curl, out) = try follow("private")
            open.append((curl, out))
            XCTAssertTrue(wait(for: "id: ", in: out), "round \(round): the newest is served: \(text(out))")
            let oldest = open[round].0
            let deadline = Date().addingTimeInterval(10)
            while oldest.isRunning, Date() < deadline { usleep(50_000) }
            XCTAssertFalse(oldest.isRunning, "round \(round): the oldest stream ended")
            XCTAssertEqual(open.filter { $0.0.isRunning }.count, 4, "round \(round): four stay open")
        }
    }
}
