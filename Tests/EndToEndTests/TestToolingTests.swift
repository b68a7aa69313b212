import Foundation
import ShareFlowTestKit
import XCTest

/// `shareflow test`'s tooling (SPEC §18 P5) as a plugin's author meets it, through the built
/// binary: --filter, --coverage (its report, lcov file and threshold), test.cases and the
/// decision helpers, on fixture plugins written to a temporary folder.
final class TestToolingTests: XCTestCase {
    private var dir: URL!

    override func setUpWithError() throws {
        dir = try CLI.temporaryDirectory()
        // A policy plugin: one function no test calls (its line 10), and a denial.
        try write(
            """
            return {
              name = "gate",
              version = "1.0.0",
              description = "Fixture: denies the accepts of blocked people.",
              config = { blocked = { type = "list", items = "string", default = { "eve@evil.test" } } },
              setup = function(ctx)
                local blocked = {}
                for _, email in ipairs(ctx.config.blocked) do blocked[email] = true end
                local function neverCalled()
                  return "nobody calls this"
                end
                ctx.policy("share.accept", function(req)
                  local email = req.caller and req.caller.email
                  if blocked[email] then
                    return ctx.deny(email .. " is blocked")
                  end
                end, { name = "accept" })
              end,
            }
            """,
            to: dir.appendingPathComponent("gate/init.lua")
        )
        // A plugin whose setup raises halfway: lines 6 and 7 run, 8 raises, 9 never runs.
        try write(
            """
            return {
              name = "crashy",
              version = "1.0.0",
              description = "Fixture: its setup fails halfway.",
              setup = function(ctx)
                local steps = 1
                steps = steps + 1
                error("crashy: setup fails after " .. steps .. " steps")
                ctx.log.info("never reached")
              end,
            }
            """,
            to: dir.appendingPathComponent("crashy/init.lua")
        )
        try write(
            """
            local sf = require("shareflow")

            local function accept(email)
              sf.accounts.create{ email = "owner@example.com" }
              sf.accounts.create{ email = email }
              local c = sf.as("owner@example.com"):container("iCloud.test")
              local zone = c.privateCloudDatabase:saveZone("Z")
              local r = sf.Record{ recordType = "Doc", zone = zone }
              local s = sf.Share{ rootRecord = r, title = "doc" }
              s:addParticipant(c:fetchShareParticipants{ email }[1])
              assert(not select(2, c.privateCloudDatabase:modifyRecords{ save = { r, s } }))
              local guest = sf.as(email):container("iCloud.test")
              local _, err = guest:acceptShares{ guest:fetchShareMetadata{ s.url }[s.url] }
              return err
            end

            test.cases("members accepted", { "bob@example.com", "carol@example.com" }, function(email)
              expect.allowed(accept(email))
            end)

            test("outsiders denied", function()
              expect.denied(accept("eve@evil.test"), "eve@evil%.test is blocked")
            end)

            test("crashy plugin", function()
              sf.plugins.load("crashy")
            end)
            """,
            to: dir.appendingPathComponent("gate/gate_test.lua")
        )
    }

