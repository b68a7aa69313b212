import Foundation
import GRDB
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// A store of an older schema (v6, v7, v8) met by real `shareflow` processes (the built
/// binary): several opening it at once (each may find the schema behind and migrate), and a
/// read-only copy (a read-only folder, the process not root).
final class OlderStoreProcessTests: XCTestCase {
    /// Reads Alice's and Bob's feeds of zone Z from the start, two records a page: names,
    /// deletions and the final tokens, one line each.
    static let readFeeds = """
        local sf = require("shareflow")
        local zone = { zoneName = "Z", ownerName = "_alice" }
        for _, who in ipairs{ { "alice@example.com", "privateCloudDatabase" }, { "bob@example.com", "sharedCloudDatabase" } } do
          local db = sf.as(who[1]):container("iCloud.t")[who[2]]
          local names, gone, token = {}, {}, nil
          repeat
            local page = assert(db:recordZoneChanges{ zoneID = zone, since = token, resultsLimit = 2 })
            for _, r in ipairs(page.modifications) do names[#names + 1] = r.recordName end
            for _, d in ipairs(page.deletions) do gone[#gone + 1] = d.recordID.recordName end
            token = page.changeToken
          until not page.moreComing
          table.sort(names); table.sort(gone)
          assert(db:currentChangeToken(zone) == token, who[1] .. ": currentChangeToken is not where the fetch ended")
          print(who[1], table.concat(names, ","), table.concat(gone, ","), token)
        end
        """

    /// v7 and v8 stores with a log as those versions wrote it; v6 without one.
    static func oldStore(_ version: String) throws -> (dir: URL, path: String) {
        switch version {
        case "v6":
            return try makeOldStore(upTo: "v6", migrator: Store.migrator(), sql: ChangeLogMigrationTests.rows)
        case "v7":
            return try ChangeLogMigrationTests.storeWithLog(upTo: "v7", changeSeq: 5, ChangeLogMigrationTests.v7Log)
        default:
            return try ChangeLogMigrationTests.storeWithLog(
                upTo: "v8",
                changeSeq: 7,
                """
                INSERT INTO zone_change (zoneID, name, type, seq, deleted, at, recordID) VALUES
                    (1, 'a', 'Note', 6, 0, 0, 1), (1, 'b', 'Note', 5, 0, 0, 2), (1, 'share-z', 'cloudkit.share', 2, 0, 0, 3), (1, 'gone', 'Note', 7, 1, 0, NULL);
                INSERT INTO view_change (zoneID, viewerID, name, type, seq, deleted, at, recordID) VALUES
                    (1, 2, 'a', 'Note', 6, 0, 0, 1), (1, 2, 'b', 'Note', 5, 0, 0, 2), (1, 2, 'share-z', 'cloudkit.share', 2, 0, 0, 3),
                    (1, 2, 'gone', 'Note', 7, 1, 0, NULL);
                INSERT INTO feed (id, accountID, container, environment, scope, seq, keptFrom) VALUES
                    (1, 1, 'iCloud.t', 'development', 'private', 1, 0), (2, 2, 'iCloud.t', 'development', 'shared', 1, 0);
                INSERT INTO feed_change (feedID, zoneName, ownerName, seq, deleted, reason, at) VALUES
                    (1, 'Z', '_alice', 1, 0, NULL, 0), (2, 'Z', '_alice', 1, 0, NULL, 0);
                """
            )
        }
    }

