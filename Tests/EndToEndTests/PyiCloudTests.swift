import Foundation
import ShareFlowTestKit
import XCTest

/// The sharing flow driven by an independent client, pyicloud from PyPI (pinned in the
/// Makefile, installed by `make test` into .build/pyenv), against a real `shareflow serve`, in
/// pyicloud's strict mode (Tests/pyicloud/sharing_flow.py); then the same data read by
/// `shareflow run` on the store.
final class PyiCloudTests: ServerTestCase {
    /// The virtual environment's Python (SHAREFLOW_PYTHON overrides).
    static let python: String =
        ProcessInfo.processInfo.environment["SHAREFLOW_PYTHON"]
        ?? CLI.root.appendingPathComponent(".build/pyenv/bin/python").path

    func testPyiCloudDrivesTheSharingFlowInStrictMode() throws {
        guard hasPyiCloud() else { return }
        try script("require('shareflow').accounts.create{ email = 'carol@example.com' }")
        let (status, text) = try runPyiCloud("sharing_flow.py", ["SHAREFLOW_CAROL": try token("carol@example.com")], timeout: 120)
        XCTAssertEqual(status, 0, text)
        XCTAssertTrue(text.hasSuffix("pyicloud sharing flow ok\n"), text)
        XCTAssertEqual(text.split(separator: "\n").filter { $0.hasPrefix("ok: ") }.count, 16, "every check ran:\n" + text)

        // What pyicloud wrote over HTTP is in the store for `shareflow run`.
        stopServer()
        let read = try script(
            """
            local sf = require("shareflow")
            local db = sf.as("bob@example.com"):container("iCloud.test").sharedCloudDatabase
            local zone = db:fetchAllRecordZones()[1]
            local r = db:fetchRecord(sf.RecordID{ recordName = "lisbon", zoneID = zone.zoneID })
            print(r.fields.title, r.fields.days, r.share and r.share.recordName)
            """
        )
        XCTAssertEqual(read.stdout, "Lisbon in May\t5\tshare-lisbon\n", read.stderr)
    }

    /// SPEC §13's wave-4 additions through pyicloud, strict (Tests/pyicloud/apple_client_flow.py):
    /// encrypted fields as Apple Invites writes them, a full location, a zone's share with an
    /// administrator, zone-wide queries across zones, the newer comparators, contacts, and the
    /// 401/421 split as pyicloud raises them; access requests (SPEC §17) read by its strict models.
    func testPyiCloudRunsTheAppleClientAdditionsInStrictMode() throws {
        guard hasPyiCloud() else { return }
        let expired = try CLI.run(["tokens", "user", "--store", store, "--container", "iCloud.test", "--as", "alice@example.com", "--ttl", "1"])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // Past its second (the server compares with its clock; a loaded machine only adds to it).
        usleep(1_200_000)
        let (status, text) = try runPyiCloud("apple_client_flow.py", ["SHAREFLOW_EXPIRED": expired], timeout: 120)
        XCTAssertEqual(status, 0, text)
        XCTAssertTrue(text.hasSuffix("pyicloud apple client flow ok\n"), text)
        XCTAssertEqual(text.split(separator: "\n").filter { $0.hasPrefix("ok: ") }.count, 20, "every check ran:\n" + text)
    }

    /// SPEC §20 through pyicloud strict (Tests/pyicloud/subscription_flow.py): subscriptions
    /// by `raw_post`, a device token and its webcourier poll through its session, a
    /// participant's write told to the owner in CloudKit's push shape, a stranger told nothing.
    func testPyiCloudSubscribesAndPollsInStrictMode() throws {
        guard hasPyiCloud() else { return }
        let config = dir.appendingPathComponent("poll.config.lua")
        try CLI.write("return { notifications = { pollSeconds = 2 } }", to: config)
        stopServer()
        try startServer(["--config", config.path])
        try CLI.write("require('shareflow').accounts.create{ email = 'carol@example.com' }", to: dir.appendingPathComponent("carol.lua"))
        XCTAssertEqual(try CLI.run(["run", "--store", store, dir.appendingPathComponent("carol.lua").path]).status, 0)
        let (status, text) = try runPyiCloud("subscription_flow.py", ["SHAREFLOW_CAROL": try token("carol@example.com")], timeout: 120)
        XCTAssertEqual(status, 0, text)
        XCTAssertTrue(text.hasSuffix("pyicloud subscription flow ok\n"), text)
    }