    /// Writes a fixture file, its folders first.
    private func write(_ text: String, to url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try CLI.write(text, to: url)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    private var gate: String { dir.appendingPathComponent("gate").path }

    func testFilterRunsTheTestsNamedAndNoMatchIsAnError() throws {
        var r = try CLI.run(["test", "--filter", "members", gate])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("ok   \(gate)/gate_test.lua: members accepted[1]\n"), r.stdout)
        XCTAssertTrue(r.stdout.contains("ok   \(gate)/gate_test.lua: members accepted[2]\n"), r.stdout)
        XCTAssertFalse(r.stdout.contains("outsiders"), r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("2 passed, 0 failed\n"), r.stdout)
        // Plain text: brackets are no pattern.
        r = try CLI.run(["test", "--filter", "accepted[2]", gate])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.hasSuffix("ok   \(gate)/gate_test.lua: members accepted[2]\n1 passed, 0 failed\n"), r.stdout)
        // Case-sensitive.
        r = try CLI.run(["test", "--filter", "Members", gate])
        XCTAssertEqual(r.status, 1, r.stdout)
        XCTAssertEqual(r.stderr, "shareflow: no tests match --filter Members\n")
        XCTAssertEqual(r.stdout, "")
    }

    func testCoverageNamesTheLinesNotRun() throws {
        let r = try CLI.run(["test", "--coverage", "--filter", "outsiders", gate])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        // Line 10: the function nobody calls; the rest ran (the denial's line 15 included). Line 9
        // holds no code: the function is made on its `end` line, 11.
        let file = try XCTUnwrap(lines.first { $0.hasPrefix("\(gate)/init.lua ") }, r.stdout)
        XCTAssertTrue(file.hasSuffix("  93.7%  (15/16)  not run: 10"), file)
        XCTAssertFalse(r.stdout.contains("gate_test.lua  "), "test files do not count: \(r.stdout)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("total ") && $0.hasSuffix("  93.7%  (15/16)") }, r.stdout)
        XCTAssertEqual(lines.last, "1 passed, 0 failed", "the summary stays the last line")
        // Without --coverage: no report.
        let plain = try CLI.run(["test", "--filter", "outsiders", gate])
        XCTAssertFalse(plain.stdout.contains("total"), plain.stdout)
    }

    func testTheLinesRunBeforeAPluginRaisedCount() throws {
        let r = try CLI.run(["test", "--coverage", "--filter", "crashy", gate])
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("FAIL \(gate)/gate_test.lua: crashy plugin"), r.stdout)
        XCTAssertTrue(r.stdout.contains("crashy: setup fails after 2 steps"), r.stdout)
        let crashy = dir.appendingPathComponent("crashy/init.lua").path
        let line = try XCTUnwrap(r.stdout.split(separator: "\n").first { $0.hasPrefix(crashy + " ") }, r.stdout)
        XCTAssertTrue(line.hasSuffix("not run: 9"), String(line))
        XCTAssertTrue(r.stdout.hasSuffix("0 passed, 1 failed\n"), r.stdout)
    }

    /// Lua has one hook per state: coverage's line hook and the CPU budget's share it. Both work
    /// at once: a plugin's runaway call still ends at its budget, a test at its timeout.
    func testCoverageAndBudgetsShareTheHook() throws {
        try write(
            """
            return {
              name = "spin",
              version = "1.0.0",
              description = "Fixture: its authenticator never returns.",
              setup = function(ctx)
                ctx.authenticate(function()
                  local turns = 0
                  while true do turns = turns + 1 end
                end, { name = "forever" })
              end,
            }
            """,
            to: dir.appendingPathComponent("spin/init.lua")
        )
        try write(
            """
            test("a runaway plugin ends at its budget", function()
              local who, err = test.authenticate{ headers = { ["x-user"] = "someone" } }
              expect.eq(who, nil)
              expect.denied(err, "authenticator 'spin/forever' failed: .*CPU budget of 50 ms exceeded")
            end)
            test("a runaway test ends at its timeout", function()
              while true do end
            end)
            """,
            to: dir.appendingPathComponent("spin/spin_test.lua")
        )
        let spin = dir.appendingPathComponent("spin").path
        let r = try CLI.run(["test", "--coverage", "--timeout", "0.5", spin], timeout: 60)
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("ok   \(spin)/spin_test.lua: a runaway plugin ends at its budget\n"), r.stdout)
        XCTAssertTrue(r.stdout.contains("timed out after 0.5 s (--timeout)"), r.stdout)
        XCTAssertTrue(r.stdout.contains("\(spin)/init.lua  100.0%  (10/10)\n"), r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("1 passed, 1 failed\n"), r.stdout)
    }

    func testLcovReportAndThreshold() throws {
        let report = dir.appendingPathComponent("out/coverage.info")
        try FileManager.default.createDirectory(at: report.deletingLastPathComponent(), withIntermediateDirectories: true)
        // The paths after the format and the file are the paths to test.
        var r = try CLI.run(["test", "--filter", "outsiders", "--coverage-report", "lcov", report.path, gate])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        let lcov = try String(contentsOf: report, encoding: .utf8)
        XCTAssertTrue(lcov.hasPrefix("TN:\nSF:\(gate)/init.lua\n"), lcov)
        XCTAssertTrue(lcov.contains("\nDA:8,1\n"), lcov)
        XCTAssertTrue(lcov.contains("\nDA:10,0\n"), lcov)
        XCTAssertFalse(lcov.contains("DA:9,"), "line 9 compiles to nothing (the CLOSURE is on `end`'s line 11): \(lcov)")
        XCTAssertTrue(lcov.hasSuffix("\nLF:16\nLH:15\nend_of_record\n"), lcov)
        XCTAssertFalse(lcov.contains("gate_test.lua"), lcov)

        r = try CLI.run(["test", "--filter", "outsiders", "--coverage-threshold", "90", gate])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        r = try CLI.run(["test", "--filter", "outsiders", "--coverage-threshold", "100", gate])
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.hasSuffix("1 passed, 0 failed\n"), r.stdout)
        XCTAssertEqual(r.stderr, "shareflow: coverage 93.7% (15/16 lines) is below --coverage-threshold 100%\n")

        r = try CLI.run(["test", "--coverage-report", "xml", report.path, gate])
        XCTAssertEqual(r.status, 2, r.stdout + r.stderr)
        XCTAssertEqual(r.stderr, "shareflow: --coverage-report: unknown format 'xml' (the only format is lcov)\n")
        XCTAssertEqual(r.stdout, "")
        r = try CLI.run(["test", "--coverage-threshold", "101", gate])
        XCTAssertEqual(r.status, 2, r.stdout + r.stderr)
    }

    /// Helpers beside tests outside a plugin's folder are the tests' own: they do not count; a
    /// plugin those tests load does.
    func testHelpersBesideTestsDoNotCount() throws {
        let suite = dir.appendingPathComponent("suite")
        try write("return { double = function(x) return 2 * x end }\n", to: suite.appendingPathComponent("helpers.lua"))
        try write(
            """
            local helpers = require("helpers")
            test("a helper and a plugin", function()
              expect.eq(helpers.double(2), 4)
              require("shareflow").plugins.load("gate")
            end)
            """,
            to: suite.appendingPathComponent("suite_test.lua")
        )
        let r = try CLI.run(["test", "--plugins", dir.path, "--coverage", suite.path])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertFalse(r.stdout.contains("helpers.lua"), r.stdout)
        XCTAssertTrue(r.stdout.contains("\(gate)/init.lua  "), r.stdout)
    }

    func testCasesAndDecisionHelpers() throws {
        let suite = dir.appendingPathComponent("decisions")
        try write(
            """
            test.cases("squares", { { 2, 4 }, { 3, 9 }, { 4, 15 } }, function(row, i)
              expect.eq(row[1] * row[1], row[2], "row " .. i)
            end)

            local denial = { allow = false, reason = "eve@evil.test is blocked", policy = "gate/accept", trace = {} }
            local err = { code = "permissionFailure", message = "policy 'gate/accept' denied: eve@evil.test is blocked" }
            local batch = { code = "partialFailure", message = "failed", partialErrors = {
              a = { code = "batchRequestFailed", message = "batch" }, b = err } }

            test("decisions and errors", function()
              expect.allowed({ allow = true, policy = "gate/accept" })
              expect.allowed(nil)
              expect.denied(denial, "is blocked")
              expect.denied(err, "gate/accept")
              expect.denied(batch, "eve@evil%.test")
              expect.denied(err)
              expect.raises(function() expect.allowed(denial) end, "expected allowed, got denied by gate/accept: eve@evil.test is blocked")
              expect.raises(function() expect.allowed(err) end, "expected allowed, got error permissionFailure")
              expect.raises(function() expect.denied({ allow = true }) end, "expected a denial, got allowed")
              expect.raises(function() expect.denied(denial, "^nobody") end, "does not match")
              expect.raises(function() expect.denied({ code = "zoneNotFound", message = "no zone" }) end,
                "expected a denial %(permissionFailure%), got error zoneNotFound: no zone")
              expect.raises(function() expect.denied(err, 7) end, "bad argument #2 to 'denied' %(string expected, got number%)")
            end)

            test("nil is no denial", function()
              expect.denied(nil, "blocked")
            end)
            """,
            to: suite.appendingPathComponent("decisions_test.lua")
        )
        // Relative: Lua shortens a long chunk name in its messages (LUA_IDSIZE).
        let file = "decisions/decisions_test.lua"
        var r = try CLI.run(["test", "decisions"], cwd: dir)
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("ok   \(file): squares[1]\n"), r.stdout)
        XCTAssertTrue(r.stdout.contains("ok   \(file): squares[2]\n"), r.stdout)
        XCTAssertTrue(r.stdout.contains("FAIL \(file): squares[3]\n    \(file):2: row 3: expected 15, got 16"), r.stdout)
        XCTAssertTrue(r.stdout.contains("ok   \(file): decisions and errors\n"), r.stdout)
        XCTAssertTrue(r.stdout.contains("FAIL \(file): nil is no denial\n    \(file):27: expected a denial, got nil (allowed)"), r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("3 passed, 2 failed\n"), r.stdout)

        // Bad arguments fail the file's load as lauxlib words them, naming the caller's line.
        try write("test.cases(\"rows\", nil, function() end)\n", to: suite.appendingPathComponent("decisions_test.lua"))
        r = try CLI.run(["test", "decisions"], cwd: dir)
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("\(file):1: bad argument #2 to 'cases' (table expected, got nil)"), r.stdout)
        try write("test.cases(\"rows\", {})\n", to: suite.appendingPathComponent("decisions_test.lua"))
        r = try CLI.run(["test", "decisions"], cwd: dir)
        XCTAssertTrue(r.stdout.contains("\(file):1: bad argument #3 to 'cases' (function expected, got no value)"), r.stdout)
    }

    /// Decisions from real policies: an operation's denial and an allowed accept.
    func testDecisionHelpersOnAnOperationsErrors() throws {
        let r = try CLI.run(["test", "--filter", "ed", gate])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.hasSuffix("3 passed, 0 failed\n"), r.stdout)
    }
}