    /// Starts the binary with `arguments` (through `prefix`, e.g. unshare), output to files in `dir`.
    static func start(_ arguments: [String], in dir: URL, prefix: [String] = []) throws -> (Process, URL, URL) {
        let id = UUID().uuidString
        let out = dir.appendingPathComponent("\(id).out")
        let err = dir.appendingPathComponent("\(id).err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: prefix.first ?? CLI.binary)
        process.arguments = prefix.isEmpty ? arguments : Array(prefix.dropFirst()) + [CLI.binary] + arguments
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return (process, out, err)
    }

    static func finish(_ started: (Process, URL, URL), timeout: TimeInterval = 30) -> CLI.Result {
        let deadline = Date().addingTimeInterval(timeout)
        while started.0.isRunning && Date() < deadline { usleep(5_000) }
        if started.0.isRunning { kill(started.0.processIdentifier, SIGKILL) }
        started.0.waitUntilExit()
        return CLI.Result(
            status: started.0.terminationStatus,
            stdout: (try? String(contentsOf: started.1, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: started.2, encoding: .utf8)) ?? ""
        )
    }

    func testSeveralProcessesOpeningAnOldStoreAtOnceMigrateItOnce() throws {
        guard FileManager.default.isExecutableFile(atPath: CLI.binary) else { throw XCTSkip("no built shareflow at \(CLI.binary)") }
        for version in ["v6", "v7", "v8"] {
            for round in 0..<4 {
                let (dir, path) = try Self.oldStore(version)
                defer { try? FileManager.default.removeItem(at: dir) }
                let script = dir.appendingPathComponent("read.lua")
                try CLI.write(Self.readFeeds, to: script)
                // Readers of the feeds and `store info`, started together: each finds the
                // schema behind.
                var started: [(Process, URL, URL)] = []
                for k in 0..<6 {
                    started.append(
                        try Self.start(
                            k == 5 && round % 2 == 0 ? ["store", "info", "--store", path] : ["run", "--store", path, script.path],
                            in: dir
                        )
                    )
                }
                let results = started.map { Self.finish($0) }
                for r in results { XCTAssertEqual(r.status, 0, "\(version): \(r.stderr)") }
                let feeds = results.filter { $0.stdout.hasPrefix("alice") }.map(\.stdout)
                XCTAssertFalse(feeds.isEmpty)
                XCTAssertEqual(
                    Set(feeds).count,
                    1,
                    "\(version): every process read the same feeds, tokens and all:\n\(feeds.joined(separator: "\n"))"
                )
                XCTAssertTrue(feeds.first?.contains("alice@example.com\ta,b,share-z\t") == true, "\(version): \(feeds.first ?? "")")
                XCTAssertTrue(feeds.first?.contains("bob@example.com\ta,b,share-z\t") == true, "\(version): \(feeds.first ?? "")")

                let queue = try DatabaseQueue(path: path)
                try queue.read { db in
                    XCTAssertEqual(
                        try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier"),
                        (1...Store.schemaVersion).map { "v\($0)" }.sorted(),
                        "\(version): each migration recorded once"
                    )
                    XCTAssertEqual(
                        try String.fetchOne(db, sql: "SELECT value FROM shareflow_meta WHERE key = 'schemaVersion'"),
                        String(Store.schemaVersion)
                    )
                    XCTAssertEqual(
                        try Int.fetchOne(
                            db,
                            sql: """
                                SELECT COUNT(*) FROM (SELECT zoneID, seq FROM (SELECT zoneID, seq FROM record WHERE seq > 0 UNION ALL SELECT zoneID, seq FROM zone_change)
                                GROUP BY 1, 2 HAVING COUNT(*) > 1)
                                """
                        ),
                        0,
                        "\(version): a position taken twice (the contents logged twice?)"
                    )
                    XCTAssertEqual(
                        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM record r JOIN zone z ON z.id = r.zoneID WHERE r.seq > z.changeSeq"),
                        0
                    )
                    XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM feed_change GROUP BY feedID, seq HAVING COUNT(*) > 1") ?? 0, 0)
                }
                try queue.close()
                XCTAssertEqual(try Store(path: path).check().problems, [], version)
                // Read again by one process: the same.
                let again = try CLI.run(["run", "--store", path, script.path])
                XCTAssertEqual(again.stdout, feeds.first, version)
            }
        }
    }

    /// A read-only old store (its folder read-only, the process `nobody`): refused with the
    /// reason, unchanged; once migrated (by a process that may write), read-only it reads its
    /// feeds as the writer did.
    func testAReadOnlyOldStoreIsRefusedUnchangedAndReadsOnceMigrated() throws {
        guard FileManager.default.isExecutableFile(atPath: CLI.binary) else { throw XCTSkip("no built shareflow at \(CLI.binary)") }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { throw XCTSkip("no unshare") }
        let nobody = ["/usr/bin/unshare", "--user", "--map-user=65534"]
        for version in ["v6", "v8"] {
            let (dir, path) = try Self.oldStore(version)
            let scripts = try makeTemporaryFolder("sf-ro-scripts")
            defer {
                chmod(dir.path, 0o755)
                try? FileManager.default.removeItem(at: dir)
                try? FileManager.default.removeItem(at: scripts)
            }
            let script = scripts.appendingPathComponent("read.lua")
            try CLI.write(Self.readFeeds, to: script)
            chmod(scripts.path, 0o755)
            chmod(script.path, 0o644)
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            XCTAssertEqual(chmod(dir.path, 0o555), 0)
            guard Self.finish(try Self.start(["--version"], in: scripts, prefix: nobody)).status == 0 else {
                throw XCTSkip("user namespaces are not available here")
            }
            for args in [["store", "info", "--store", path], ["run", "--store", path, script.path]] {
                let r = Self.finish(try Self.start(args, in: scripts, prefix: nobody))
                XCTAssertNotEqual(r.status, 0, "\(version) \(args[0]): \(r.stdout)")
                XCTAssertTrue(r.stderr.contains("read-only and its schema needs upgrading"), "\(version) \(args[0]): \(r.stderr)")
            }
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), before, "\(version): the read-only store was not changed")
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["old.sqlite"], "nothing made beside it")

