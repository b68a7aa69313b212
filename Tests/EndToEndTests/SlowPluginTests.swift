import Foundation
import ShareFlowTestKit
import XCTest

/// SPEC §16 M5: a slow plugin slows the requests that call it, not the node. A plugin's
/// observer of `record.saved` spins for seconds of CPU (within a budget raised for it); while
/// the save waits for it, reads that call no plugin (a lookup, the caller, a zone list, a
/// query) are answered on the node's reading threads. Before, every request ran on the
/// engine's one thread and waited behind the observer.
class SlowPluginTests: ServerTestCase {
    func testReadsAreAnsweredWhileASlowObserverHoldsAWrite() throws {
        try restartServer(
            withPlugin: "slow",
            settings: "limits = { cpuMillis = 30000 }",
            """
            return { name = "slow", version = "1.0.0", description = "spins after each save", config = {},
              setup = function(ctx)
                ctx.on("record.saved", function(event)
                  if event.record.recordName ~= "slow" then return end
                  ctx.log.info("slow observer started")
                  local start = os.clock()
                  while os.clock() - start < 4 do end
                  ctx.log.info("slow observer finished")
                end, { name = "slow" })
              end }
            """
        )

        var r = try call(
            "POST",
            db + "/private/records/modify",
            body: #"{"operations":[{"operationType":"create","record":{"recordName":"fast","recordType":"Note","fields":{"title":{"value":"x"}}}}]}"#
        )
        XCTAssertEqual(r.0, 200, "\(r.1)")

        final class Answer: @unchecked Sendable {
            let done = DispatchSemaphore(value: 0)
            var status = 0
        }
        let write = Answer()
        let (url, folder) = (base + db + "/private/records/modify?ckAPIToken=\(api)&ckWebAuthToken=\(web)", dir!)
        let body = #"{"operations":[{"operationType":"create","record":{"recordName":"slow","recordType":"Note","fields":{"title":{"value":"y"}}}}]}"#
        Thread.detachNewThread {
            write.status = (try? Tools.curl("POST", url, body: body, in: folder))?.0 ?? 0
            write.done.signal()
        }
        // Once the observer is spinning (it said so in the server's log)…
        while !((try? String(contentsOf: serverLog, encoding: .utf8)) ?? "").contains("slow observer started") {
            if write.done.wait(timeout: .now() + 0.02) == .success {
                return XCTFail("the save was answered before its observer ran: \(write.status)")
            }
        }
        // … reads that call no plugin are answered while the save waits for it.
        r = try call("POST", db + "/private/records/lookup", body: #"{"records":[{"recordName":"fast"}]}"#)
        XCTAssertEqual((r.1["records"] as? [[String: Any]])?.first?["recordName"] as? String, "fast", "\(r.1)")
        r = try call("GET", db + "/public/users/caller")
        XCTAssertEqual(r.0, 200, "\(r.1)")
        r = try call("POST", db + "/private/zones/list", body: "{}")
        XCTAssertEqual(r.0, 200, "\(r.1)")
        r = try call("POST", db + "/private/records/query", body: #"{"query":{"recordType":"Note"}}"#)
        XCTAssertEqual(r.0, 200, "\(r.1)")
        let log = (try? String(contentsOf: serverLog, encoding: .utf8)) ?? ""
        XCTAssertFalse(log.contains("slow observer finished"), "the reads were answered while the observer ran, not after it")
        XCTAssertEqual(write.done.wait(timeout: .now()), .timedOut, "the save still waits for its observer")

        XCTAssertEqual(write.done.wait(timeout: .now() + 120), .success)
        XCTAssertEqual(write.status, 200)
    }
}

/// The same on PostgreSQL: the reading threads read on connections of their own.
final class SlowPluginOnPostgresTests: SlowPluginTests {
    override func makeStore() throws -> String { try clusterDatabase(prefix: "slow") }

    // Named here: on Linux, XCTest runs only the tests a class declares itself.
    override func testReadsAreAnsweredWhileASlowObserverHoldsAWrite() throws {
        try super.testReadsAreAnsweredWhileASlowObserverHoldsAWrite()
    }
}
