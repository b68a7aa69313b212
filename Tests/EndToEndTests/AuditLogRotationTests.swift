import Foundation
import ShareFlowTestKit
import XCTest

/// The shipped audit-log plugin never goes quiet (SPEC §13, wave 3): at its disk quota the log
/// moves to `<path>.1`, the newest lines are kept, and the operator is told on standard error.
final class AuditLogRotationTests: XCTestCase {
    func testAtTheQuotaTheLogRotatesKeepsTheNewestAndSaysSo() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("config.lua")
        try CLI.write(#"return { limits = { diskMiB = 0.06 }, plugins = { ["audit-log"] = {} } }"#, to: config)
        let script = dir.appendingPathComponent("flood.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "a@example.com" }
            local c = sf.as("a@example.com"):container("iCloud.test")
            for i = 1, 400 do c:fetchShareParticipants{ "someone" .. i .. "@example.com" } end
            c:fetchShareParticipants{ "last-one@example.com" }
            print(sf.plugins.dataFolder("audit-log"))
            """,
            to: script
        )
        let r = try CLI.run([
            "run", "--store", dir.appendingPathComponent("s.sqlite").path, "--plugins", CLI.root.appendingPathComponent("Plugins").path,
            "--config", config.path, script.path,
        ])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("audit-log: audit.jsonl reached half the plugin's disk quota; moved it to audit.jsonl.1"), r.stderr)
        XCTAssertFalse(r.stderr.contains("failed"), "no event was lost: \(r.stderr.prefix(500))")
        let folder = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let current = try String(contentsOfFile: folder + "/audit.jsonl", encoding: .utf8)
        let previous = try String(contentsOfFile: folder + "/audit.jsonl.1", encoding: .utf8)
        XCTAssertTrue(current.contains("\"event\":\"audit.rotated\""), current.prefix(300).description)
        XCTAssertTrue(current.contains("last-one@example.com"), "the newest event is kept")
        XCTAssertTrue(previous.contains("participant.fetched"))
    }
}
