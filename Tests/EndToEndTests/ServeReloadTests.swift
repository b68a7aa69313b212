import Foundation
import ShareFlowTestKit
import XCTest

/// `serve` reloads its plugins and config on SIGHUP, never failing open (SPEC §18 P1): a
/// version that does not load leaves the running one deciding, a good one replaces it.
final class ServeReloadTests: ServerTestCase {
    private static func gate(refusing title: String) -> String {
        """
        return {
          name = "gate",
          version = "1.0.0",
          description = "Fixture: refuses shares of one title.",
          setup = function(ctx)
            ctx.policy("share.save", function(req)
              if req.proposed.title == "\(title)" then return ctx.deny("no \(title) shares") end
            end, { name = "titles" })
          end,
        }
        """
    }

    /// Saves a new share titled `title` over HTTP: its status and the server's error code
    /// (nil when saved).
    private func saveShare(_ title: String) throws -> (Int, String?) {
        let name = UUID().uuidString
        let r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {"zoneID":{"zoneName":"Z"},"atomic":true,"operations":[
                 {"operationType":"create","record":{"recordName":"r-\(name)","recordType":"Doc","fields":{}}},
                 {"operationType":"create","record":{"recordName":"s-\(name)","recordType":"cloudkit.share","forRecord":{"recordName":"r-\(name)"},
                  "fields":{"cloudkit.title":{"value":"\(title)"}},"publicPermission":"NONE","participants":[]}}]}
                """
        )
        let records = r.1["records"] as? [[String: Any]] ?? []
        // The share's error (its root fails ATOMIC_ERROR beside it).
        let codes = records.compactMap { $0["serverErrorCode"] as? String }
        return (r.0, codes.contains("ACCESS_DENIED") ? "ACCESS_DENIED" : codes.first)
    }

    /// Sends SIGHUP and waits for the server to log `line` (after `seen` such lines).
    private func hangUp(expecting line: String) throws {
        let before = (try String(contentsOf: serverLog, encoding: .utf8)).components(separatedBy: line).count
        kill(server.processIdentifier, SIGHUP)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if (try String(contentsOf: serverLog, encoding: .utf8)).components(separatedBy: line).count > before { return }
            usleep(20_000)
        }
        XCTFail("the server never logged '\(line)': \(try String(contentsOf: serverLog, encoding: .utf8))")
    }

    func testABrokenReloadKeepsThePoliciesAndAGoodOneReplacesThem() throws {
        try restartServer(withPlugin: "gate", Self.gate(refusing: "secret"))
        try makeZone("Z")
        XCTAssertEqual(try saveShare("secret").1, "ACCESS_DENIED")
        XCTAssertNil(try saveShare("public").1)

        let file = dir.appendingPathComponent("plugins/gate/init.lua")
        // A version that does not compile, then one whose setup fails: nothing changes.
        for broken in ["return {", "return { name = 'gate', version = '2', description = 'x', setup = function() error('no') end }"] {
            try CLI.write(broken, to: file)
            try hangUp(expecting: "SIGHUP: nothing reloaded, the running plugins stay")
            XCTAssertEqual(try saveShare("secret").1, "ACCESS_DENIED", "the running version still decides after: \(broken)")
        }
        // A config file that does not parse: nothing changes either.
        let config = dir.appendingPathComponent("gate.config.lua")
        let good = try String(contentsOf: config, encoding: .utf8)
        try CLI.write("return { plugins = ", to: config)
        try hangUp(expecting: "SIGHUP: nothing reloaded, the running plugins stay")
        XCTAssertEqual(try saveShare("secret").1, "ACCESS_DENIED")
        try CLI.write(good, to: config)

        // A good version replaces it.
        try CLI.write(Self.gate(refusing: "public"), to: file)
        try hangUp(expecting: "SIGHUP: plugins reloaded: gate")
        XCTAssertNil(try saveShare("secret").1)
        XCTAssertEqual(try saveShare("public").1, "ACCESS_DENIED")
        XCTAssertTrue(server.isRunning)
    }
}

/// Shadow mode (SPEC §18 P6): `policies.shadow` names a folder of candidate versions that
/// `serve` asks beside the live ones; they never decide, and `decisions --shadow-flips`
/// lists where they disagree.
final class ServeShadowTests: ServerTestCase {
    func testACandidateIsAskedAndLoggedButNeverDecides() throws {
        let candidate = dir.appendingPathComponent("candidate/gate/init.lua")
        try FileManager.default.createDirectory(at: candidate.deletingLastPathComponent(), withIntermediateDirectories: true)
        try CLI.write(
            """
            return {
              name = "gate", version = "2.0.0", description = "Candidate: refuses every share.",
              setup = function(ctx)
                ctx.on("share.saved", function() error("a candidate's observer must never run") end)
                ctx.policy("share.save", function() return ctx.deny("candidate says no") end, { name = "titles" })
              end,
            }
            """,
            to: candidate
        )
        try restartServer(
            withPlugin: "gate",
            settings: "policies = { shadow = \"candidate\" }",
            """
            return {
              name = "gate", version = "1.0.0", description = "Live: allows every share.",
              setup = function(ctx) ctx.policy("share.save", function() end, { name = "titles" }) end,
            }
            """
        )
        try makeZone("Z")
        let r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {"zoneID":{"zoneName":"Z"},"operations":[
                 {"operationType":"create","record":{"recordName":"r1","recordType":"Doc","fields":{}}},
                 {"operationType":"create","record":{"recordName":"s1","recordType":"cloudkit.share","forRecord":{"recordName":"r1"},
                  "publicPermission":"NONE","participants":[]}}]}
                """
        )
        let records = try XCTUnwrap(r.1["records"] as? [[String: Any]], "\(r.1)")
        XCTAssertTrue(records.allSatisfy { $0["serverErrorCode"] == nil }, "the live version decides: \(r.1)")
        let config = dir.appendingPathComponent("gate.config.lua").path
        let flips = try CLI.run(["decisions", "--shadow-flips", "--json", "--store", store, "--config", config])
        XCTAssertEqual(flips.status, 0, flips.stderr)
        let listed = try XCTUnwrap(
            (try JSONSerialization.jsonObject(with: Data(flips.stdout.utf8)) as? [String: Any])?["decisions"] as? [[String: Any]]
        )
        XCTAssertEqual(listed.count, 1, flips.stdout)
        XCTAssertEqual(listed.first?["allow"] as? Bool, true)
        let shadow = try XCTUnwrap(listed.first?["shadow"] as? [String: Any])
        XCTAssertEqual(shadow["allow"] as? Bool, false)
        XCTAssertEqual(shadow["reason"] as? String, "candidate says no")
        XCTAssertFalse((try String(contentsOf: serverLog, encoding: .utf8)).contains("must never run"))
    }
}
