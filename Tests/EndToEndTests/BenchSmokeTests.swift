import Foundation
import ShareFlowTestKit
import XCTest

/// `shareflow bench --smoke` produces every SPEC §12 figure, positive. No timing is asserted:
/// these machines are noisy, and the real run is `make bench` on a release build.
final class BenchSmokeTests: XCTestCase {
    func testEveryFigureIsProducedAndPositive() throws {
        let r = try CLI.run(["bench", "--smoke", "--json"], timeout: 300)
        XCTAssertEqual(r.status, 0, r.stderr)
        let object = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as! [String: Any]
        let keys =
            [
                "hook_dispatch_ns", "hook_dispatch_c_ns", "hook_dispatch_ratio", "policy_decision_ns", "policy_decision_ratio",
                "policy_decision_logged_ratio",
                "fetch_participants_per_s", "sqlite_lookups_per_s", "fetch_participants_vs_sqlite",
                "fetch_record_per_s", "fetch_record_sqlite_per_s", "fetch_record_vs_sqlite",
                "share_metadata_64_per_s", "share_metadata_64_sqlite_per_s", "share_metadata_64_vs_sqlite",
                "request_access_unknown_p50_us", "request_access_closed_p50_us", "request_access_blocked_p50_us", "request_access_silent_spread",
                "accept_per_s", "accept_with_policy_per_s", "accept_with_policy_vs_without",
                "cold_start_ms", "lua_cold_start_ms", "rss_mib_1000x100",
                "serve_resolve_per_s", "serve_resolve_in_process_per_s", "serve_resolve_vs_in_process", "serve_resolve_p50_ms",
                "serve_resolve_p99_ms", "serve_accept_per_s", "serve_accept_in_process_per_s", "serve_accept_vs_in_process",
                "serve_accept_p99_ms", "serve_resolve_locked_per_s", "serve_resolve_locked_p99_ms", "serve_resolve_locked_p99_vs_alone",
                "serve_bare_route_per_s", "serve_resolve_beside_bare_route_per_s", "serve_resolve_vs_bare_route",
                "deep_chain_save_ms", "shallow_save_ms", "deep_chain_save_ratio",
                "query_page_big_ms", "query_page_small_ms", "query_page_100k_vs_1k",
                "asset_10mib_https_mib_per_s", "asset_10mib_bare_tls_mib_per_s", "asset_10mib_https_vs_bare_tls",
                "notify_write_1000_us", "notify_write_none_us", "notify_1000_subscriptions_write_ratio", "notify_fanout_1000_us",
                "notify_delay_p50_ms", "notify_delay_p99_ms",
            ]
            + ["save_batch", "save_batch_shared", "save_one", "save_one_shared", "edit_one", "accept"].flatMap {
                ["log_\($0)_us", "log_\($0)_unlogged_us", "log_\($0)_vs_unlogged"]
            }
        for key in keys {
            let value = (object[key] as? NSNumber)?.doubleValue ?? -1
            XCTAssertGreaterThan(value, 0, "\(key) = \(String(describing: object[key]))")
        }
        let machine = object["machine"] as? [String: Any]
        XCTAssertGreaterThan((machine?["cores"] as? Int) ?? 0, 0)
        XCTAssertNotNil(machine?["cpu"] as? String)
        XCTAssertNotNil(object["date"] as? String)
        XCTAssertEqual(object["serve_errors"] as? Int, 0, "every HTTP call of the serve figures succeeded")
    }

    func testTableNamesEveryFigureWithItsBaseline() throws {
        let r = try CLI.run(["bench", "--smoke"], timeout: 300)
        XCTAssertEqual(r.status, 0, r.stderr)
        for part in [
            "raw C `lua_pcall`", "raw SQLite", "(no plugin)", "`lua5.4 empty.lua`", "1,000 shares × 100 participants",
            "`records/resolve` over HTTP", "raw SQLite read of its row", "raw SQLite reads of the same rows", "/s (in-process)",
            "100 children of the root", "a zone of a hundredth",
            "µs (the log off)", "(a bare TLS route)", "(a bare Hummingbird route)",
        ] {
            XCTAssertTrue(r.stdout.contains(part), "missing \(part):\n\(r.stdout)")
        }
    }

    func testOnlyRunsTheNamedGroups() throws {
        let r = try CLI.run(["bench", "--smoke", "--json", "--only", "hooks"], timeout: 300)
        XCTAssertEqual(r.status, 0, r.stderr)
        let object = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as! [String: Any]
        XCTAssertGreaterThan((object["hook_dispatch_ratio"] as? NSNumber)?.doubleValue ?? -1, 0)
        XCTAssertNil(object["fetch_participants_per_s"], "fetch was not asked for")

        let bad = try CLI.run(["bench", "--smoke", "--only", "speed"], timeout: 60)
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.stderr.contains("unknown figure group 'speed'"), bad.stderr)
    }
}
