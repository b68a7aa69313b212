import Foundation
import ShareFlowTestKit
import XCTest

/// The policy tools of SPEC §18 through the built binary, as an operator meets them: a `run`
/// decides, `shareflow decisions` reads what it decided (P3), `policy eval` asks a logged
/// decision again and one made from the store (P4), `policy replay` tries a candidate (P6).
final class PolicyToolingTests: XCTestCase {
    private var dir: URL!
    private var store: String { dir.appendingPathComponent("store.sqlite").path }
    private var global: [String] {
        ["--store", store, "--plugins", dir.appendingPathComponent("live").path, "--config", dir.appendingPathComponent("config.lua").path]
    }

    private static func gate(blocked: String) -> String {
        """
        return {
          name = "gate",
          version = "1.0.0",
          description = "Fixture: denies the accepts of blocked people.",
          config = { extra = { type = "string", default = "" } },
          setup = function(ctx)
            ctx.policy("share.accept", function(req)
              local email = req.caller and req.caller.email
              if email == "\(blocked)" or email == ctx.config.extra then
                return ctx.deny(email .. " is blocked")
              end
            end, { name = "accept" })
          end,
        }
        """
    }

    override func setUpWithError() throws {
        dir = try CLI.temporaryDirectory()
        try write(Self.gate(blocked: "eve@evil.test"), "live/gate/init.lua")
        try write("return { plugins = { gate = {} }, policies = { mask = { \"caller.phones\" } } }", "config.lua")
        try write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "owner@example.com" }
            local c = sf.as("owner@example.com"):container("iCloud.test")
            local zone = c.privateCloudDatabase:saveZone("Z")
            local r = sf.Record{ recordType = "Doc", zone = zone }
            local s = sf.Share{ rootRecord = r, title = "doc", publicPermission = "readOnly" }
            assert(not select(2, c.privateCloudDatabase:modifyRecords{ save = { r, s } }))
            for _, email in ipairs{ "eve@evil.test", "carol@example.com" } do
              sf.accounts.create{ email = email }
              local guest = sf.as(email):container("iCloud.test")
              guest:acceptShares{ guest:fetchShareMetadata{ s.url }[s.url] }
            end
            print(s.url)
            """,
            "decide.lua"
        )
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    private func write(_ text: String, _ path: String) throws {
        let url = dir.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try CLI.write(text, to: url)
    }

    private func json(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
    }

    /// Runs decide.lua: two accepts, Eve's denied; returns the share's URL.
    private func decide() throws -> String {
        let r = try CLI.run(["run"] + global + [dir.appendingPathComponent("decide.lua").path])
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testTheLogNamesWhoWhatAndWhereAndEvalAsksAgain() throws {
        let url = try decide()
        var r = try CLI.run(["decisions", "--json", "--denied"] + global)
        XCTAssertEqual(r.status, 0, r.stderr)
        let decisions = try XCTUnwrap(try json(r.stdout)["decisions"] as? [[String: Any]])
        XCTAssertEqual(decisions.count, 1, r.stdout)
        let denial = decisions[0]
        XCTAssertEqual(denial["point"] as? String, "share.accept")
        XCTAssertEqual(denial["container"] as? String, "iCloud.test")
        XCTAssertNotNil(denial["node"])
        let consulted = try XCTUnwrap(denial["consulted"] as? [[String: Any]])
        XCTAssertEqual(consulted.first?["policy"] as? String, "gate/accept")
        XCTAssertTrue((consulted.first?["location"] as? String ?? "").hasSuffix("gate/init.lua:10"), "\(consulted)")
        let input = try XCTUnwrap(denial["input"] as? [String: Any])
        XCTAssertEqual((input["caller"] as? [String: Any])?["email"] as? String, "eve@evil.test")
        XCTAssertNil((input["caller"] as? [String: Any])?["phones"], "policies.mask erased caller.phones")
        XCTAssertEqual(denial["erased"] as? [String], ["caller.phones"])
        XCTAssertEqual((denial["share"] as? [String: Any])?["zoneName"] as? String, "Z")

        // The text form, and the filters.
        r = try CLI.run(["decisions", "--point", "share.accept", "--since", "1h"] + global)
        XCTAssertEqual(r.stdout.split(separator: "\n").count, 2, r.stdout)
        XCTAssertTrue(r.stdout.contains("DENY") && r.stdout.contains("by gate/accept"), r.stdout)

        // The logged input, asked again by hand: a file, then standard input.
        let inputText = String(decoding: try JSONSerialization.data(withJSONObject: input), as: UTF8.self)
        try write(inputText, "eve.json")
        r = try CLI.run(["policy", "eval", "share.accept", "--input", dir.appendingPathComponent("eve.json").path] + global)
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("deny by gate/accept: eve@evil.test is blocked"), r.stdout)
        r = try CLI.run(["policy", "eval", "share.accept", "--explain", "--input", "-"] + global, stdin: inputText)
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stdout.contains("gate/accept: deny (eve@evil.test is blocked) at "), r.stdout)
        XCTAssertTrue(r.stdout.contains("gate/init.lua: 8-10"), "the lines the decision ran: \(r.stdout)")
        // From the store: Carol, about the share.
        r = try CLI.run(["policy", "eval", "share.accept", "--as", "carol@example.com", "--share", url] + global)
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("allow"), r.stdout)
        // Nothing asked by hand is logged.
        r = try CLI.run(["decisions", "--json"] + global)
        XCTAssertEqual((try json(r.stdout)["decisions"] as? [Any])?.count, 2, r.stdout)
    }

    func testBadInputIsOneLineAndExitTwo() throws {
        _ = try decide()
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let cases: [(String, String, String)] = [
            ("not json", "share.accept", "is not JSON"),
            ("[1, 2]", "share.accept", "must be a JSON object"),
            ("{\"caller\": 5}", "share.accept", "caller must be an object"),
            ("{\"point\": \"share.save\"}", "share.accept", "not share.accept"),
            ("{}", "share.nope", "unknown decision point"),
            ("{\"caller\": {\"email\": \"\\udc00\"}}", "share.accept", "not JSON"),
            (deep, "share.accept", "not JSON"),
        ]
        for (text, point, expected) in cases {
            let r = try CLI.run(["policy", "eval", point, "--input", "-"] + global, stdin: text)
            XCTAssertEqual(r.status, 2, "\(text.prefix(40)): \(r.stdout) \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
            XCTAssertTrue(r.stderr.contains(expected), "\(text.prefix(40)): \(r.stderr)")
        }
        // A huge input is refused before it is parsed (a file: standard input left unread
        // would break the test's pipe).
        try write(String(repeating: " ", count: 2 << 20) + "{}", "huge.json")
        var r = try CLI.run(["policy", "eval", "share.accept", "--input", dir.appendingPathComponent("huge.json").path] + global)
        XCTAssertEqual(r.status, 2, r.stderr)
        XCTAssertTrue(r.stderr.contains("at most"), r.stderr)
        r = try CLI.run(["decisions", "--limit", "100000000"] + global)
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("--limit"), r.stderr)
        r = try CLI.run(["decisions", "--since", "99999999999d"] + global)
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("--since"), r.stderr)
    }

    func testReplayListsWhatACandidateWouldFlip() throws {
        _ = try decide()
        // The same version: nothing flips.
        var r = try CLI.run(["policy", "replay", "--candidate", dir.appendingPathComponent("live").path] + global)
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("2 decisions replayed, 0 would flip"), r.stdout)
        // A candidate that also blocks Carol flips her accept, and only hers.
        try write(Self.gate(blocked: "carol@example.com"), "candidate/gate/init.lua")
        r = try CLI.run(["policy", "replay", "--candidate", dir.appendingPathComponent("candidate").path, "--json"] + global)
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        let flips = try XCTUnwrap(try json(r.stdout)["flips"] as? [[String: Any]])
        XCTAssertEqual(flips.count, 2, r.stdout)
        XCTAssertEqual(Set(flips.compactMap { $0["now"] as? String }), ["allow", "deny"])
        // A candidate that does not load is named; nothing is replayed.
        try write("return {", "broken/gate/init.lua")
        r = try CLI.run(["policy", "replay", "--candidate", dir.appendingPathComponent("broken").path] + global)
        XCTAssertEqual(r.status, 2, r.stdout + r.stderr)
        XCTAssertTrue(r.stderr.contains("gate"), r.stderr)
        XCTAssertEqual(r.stdout, "")
    }

    /// `policy eval` and `replay` change nothing (SPEC §18 P4): not what a plugin's setup
    /// writes, nor what its policy writes, nor the decisions its writes cause, nor its files.
    func testEvalAndReplayChangeNothing() throws {
        _ = try decide()
        try write(
            """
            return {
              name = "writer", version = "1.0.0", description = "Fixture: writes wherever it can.",
              setup = function(ctx)
                ctx.accounts.create{ email = "setup@example.com" }
                ctx.appendFile("writes.txt", "setup\\n")
              end,
            }
            """,
            "live/writer/init.lua"
        )
        try write(
            """
            return {
              name = "gate", version = "1.0.0", description = "Fixture: a policy that writes.",
              setup = function(ctx)
                ctx.policy("share.accept", function(req)
                  ctx.accounts.create{ email = "policy" .. math.random(1, 1e9) .. "@example.com" }
                  return ctx.deny("written, then denied")
                end, { name = "accept" })
              end,
            }
            """,
            "candidate/gate/init.lua"
        )
        // The candidate folder holds every enabled plugin: the writer as it is live.
        try write(try String(contentsOf: dir.appendingPathComponent("live/writer/init.lua"), encoding: .utf8), "candidate/writer/init.lua")
        try write("return { plugins = { gate = {}, writer = {} } }", "config.lua")
        try write("local sf = require('shareflow') print(sf.accounts.count())", "count.lua")
        let count = { () throws -> String in
            try CLI.run(["run", "--store", self.store, self.dir.appendingPathComponent("count.lua").path]).stdout
        }
        let before = try count()
        let logged = try CLI.run(["decisions", "--json", "--limit", "100"] + global).stdout
        var r = try CLI.run(
            ["policy", "eval", "share.accept", "--input", "-"] + global,
            stdin: #"{"caller":{"userRecordID":"_x","email":"eve@evil.test"}}"#
        )
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        r = try CLI.run(["policy", "replay", "--candidate", dir.appendingPathComponent("candidate").path] + global)
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("1 would flip"), r.stdout)
        XCTAssertEqual(try count(), before, "no account made by a setup or a policy stayed")
        XCTAssertEqual(try CLI.run(["decisions", "--json", "--limit", "100"] + global).stdout, logged, "nothing logged")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("plugin-data/writer/writes.txt").path))
    }

    /// A caller's own text in a reason cannot forge a line of `shareflow decisions`, and a
    /// huge title is logged cut.
    func testReasonsStayOnOneLineAndHugeInputsAreCut() throws {
        try write(
            """
            return {
              name = "gate", version = "1.0.0", description = "Fixture: quotes the title.",
              setup = function(ctx)
                ctx.policy("share.save", function(req) return ctx.deny("no " .. req.proposed.title) end, { name = "titles" })
              end,
            }
            """,
            "live/gate/init.lua"
        )
        try write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "owner@example.com" }
            local c = sf.as("owner@example.com"):container("iCloud.test")
            local zone = c.privateCloudDatabase:saveZone("Z")
            for _, title in ipairs{ "x\\n#999 forged allow\\27[31m", string.rep("t", 2 * 1024 * 1024) } do
              local r = sf.Record{ recordType = "Doc", zone = zone }
              c.privateCloudDatabase:modifyRecords{ save = { r, sf.Share{ rootRecord = r, title = title } } }
            end
            """,
            "titles.lua"
        )
        XCTAssertEqual(try CLI.run(["run"] + global + [dir.appendingPathComponent("titles.lua").path]).status, 0)
        var r = try CLI.run(["decisions"] + global)
        XCTAssertEqual(r.stdout.split(separator: "\n").count, 2, r.stdout)
        XCTAssertFalse(r.stdout.contains("\u{1b}"), r.stdout)
        r = try CLI.run(["decisions", "--json"] + global)
        XCTAssertLessThan(r.stdout.utf8.count, 64 * 1024, "a 2 MiB title logs a few kilobytes")
        XCTAssertTrue(r.stdout.contains("tttt…"), "a cut string ends in …")
    }
}
