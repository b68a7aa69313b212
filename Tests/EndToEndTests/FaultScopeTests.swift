import Foundation
import ShareFlowTestKit
import XCTest

/// A request's faults are decided once, for the request (SPEC §15, `FaultScope`): a change
/// stream is one request decided on its connection (its polls are neither delayed nor counted,
/// and a `zonePurged` rule does not spin it), and the engine calls that an observer of an
/// injection or a plugin's operation callback makes inside a request are part of that request,
/// not requests of their own (one delay, one injection, no loop on the engine's thread).
final class FaultScopeTests: ServerTestCase {
    private var admin = ""

    private func adminCall(_ method: String, _ path: String = "", body: String? = nil) throws -> (Int, [String: Any]) {
        try Tools.curl(method, base + "/admin/1/faults" + path, body: body, headers: ["Authorization: Bearer \(admin)"], in: dir)
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        admin = try CLI.run(["tokens", "admin", "--store", store]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A curl following the private change stream into a file for `seconds`.
    private func follow(seconds: Int) throws -> (Process, URL) {
        let out = dir.appendingPathComponent("stream-\(UUID().uuidString)")
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        curl.arguments = [
            "curl", "-sN", "-o", out.path, "-w", "%{http_code}", "--max-time", String(seconds),
            base + db + "/private/changes/stream?ckAPIToken=\(api)&ckWebAuthToken=\(web)",
        ]
        curl.standardOutput = Pipe()
        try curl.run()
        return (curl, out)
    }

    private func text(_ file: URL) -> String { (try? String(contentsOf: file, encoding: .utf8)) ?? "" }

    func testTheChangeStreamIsOneRequestDecidedOnItsConnection() throws {
        try makeZone("Trips")
        // A rule naming changes/stream is asked when a stream opens: 429 as any endpoint's.
        var (status, body) = try adminCall(
            "POST",
            body: #"{"rules":[{"operation":"changes/stream","fault":"requestRateLimited","retryAfter":2,"count":1}]}"#
        )
        XCTAssertEqual(status, 200, "\(body)")
        var r = try call("GET", db + "/private/changes/stream")
        XCTAssertEqual(r.0, 429, "\(r.1)")
        XCTAssertEqual(r.1["serverErrorCode"] as? String, "THROTTLED")

        // A delay on the database feed holds no one but its own request: a stream's polls are
        // not requests the engine decides (and sleeps) on its one thread.
        (status, body) = try adminCall("POST", body: #"{"rules":[{"operation":"databaseChanges","latencyMs":3000}]}"#)
        XCTAssertEqual(status, 200, "\(body)")
        let (curl, _) = try follow(seconds: 4)
        defer { if curl.isRunning { curl.terminate() } }
        usleep(800_000)
        let started = Date()
        r = try call("POST", db + "/private/records/query", body: #"{"zoneID":{"zoneName":"Trips"},"query":{"recordType":"Note"}}"#)
        XCTAssertEqual(r.0, 200, "\(r.1)")
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.5, "the engine's thread slept in a stream's poll")
        curl.terminate()
        curl.waitUntilExit()
        XCTAssertEqual(try adminCall("DELETE").0, 200)

        // A count on changes/database is spent by changes/database requests, not by a stream's polls.
        (status, body) = try adminCall("POST", body: #"{"rules":[{"operation":"changes/database","fault":"serviceUnavailable","count":1}]}"#)
        XCTAssertEqual(status, 200, "\(body)")
        let (second, _) = try follow(seconds: 2)
        second.waitUntilExit()
        r = try call("POST", db + "/private/changes/database", body: "{}")
        XCTAssertEqual(r.0, 503, "the rule's one injection is the feed request's: \(r.1)")
        (status, body) = try adminCall("GET", "/history")
        let history = body["history"] as? [[String: Any]] ?? []
        XCTAssertEqual(
            history.filter { ($0["operation"] as? String) == "databaseChanges" && ($0["fault"] as? String) == "latency" }.count,
            0,
            "no stream poll was delayed: \(history)"
        )
    }

    func testAZonePurgedRuleDoesNotSpinAStream() throws {
        try makeZone("Trips")
        let (status, body) = try adminCall("POST", body: #"{"rules":[{"fault":"zonePurged","zone":"Trips"}]}"#)
        XCTAssertEqual(status, 200, "\(body)")
        let (curl, out) = try follow(seconds: 2)
        curl.waitUntilExit()
        let events = text(out).components(separatedBy: "event: zone").count - 1
        XCTAssertLessThanOrEqual(events, 1, "the zone reported purged again and again: \(events) events")
        let r = try call("POST", db + "/private/records/query", body: #"{"zoneID":{"zoneName":"Trips"},"query":{"recordType":"Note"}}"#)
        XCTAssertEqual(r.0, 200, "\(r.1)")
    }

    func testAFaultInjectedObserverThatCallsTheEngineDoesNotLoopOnTheEngineThread() throws {
        // A plugin that reacts to each injection with a fetch of its own: before, the fetch was
        // decided natively, injected again, announced again… ~100 levels deep, each level's
        // delay slept on the engine's one thread (one 50 ms rule held the server 5 s).
        try restartServer(
            withPlugin: "echo",
            """
            local sf = require("shareflow")
            return { name = "echo", version = "1.0.0", description = "fetches on each injection", config = {},
              setup = function(ctx)
                ctx.on("fault.injected", function()
                  local db = sf.as("alice@example.com"):container("iCloud.test").privateCloudDatabase
                  local _, err = db:fetchRecord(sf.RecordID{ recordName = "x" })
                  ctx.log.info("echo fetched: " .. tostring(err and err.code))
                end, { name = "echo" })
              end }
            """
        )
        let (status, body) = try adminCall("POST", body: #"{"rules":[{"operation":"*","latencyMs":300}]}"#)
        XCTAssertEqual(status, 200, "\(body)")
        let started = Date()
        let r = try call("POST", db + "/private/zones/list", body: "{}")
        XCTAssertEqual(r.0, 200, "\(r.1)")
        XCTAssertLessThan(Date().timeIntervalSince(started), 2, "one delay, not one per observer level")
        let history = try adminCall("GET", "/history").1["history"] as? [Any]
        XCTAssertEqual(history?.count, 1, "\(history ?? [])")
        let log = try String(contentsOf: serverLog, encoding: .utf8)
        XCTAssertEqual(log.components(separatedBy: "echo fetched: unknownItem").count - 1, 1, log)
    }

    func testAPluginsOperationCallbackInsideARequestIsPartOfThatRequest() throws {
        // A plugin observing record.saved runs an operation whose callback reads: inside a
        // server's request that is the request's work, decided on its connection once — never
        // a native request decided (and delayed) on the engine's thread.
        try restartServer(
            withPlugin: "reader",
            """
            local sf = require("shareflow")
            return { name = "reader", version = "1.0.0", description = "reads back each save", config = {},
              setup = function(ctx)
                ctx.on("record.saved", function(ev)
                  local db = sf.as("alice@example.com"):container("iCloud.test").privateCloudDatabase
                  local id = ev.record.recordID
                  local op = sf.FetchRecordsOperation{ recordIDs = { id } }
                  op.fetchRecordsResultBlock = function()
                    local _, err = db:fetchRecord(id)
                    ctx.log.info("reader fetched: " .. tostring(err and err.code or "ok"))
                  end
                  op.database = db
                  db.container:add(op)
                  op:wait()
                end, { name = "reader" })
              end }
            """
        )
        let (status, body) = try adminCall("POST", body: #"{"rules":[{"operation":"*","latencyMs":1500}]}"#)
        XCTAssertEqual(status, 200, "\(body)")
        let started = Date()
        let r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {"operations":[{"operationType":"create","record":{"recordType":"Note","recordName":"n1","fields":{"t":{"value":"x"}}}}]}
                """
        )
        XCTAssertEqual(r.0, 200, "\(r.1)")
        XCTAssertLessThan(Date().timeIntervalSince(started), 2.9, "one delay, the request's")
        let history = try adminCall("GET", "/history").1["history"] as? [Any]
        XCTAssertEqual(history?.count, 1, "\(history ?? [])")
        let log = try String(contentsOf: serverLog, encoding: .utf8)
        XCTAssertTrue(log.contains("reader fetched: ok"), log)
    }
}
