import Foundation
import ShareFlowTestKit
import XCTest

/// SPEC §19 A4 as an operator meets it: `store backup` and `store copy` carry the blobs beside
/// the store (and into and out of PostgreSQL's chunks), `store check` reads them, and a saved
/// asset reads back byte-exact from every copy.
final class AssetStoreCommandTests: XCTestCase {
    private var dir: URL!

    override func setUpWithError() throws { dir = try CLI.temporaryDirectory() }
    override func tearDownWithError() throws { if let dir { try? FileManager.default.removeItem(at: dir) } }

    /// Runs `source` as Alice on `store`; its output.
    private func run(_ store: String, _ source: String) throws -> String {
        let file = dir.appendingPathComponent("script-\(UUID().uuidString).lua")
        try CLI.write(source, to: file)
        let r = try CLI.run(["run", "--store", store, "--as", "alice@example.com", file.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        return r.stdout
    }

    /// Every byte value, in a record's asset; the script prints the asset's checksum.
    private static let save = """
        local sf = require("shareflow")
        local bytes = {}
        for i = 0, 70000 do bytes[#bytes + 1] = string.char((i * 7) % 256) end
        local db = sf.container("iCloud.test").privateCloudDatabase
        local r = sf.Record{ recordType = "Photo", recordName = "p1", fields = { photo = sf.Asset{ data = table.concat(bytes) } } }
        assert(select(2, db:modifyRecords{ save = { r } }) == nil)
        print(db:fetchRecord(r.recordID).fields.photo.checksum)
        """

    /// Prints whether p1's asset reads back as saved.
    private static let read = """
        local sf = require("shareflow")
        local bytes = {}
        for i = 0, 70000 do bytes[#bytes + 1] = string.char((i * 7) % 256) end
        local db = sf.container("iCloud.test").privateCloudDatabase
        local a = db:fetchRecord(sf.RecordID{ recordName = "p1" }).fields.photo
        print(a:read() == table.concat(bytes), a.size)
        """

    func testBackupAndCopyCarryTheBlobs() throws {
        let store = dir.appendingPathComponent("store.sqlite").path
        XCTAssertEqual(try CLI.run(["run", "--store", store, "-e", "require('shareflow').accounts.create{ email = 'alice@example.com' }"]).status, 0)
        let sum = try run(store, Self.save).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(sum.count, 64, sum)
        XCTAssertTrue(FileManager.default.fileExists(atPath: "\(store).assets/\(sum.prefix(2))/\(sum)"))
        XCTAssertEqual(try CLI.run(["store", "check", "--store", store]).stdout, "store \(store): ok\n")

        let backup = dir.appendingPathComponent("backup.sqlite").path
        XCTAssertEqual(try CLI.run(["store", "backup", "--store", store, backup]).status, 0)
        XCTAssertEqual(try run(backup, Self.read), "true\t70001\n")
        XCTAssertEqual(try CLI.run(["store", "check", "--store", backup]).stdout, "store \(backup): ok\n")

        let copy = dir.appendingPathComponent("copy.sqlite").path
        let c = try CLI.run(["store", "copy", store, copy])
        XCTAssertEqual(c.status, 0, c.stderr)
        XCTAssertEqual(try run(copy, Self.read), "true\t70001\n")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".copying") }, [])

        // A blob lost from beside the store: `store check` names the record and fails.
        try FileManager.default.removeItem(atPath: "\(copy).assets/\(sum.prefix(2))/\(sum)")
        let broken = try CLI.run(["store", "check", "--store", copy])
        XCTAssertEqual(broken.status, 1)
        XCTAssertTrue(broken.stdout.contains("field 'photo' names asset \(sum.prefix(12))"), broken.stdout)