    /// SPEC §14 through pyicloud's `database_changes`, `changes` and `iter_changes`, strict
    /// (Tests/pyicloud/sync_flow.py): paging, tombstones, Bob's accept, a record moved in and
    /// out of his view, his removal, bad tokens and places.
    func testPyiCloudFollowsTheChangeFeedsInStrictMode() throws {
        guard hasPyiCloud() else { return }
        let path = CLI.root.appendingPathComponent("Tests/pyicloud/sync_flow.py").path
        let (status, text) = try runPyiCloud("sync_flow.py", timeout: 120)
        XCTAssertEqual(status, 0, text)
        XCTAssertTrue(text.hasSuffix("pyicloud sync flow ok\n"), text)
        let checks = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\ncheck(").count - 1
        XCTAssertEqual(text.split(separator: "\n").filter { $0.hasPrefix("ok: ") }.count, checks, "every check ran:\n" + text)
    }

    /// SPEC §14 S6 over HTTP with concurrent writers (Tests/pyicloud/sync_concurrent.py): four
    /// threads write — creates, edits, deletes, moves into and out of Bob's view, Bob writing too
    /// — while Alice and Bob follow their zone feeds; then each copy equals a full fetch.
    func testFeedsConvergeOverHTTPWithConcurrentWriters() throws {
        guard hasPyiCloud() else { return }
        for seed in [20_261_124, 7, 1999] {
            let (status, text) = try runPyiCloud("sync_concurrent.py", ["SYNC_SEED": String(seed)], timeout: 180)
            XCTAssertEqual(status, 0, "seed \(seed): " + text)
            XCTAssertTrue(text.hasSuffix("sync under concurrent writers ok\n"), "seed \(seed): " + text)
            // Each seed in its own zone: the next run makes "Live" again after this one's is gone.
            _ = try call(
                "POST",
                db + "/private/zones/modify",
                body: #"{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"Live"}}}]}"#
            )
        }
    }

    /// SPEC §15 through pyicloud, strict (Tests/pyicloud/fault_flow.py): rules armed over the
    /// admin route; CloudKitRateLimited with the rule's retry_after for THROTTLED and a ZONE_BUSY
    /// zone in iter_changes, a per-item CONFLICT while the rest commit, a drop after commit
    /// with the write applied, one seed's faults twice, other users untouched.
    func testPyiCloudMeetsInjectedFaultsAsOnApplesService() throws {
        guard hasPyiCloud() else { return }
        let admin = try CLI.run(["tokens", "admin", "--store", store]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(admin.range(of: "^[0-9a-f]{64}$", options: .regularExpression) != nil, admin)
        let path = CLI.root.appendingPathComponent("Tests/pyicloud/fault_flow.py").path
        let (status, text) = try runPyiCloud("fault_flow.py", ["SHAREFLOW_ADMIN": admin], timeout: 120)
        XCTAssertEqual(status, 0, text)
        XCTAssertTrue(text.hasSuffix("pyicloud fault flow ok\n"), text)
        let checks = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\ncheck(").count - 1
        XCTAssertEqual(text.split(separator: "\n").filter { $0.hasPrefix("ok: ") }.count, checks, "every check ran:\n" + text)
        let log = try String(contentsOf: serverLog, encoding: .utf8)
        XCTAssertTrue(log.contains(" 429 ") && log.contains("fault=requestRateLimited"), log)
        XCTAssertTrue(log.contains("fault=partialFailure") && log.contains("fault=zoneBusy"), log)
    }
}
