import Foundation
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
        try CLI.write("""
            test("passes", function() expect.eq(1 + 1, 2) end)
            test("fails", function()
              expect.eq("a", "b", "letters")
            end)
            """, to: dir.appendingPathComponent("demo_test.lua"))
        let r = try CLI.run(["test", dir.path])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stdout.contains("demo_test.lua:3: letters: expected \"b\", got \"a\""), r.stdout)
        XCTAssertTrue(r.stdout.hasSuffix("1 passed, 1 failed\n"), r.stdout)
    }

    func testPersistenceAcrossProcesses() throws {
        let dir = try CLI.temporaryDirectory()
        let store = dir.appendingPathComponent("s.sqlite").path
        try CLI.write("""
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
            """, to: dir.appendingPathComponent("write.lua"))
        try CLI.write("""
            local sf = require("shareflow")
            local url = io.open(arg[1]):read("a")
            local c = sf.container("iCloud.x")
            local ms = c:fetchShareMetadata{ url }
            local shares = c:acceptShares{ ms[url] }
            print(shares[1].title, c.sharedCloudDatabase:fetchRecord(ms[url].hierarchicalRootRecordID).fields.title)
            """, to: dir.appendingPathComponent("read.lua"))
        let urlFile = dir.appendingPathComponent("url").path
        var r = try CLI.run(["run", "--store", store, "write.lua", urlFile], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        r = try CLI.run(["run", "--store", store, "--as", "bob@example.com", "read.lua", urlFile], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "Doc share\tHello\n")
    }
}