        // Into PostgreSQL's chunks and back out into files.
        guard let cluster = ProcessInfo.processInfo.environment["SHAREFLOW_TEST_CLUSTER"], !cluster.isEmpty else { return }
        let name = "assets_" + UUID().uuidString.prefix(8).lowercased()
        let admin = cluster.replacingOccurrences(of: #"/[^/]+$"#, with: "/postgres", options: .regularExpression)
        XCTAssertEqual(try CLI.runTool("psql", [admin, "-qc", "CREATE DATABASE \(name)"]).status, 0)
        let database = cluster.replacingOccurrences(of: #"/[^/]+$"#, with: "/\(name)", options: .regularExpression)
        let up = try CLI.run(["store", "copy", store, database])
        XCTAssertEqual(up.status, 0, up.stderr)
        XCTAssertEqual(try run(database, Self.read), "true\t70001\n")
        XCTAssertEqual(try CLI.run(["store", "check", "--store", database]).status, 0)
        let back = dir.appendingPathComponent("back.sqlite").path
        let down = try CLI.run(["store", "copy", database, back])
        XCTAssertEqual(down.status, 0, down.stderr)
        XCTAssertEqual(try run(back, Self.read), "true\t70001\n")
        XCTAssertEqual(try CLI.run(["store", "check", "--store", back]).stdout, "store \(back): ok\n")
        XCTAssertEqual(try Tools.sqliteRows(back, "SELECT COUNT(*) FROM asset_blob"), "(0,)\n")
    }

    /// A sandboxed script cannot make the engine read a file for it (SPEC §8, §19 A2): no
    /// `sf.Asset{ path = }`; `data` works, and a saved asset's table names no file.
    func testASandboxedScriptGetsNoPathAndNoFile() throws {
        let store = dir.appendingPathComponent("store.sqlite").path
        XCTAssertEqual(try CLI.run(["run", "--store", store, "-e", "require('shareflow').accounts.create{ email = 'alice@example.com' }"]).status, 0)
        let file = dir.appendingPathComponent("sandboxed.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            print(pcall(sf.Asset, { path = "/etc/passwd" }))
            local db = sf.container("iCloud.test").privateCloudDatabase
            local a = sf.Asset{ data = "ok" }
            a.data = nil
            a.path = "/etc/passwd"
            local r = sf.Record{ recordType = "Note", recordName = "n", fields = { ok = sf.Asset{ data = "fine" } } }
            print(pcall(function() r.fields.bad = a end))
            assert(select(2, db:modifyRecords{ save = { r } }) == nil)
            local saved = db:fetchRecord(r.recordID).fields.ok
            print(saved:read(), saved.path)
            """,
            to: file
        )
        let r = try CLI.run(["run", "--store", store, "--as", "alice@example.com", "--sandbox", file.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, r.stdout)
        XCTAssertTrue(lines[0].hasPrefix("false") && lines[0].contains("not available in a sandboxed state"), lines[0])
        XCTAssertTrue(lines[1].hasPrefix("false") && lines[1].contains("not available in a sandboxed state"), lines[1])
        XCTAssertEqual(lines[2], "fine\tnil")
    }

    /// A save killed with SIGKILL at any point leaves no record naming missing bytes: blobs are
    /// made whole before their record's transaction; what is left is orphans (collected past
    /// the grace) and at most an unfinished temporary file.
    func testAKillLeavesNoRecordNamingMissingBytes() throws {
        let store = dir.appendingPathComponent("store.sqlite").path
        XCTAssertEqual(try CLI.run(["run", "--store", store, "-e", "require('shareflow').accounts.create{ email = 'alice@example.com' }"]).status, 0)
        let script = dir.appendingPathComponent("loop.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            local db = sf.container("iCloud.test").privateCloudDatabase
            local n = 0
            while true do
              n = n + 1
              local r = sf.Record{ recordType = "Photo", recordName = "p" .. (n % 7),
                fields = { photo = sf.Asset{ data = string.rep(string.char(n % 256), 200000 + n) } } }
              db:modifyRecords{ save = { r }, savePolicy = "allKeys" }
              io.write(n, "\\n"); io.flush()
            end
            """,
            to: script
        )
        for round in 0..<3 {
            let out = dir.appendingPathComponent("out-\(round).txt")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CLI.binary)
            process.arguments = ["run", "--store", store, "--as", "alice@example.com", script.path]
            process.standardOutput = try FileHandle(forWritingTo: out)
            process.standardError = FileHandle.nullDevice
            try process.run()
            let deadline = Date().addingTimeInterval(60)
            while process.isRunning, Date() < deadline, ((try? String(contentsOf: out, encoding: .utf8))?.count ?? 0) < 40 + round * 13 {
                usleep(2_000)
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        let check = try CLI.run(["store", "check", "--store", store, "--json"])
        XCTAssertEqual(check.status, 0, check.stdout)
        XCTAssertFalse(check.stdout.contains("names asset"), check.stdout)
        // Every record reads its bytes back whole.
        let read = try CLI.run([
            "run", "--store", store, "--as", "alice@example.com", "-e",
            """
            local sf = require("shareflow")
            local db = sf.container("iCloud.test").privateCloudDatabase
            local found = 0
            for i = 0, 6 do
              local r = db:fetchRecord(sf.RecordID{ recordName = "p" .. i })
              if r then
                local bytes = r.fields.photo:read()
                assert(#bytes == r.fields.photo.size and bytes == string.rep(bytes:sub(1, 1), #bytes))
                found = found + 1
              end
            end
            print(found)
            """,
        ])
        XCTAssertEqual(read.status, 0, read.stderr)
        XCTAssertGreaterThan(Int(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0, 0, read.stdout)
    }
}