            // Migrated by a writer, then read-only again.
            chmod(dir.path, 0o755)
            let written = try CLI.run(["run", "--store", path, script.path])
            XCTAssertEqual(written.status, 0, written.stderr)
            XCTAssertEqual(chmod(dir.path, 0o555), 0)
            let info = Self.finish(try Self.start(["store", "info", "--store", path], in: scripts, prefix: nobody))
            XCTAssertEqual(info.status, 0, "\(version): \(info.stderr)")
            let read = Self.finish(try Self.start(["run", "--store", path, script.path], in: scripts, prefix: nobody))
            XCTAssertEqual(read.status, 0, "\(version): \(read.stderr)")
            XCTAssertEqual(read.stdout, written.stdout, "\(version): the read-only copy reads the feeds the writer did")
        }
    }

    /// The same from threads of one process, each its own connection, released together.
    func testSeveralConnectionsOpeningAnOldStoreAtOnceMigrateItOnce() throws {
        for version in ["v6", "v7", "v8"] {
            for _ in 0..<3 {
                let (dir, path) = try Self.oldStore(version)
                defer { try? FileManager.default.removeItem(at: dir) }
                let read = Gathered<String>()
                let failures = Gathered<String>()
                DispatchQueue.concurrentPerform(iterations: 6) { _ in
                    do {
                        let (_, _, _, owner, viewer) = try ChangeLogMigrationTests.firstReads(path)
                        let line = [owner, viewer].map { "\($0.modifications.map(\.recordID.recordName).sorted()) \($0.changeToken)" }.joined(
                            separator: " | "
                        )
                        read.add(line)
                    } catch {
                        failures.add("\(error)")
                    }
                }
                XCTAssertEqual(failures.all, [], version)
                XCTAssertEqual(Set(read.all).count, 1, "\(version): \(read.all)")
                let store = try Store(path: path)
                XCTAssertEqual(
                    try store.read { try String.fetchAll($0.db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier") },
                    (1...Store.schemaVersion).map { "v\($0)" }.sorted()
                )
                XCTAssertEqual(try store.check().problems, [], version)
            }
        }
    }

    /// A v6 store big enough that migrating it takes a moment (v8 logs its contents), opened
    /// by three processes at once, one killed (SIGKILL) while they migrate: the others open
    /// it, and it ends whole — every record once in each feed, no position twice.
    func testAProcessKilledWhileSeveralMigrateLeavesTheStoreWhole() throws {
        guard FileManager.default.isExecutableFile(atPath: CLI.binary) else { throw XCTSkip("no built shareflow at \(CLI.binary)") }
        for round in 0..<3 {
            let (dir, path) = try makeOldStore(
                upTo: "v6",
                migrator: Store.migrator(),
                sql: ChangeLogMigrationTests.rows + """
                    WITH RECURSIVE n(i) AS (SELECT 10 UNION ALL SELECT i + 1 FROM n WHERE i < 6009)
                    INSERT INTO record (id, zoneID, name, type, fields, parentName, changeTag, createdBy, modifiedBy, modifiedAt, tag, createdAt)
                    SELECT i, 1, 'r' || i, 'Note', '{"title":{"s":"x"}}', CASE WHEN i % 3 = 0 THEN 'a' END, 1, 1, 1, 20, 't' || i, 20 FROM n;
                    """
            )
            defer { try? FileManager.default.removeItem(at: dir) }
            let script = dir.appendingPathComponent("count.lua")
            try CLI.write(
                """
                local sf = require("shareflow")
                local zone = { zoneName = "Z", ownerName = "_alice" }
                for _, who in ipairs{ { "alice@example.com", "privateCloudDatabase" }, { "bob@example.com", "sharedCloudDatabase" } } do
                  local db = sf.as(who[1]):container("iCloud.t")[who[2]]
                  local seen, n, token = {}, 0, nil
                  repeat
                    local page = assert(db:recordZoneChanges{ zoneID = zone, since = token })
                    for _, r in ipairs(page.modifications) do assert(not seen[r.recordName], "twice: " .. r.recordName); seen[r.recordName] = true; n = n + 1 end
                    token = page.changeToken
                  until not page.moreComing
                  print(who[1], n)
                end
                """,
                to: script
            )
            let started = try (0..<3).map { _ in try Self.start(["run", "--store", path, script.path], in: dir) }
            usleep(UInt32(20_000 + 40_000 * round))
            kill(started[0].0.processIdentifier, SIGKILL)
            let results = started.map { Self.finish($0, timeout: 60) }
            for r in results.dropFirst() {
                XCTAssertEqual(r.status, 0, "round \(round): \(r.stderr)")
                XCTAssertEqual(r.stdout, "alice@example.com\t6003\nbob@example.com\t6003\n", "round \(round): \(r.stderr)")
            }
            let store = try Store(path: path)
            XCTAssertEqual(
                try store.read { try String.fetchAll($0.db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier") },
                (1...Store.schemaVersion).map { "v\($0)" }.sorted()
            )
            XCTAssertEqual(
                try store.read {
                    try Int.fetchOne($0.db, sql: "SELECT COUNT(*) FROM (SELECT seq FROM record WHERE zoneID = 1 GROUP BY seq HAVING COUNT(*) > 1)")
                },
                0
            )
            XCTAssertEqual(try store.check().problems, [], "round \(round)")
        }
    }
}
