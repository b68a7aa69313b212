import Foundation
import ShareFlowTestKit
import XCTest

/// `GET /metrics` (SPEC §16) as an operator scrapes it: Prometheus' text format, requests by
/// route template and status with their latency, the engine queue's depth, plugin budget
/// overruns, injected faults; no caller's value in a label.
final class MetricsTests: ServerTestCase {
    func testAScrapeCountsRequestsOverrunsAndFaults() throws {
        stopServer()
        let plugin = dir.appendingPathComponent("Plugins/spinner")
        try FileManager.default.createDirectory(at: plugin, withIntermediateDirectories: true)
        try CLI.write(
            """
            return {
              name = "spinner", version = "1.0.0", description = "Spins on every saved record: a CPU budget overrun.",
              setup = function(ctx)
                ctx.on("record.saved", function() while true do end end, { name = "spin" })
              end,
            }
            """,
            to: plugin.appendingPathComponent("init.lua")
        )
        let config = dir.appendingPathComponent("metrics.config.lua")
        try CLI.write(
            """
            return {
              limits = { cpuMillis = 20 },
              plugins = { spinner = true },
              faults = { { operation = "records/query", fault = "zoneBusy" } },
            }
            """,
            to: config
        )
        try startServer(["--config", config.path])

        var r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {"operations":[{"operationType":"create","record":{"recordName":"n1","recordType":"Note","fields":{}}}]}
                """
        )
        XCTAssertEqual(r.0, 200, "\(r.1)")
        r = try call("POST", db + "/private/records/query", body: #"{"query":{"recordType":"Note"}}"#)
        XCTAssertNotEqual(r.0, 200, "the fault struck: \(r.1)")
        r = try call("GET", db + "/public/users/caller", query: "ckAPIToken=guessed-\(UUID().uuidString)")
        XCTAssertEqual(r.0, 401)

        let scrape = try Tools.curl("GET", base + "/metrics", in: dir)
        XCTAssertEqual(scrape.0, 200)
        let text = try XCTUnwrap(scrape.1["raw"] as? String, "\(scrape.1)")
        XCTAssertTrue((scrape.1["_headers"] as? String ?? "").contains("content-type: text/plain; version=0.0.4"), "\(scrape.1)")
        func value(_ prefix: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        let modify = "/database/1/{container}/{environment}/{database}/records/modify"
        XCTAssertEqual(value(#"hb_requests{http_route="\#(modify)",http_request_method="POST",http_response_status_code="200"}"#), 1, text)
        XCTAssertEqual(
            value(#"http_server_request_duration_count{http_route="\#(modify)",http_request_method="POST",http_response_status_code="200"}"#),
            1,
            text
        )
        XCTAssertTrue(text.contains(#"http_server_request_duration_bucket{http_route="\#(modify)""#), text)
        XCTAssertEqual(
            value(
                #"hb_requests{http_route="/database/1/{container}/{environment}/{database}/users/caller",http_request_method="GET",http_response_status_code="401"}"#
            ),
            1,
            text
        )
        XCTAssertNotNil(value("shareflow_engine_queue_depth "), text)
        XCTAssertEqual(value(#"shareflow_plugin_budget_overruns_total{plugin="spinner",budget="cpu"}"#), 1, text)
        XCTAssertEqual(value(#"shareflow_faults_injected_total{operation="query",fault="zoneBusy"}"#), 1, text)
        // No caller's value in any label: not the token guessed, not the tokens used.
        XCTAssertFalse(text.contains("guessed-"), text)
        XCTAssertFalse(text.contains(web) || text.contains(api), "no token in a label")
    }
}
