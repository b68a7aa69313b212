import Foundation
import ShareFlowTestKit
import XCTest

/// The Lua test files run through `shareflow test`, as a user runs theirs.
final class LuaSuiteTests: XCTestCase {
    func testRulesSuitePasses() throws {
        let r = try CLI.run(["test", "Tests/lua"])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains(" 0 failed") || r.stdout.hasSuffix(", 0 failed\n"), r.stdout)
        let summary = r.stdout.split(separator: "\n").last.map(String.init) ?? ""
        XCTAssertTrue(summary.hasSuffix("passed, 0 failed"), summary)
        XCTAssertFalse(summary.hasPrefix("0 passed"), "tests ran: \(summary)")
    }

    func testFailuresAreReportedWithFileLineAndExitNonZero() throws {
        let dir = try CLI.temporaryDirectory()
        try CLI.write(
            """
            test("passes", function() expect.eq(1 + 1, 2) end)
            test("fails", function()
              expect.eq("a", "b", "letters")
            end)
            """,
            to: dir.appendingPathComponent("demo_test.lua")
        )
        let r = try CLI.run(["test", dir.path])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stdout.contains("demo_test.lua:3: letters: expected \"b\", got \"a\""), r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("1 passed, 1 failed\n"), r.stdout)
    }

    func testPersistenceAcrossProcesses() throws {
        let dir = try CLI.temporaryDirectory()
        let store = dir.appendingPathComponent("s.sqlite").path
        try CLI.write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "alice@example.com" }
            sf.accounts.create{ email = "bob@example.com" }
            local c = sf.as("alice@example.com"):container("iCloud.x")
            local zone = c.privateCloudDatabase:saveZone("Z")
            local r = sf.Record{ recordType = "Doc", recordName = "d1", zone = zone, fields = { title = "Hello" } }
            local s = sf.Share{ rootRecord = r, title = "Doc share" }
            s:addParticipant(c:fetchShareParticipants{ { emailAddress = "bob@example.com" } }[1])
            assert(not select(2, c.privateCloudDatabase:modifyRecords{ save = { r, s } }))
            io.open(arg[1], "w"):write(s.url):close()
            """,
            to: dir.appendingPathComponent("write.lua")
        )
        try CLI.write(
            """
            local sf = require("shareflow")
            local url = io.open(arg[1]):read("a")
            local c = sf.container("iCloud.x")
            local ms = c:fetchShareMetadata{ url }
            local shares = c:acceptShares{ ms[url] }
            print(shares[1].title, c.sharedCloudDatabase:fetchRecord(ms[url].hierarchicalRootRecordID).fields.title)
            """,
            to: dir.appendingPathComponent("read.lua")
        )
        let urlFile = dir.appendingPathComponent("url").path
        var r = try CLI.run(["run", "--store", store, "write.lua", urlFile], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        r = try CLI.run(["run", "--store", store, "--as", "bob@example.com", "read.lua", urlFile], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "Doc share\tHello\n")
    }
}

/// `shareflow test` as a user runs it on a test that hangs: results stream as they come, a
/// per-test timeout fails it, Ctrl-C prints the summary so far, and nothing matched is an error.
final class TestCommandTests: XCTestCase {
    private func hangingTests(in dir: URL) throws -> URL {
        let file = dir.appendingPathComponent("hang_test.lua")
        try CLI.write(
            """
            test("first", function() expect.eq(1, 1) end)
            test("loops", function() while true do end end)
            test("swallows its error", function() while true do pcall(function() while true do end end) end end)
            test("in a pattern", function() string.find(string.rep("a", 3e5), ".-.-.-.-.-b") end)
            test("last", function() expect.eq(2, 2) end)
            """,
            to: file
        )
        return file
    }

    func testATimeoutFailsAHangingTestAndTheRunGoesOn() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try CLI.run(["test", "--timeout", "0.3", try hangingTests(in: dir).path], timeout: 60)
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertEqual(r.stdout.components(separatedBy: "timed out after 0.3 s (--timeout)").count - 1, 3, r.stdout)
        XCTAssertTrue(r.stdout.contains("ok   \(dir.path)/hang_test.lua: last"), r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("2 passed, 3 failed\n"), r.stdout)
        XCTAssertEqual(try CLI.run(["test", "--timeout=-1", dir.path]).status, 64, "a negative timeout is a usage error")
    }

    func testNothingMatchedIsAnError() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try CLI.run(["test", dir.path])
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.stderr, "shareflow: no tests found in \(dir.path) (test files are named *_test.lua)\n")
        XCTAssertEqual(r.stdout, "")
    }

    /// Results reach a pipe as they come, and Ctrl-C ends the stuck test with the summary so far.
    func testResultsStreamAndCtrlCPrintsTheSummarySoFar() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try hangingTests(in: dir)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.binary)
        process.arguments = ["test", "--timeout", "0", file.path]
        let out = dir.appendingPathComponent("out")
        XCTAssertTrue(FileManager.default.createFile(atPath: out.path, contents: nil))
        process.standardOutput = try FileHandle(forWritingTo: out)
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        var seen = ""
        while Date() < deadline, !seen.contains("ok   \(file.path): first") {
            usleep(20_000)
            seen = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
        }
        XCTAssertTrue(seen.contains("ok   \(file.path): first"), "the first result is out while the second test runs: \(seen)")
        XCTAssertTrue(process.isRunning, "the second test hangs (no timeout)")
        usleep(200_000)
        kill(process.processIdentifier, SIGINT)
        let end = Date().addingTimeInterval(30)
        while process.isRunning && Date() < end { usleep(20_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        let text = try String(contentsOf: out, encoding: .utf8)
        XCTAssertEqual(process.terminationStatus, 130, text)
        XCTAssertTrue(text.contains("FAIL \(file.path): loops\n    interrupted"), text)
        XCTAssertTrue(text.hasSuffix("interrupted (Ctrl-C): the tests after this one did not run\n1 passed, 1 failed\n"), text)
    }
}
