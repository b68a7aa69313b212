import Foundation
import ShareFlowTestKit
import XCTest

/// SPEC §11 as an operator meets it: several processes opening one new store, a clean exit
/// leaving the file whole, `store info|check|backup`, and commands that make no store.
final class StoreCommandTests: XCTestCase {
    /// About 1 in 10 of these failed before (`table shareflow_meta already exists`, `database is
    /// locked`, a false "not a ShareFlow store").
    func testThreeProcessesOpeningOneNewStoreAtOnce() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("join.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = arg[1] .. "@example.com" }
            print(sf.accounts.count() >= 1)
            """,
            to: script
        )
        for round in 0..<20 {
            let store = dir.appendingPathComponent("new\(round)/store.sqlite").path
            final class Results: @unchecked Sendable {
                var items = [CLI.Result?](repeating: nil, count: 3)
                let lock = NSLock()
            }
            let results = Results()
            let group = DispatchGroup()
            for n in 0..<3 {
                group.enter()
                Thread.detachNewThread {
                    let r = try? CLI.run(["run", "--store", store, script.path, "user\(n)"])
                    results.lock.lock()
                    results.items[n] = r
                    results.lock.unlock()
                    group.leave()
                }
            }
            XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
            for (n, r) in results.items.enumerated() {
                XCTAssertEqual(r?.status, 0, "round \(round), process \(n): \(r?.stderr ?? "did not run")")
            }
            let info = try CLI.run(["store", "info", "--store", store, "--json"])
            XCTAssertTrue(info.stdout.contains("\"accounts\":3"), "round \(round): \(info.stdout)\(info.stderr)")
        }
    }

    func testACleanExitLeavesTheStoreFileWhole() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = dir.appendingPathComponent("store.sqlite").path
        let write = dir.appendingPathComponent("write.lua")
        let read = dir.appendingPathComponent("read.lua")
        try CLI.write("require('shareflow').accounts.create{ email = 'alice@example.com' }", to: write)
        try CLI.write("print(require('shareflow').accounts.count())", to: read)
        XCTAssertEqual(try CLI.run(["run", "--store", store, write.path]).status, 0)
        // The file alone, as a user copies it.
        let copy = dir.appendingPathComponent("copy/store.sqlite")
        try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: store, toPath: copy.path)
        let r = try CLI.run(["run", "--store", copy.path, read.path])
        XCTAssertEqual(r.stdout, "1\n", r.stderr)
    }

    func testStoreInfoCheckAndBackup() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try auditAccessStore(in: dir)

        let info = try CLI.run(["store", "info", "--store", store])
        XCTAssertEqual(info.status, 0, info.stderr)
        XCTAssertTrue(info.stdout.contains("schema version 16"), info.stdout)
        XCTAssertTrue(info.stdout.contains("change log: "), info.stdout)
        XCTAssertTrue(info.stdout.contains("shares: 2"), info.stdout)
        XCTAssertTrue(info.stdout.contains("notifications: 0 subscriptions, 0 device tokens, 0 queued, 0 dropped"), info.stdout)
        let json = try CLI.run(["store", "info", "--store", store, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        XCTAssertEqual((object?["counts"] as? [String: Int])?["participants"], 6)
        XCTAssertFalse(json.stdout.contains("\\/"), "no escaped slashes")

        XCTAssertEqual(try CLI.run(["store", "check", "--store", store]).stdout, "store \(store): ok\n")
        let backup = dir.appendingPathComponent("backup.sqlite").path
        let b = try CLI.run(["store", "backup", "--store", store, backup])
        XCTAssertEqual(b.status, 0, b.stderr)
        XCTAssertEqual(try CLI.run(["store", "check", "--store", backup]).status, 0)
        let again = try CLI.run(["store", "backup", "--store", store, backup])
        XCTAssertEqual(again.status, 1)
        XCTAssertEqual(again.stderr, "shareflow: cannot back up to \(backup): it exists; a backup never overwrites a file\n")

        // Break an invariant behind ShareFlow's back: the check names it and fails.
        try Tools.sqlite(backup, "delete from participant where role='owner' and id=(select min(id) from participant)")
        let broken = try CLI.run(["store", "check", "--store", backup])
        XCTAssertEqual(broken.status, 1)
        XCTAssertTrue(broken.stdout.contains("has 0 accepted owners (one expected)"), broken.stdout)

        let missing = try CLI.run(["store", "info", "--store", dir.appendingPathComponent("nope.sqlite").path])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.hasPrefix("shareflow: cannot open store "), missing.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("nope.sqlite").path), "nothing made")
    }

    /// `store copy` between SQLite files (PostgreSQL both ways: PostgresStoreTests and
    /// SeveralNodesTests): a new file with the same rows, never over a file, nothing left
    /// behind by a copy that fails.
    func testStoreCopyMakesANewFileWithTheSameRows() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try auditAccessStore(in: dir)
        let copy = dir.appendingPathComponent("copy.sqlite").path
        let r = try CLI.run(["store", "copy", store, copy])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("copied \(store) to \(copy): "), r.stdout)
        XCTAssertTrue(r.stdout.contains("  participant: 6\n"), r.stdout)
        XCTAssertEqual(try CLI.run(["store", "check", "--store", copy]).stdout, "store \(copy): ok\n")
        for table in ["shareflow_meta", "account", "record", "share", "participant", "zone", "zone_change", "view_change", "feed", "feed_change"] {
            let query = "select * from \(table) order by 1, 2"
            XCTAssertEqual(try Tools.sqliteRows(copy, query), try Tools.sqliteRows(store, query), table)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".copying") }, [])

        let again = try CLI.run(["store", "copy", store, copy])
        XCTAssertEqual(again.status, 1)
        XCTAssertEqual(again.stderr, "shareflow: cannot copy into \(copy): it exists (copy into a new file)\n")
        let missing = try CLI.run(["store", "copy", dir.appendingPathComponent("nope.sqlite").path, dir.appendingPathComponent("x.sqlite").path])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.hasPrefix("shareflow: cannot open store "), missing.stderr)

        // A damaged row fails the copy in one line naming the table; no file is left.
        try Tools.sqlite(store, "update record set changeTag = 'x' where id = (select min(id) from record)")
        let failed = dir.appendingPathComponent("failed.sqlite").path
        let bad = try CLI.run(["store", "copy", store, failed])
        XCTAssertEqual(bad.status, 1, bad.stdout)
        XCTAssertTrue(bad.stderr.hasPrefix("shareflow: ") && bad.stderr.contains("record") && !bad.stderr.contains("INSERT"), bad.stderr)
        XCTAssertEqual(bad.stderr.split(separator: "\n").count, 1, bad.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted(), ["copy.sqlite", "store.sqlite"])
        try Tools.sqlite(store, "update record set changeTag = 1 where changeTag = 'x'")

        // Invalid UTF-8 is damage too: never carried over repaired (U+FFFD), nor misreported.
        try Tools.sqlite(store, "update record set name = CAST(X'646179C0' AS TEXT) where id = (select min(id) from record)")
        let utf8 = try CLI.run(["store", "copy", store, failed])
        XCTAssertEqual(utf8.status, 1)
        XCTAssertTrue(utf8.stderr.contains("table record row ") && utf8.stderr.contains("column name: invalid UTF-8"), utf8.stderr)

        // FROM must be a store: an empty file is not made one, nor copied as an empty store.
        let empty = dir.appendingPathComponent("empty.sqlite").path
        XCTAssertTrue(FileManager.default.createFile(atPath: empty, contents: nil))
        let notAStore = try CLI.run(["store", "copy", empty, failed])
        XCTAssertEqual(notAStore.stderr, "shareflow: cannot copy \(empty): it is an empty file, not a store\n")
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: empty)[.size] as? NSNumber, 0)
        for bad in ["", ":memory:", dir.path + "/"] {
            let r = try CLI.run(["store", "copy", copy, bad])
            XCTAssertEqual(r.status, 1, bad)
            XCTAssertTrue(r.stderr.hasPrefix("shareflow: cannot copy into '\(bad)': name a new SQLite file"), r.stderr)
        }

        // What a copy killed with SIGKILL left (its process gone) goes at the next copy.
        let abandoned = ["copy2.sqlite.copying-999999", "copy2.sqlite.copying-999999-wal"]
        for name in abandoned {
            XCTAssertTrue(FileManager.default.createFile(atPath: dir.appendingPathComponent(name).path, contents: Data("x".utf8)))
        }
        let again2 = try CLI.run(["store", "copy", copy, dir.appendingPathComponent("copy2.sqlite").path])
        XCTAssertEqual(again2.status, 0, again2.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".copying") }, [])
    }

    /// SPEC §17 in the store commands: a store with an open request and a block checks ok and
    /// copies whole (both tables); `store compact` closes requests older than the config's
    /// sharing.requestTTLDays (0 keeps them) and says so; a bad sharing key is refused naming it.
    func testAccessRequestsInTheStoreCommands() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = dir.appendingPathComponent("store.sqlite").path
        let script = dir.appendingPathComponent("ask.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            for _, e in ipairs{ "alice@example.com", "bob@example.com", "dana@example.com" } do sf.accounts.create{ email = e } end
            local db = sf.as("alice@example.com"):container("iCloud.t").privateCloudDatabase
            local zone = db:saveZone("Z")
            local root = sf.Record{ recordType = "Doc", zone = zone }
            local share = sf.Share{ rootRecord = root }
            share.allowsAccessRequests = true
            assert(select(2, db:modifyRecords{ save = { root, share } }) == nil)
            for _, who in ipairs{ "bob@example.com", "dana@example.com" } do
              assert(sf.as(who):container("iCloud.t"):requestShareAccess{ share.url }[share.url])
            end
            share = db:fetchRecord(share.recordID)
            share:blockRequesters{ share.requesters[1] }
            assert(select(2, db:modifyRecords{ save = { share } }) == nil)
            print(#db:fetchRecord(share.recordID).requesters)
            """,
            to: script
        )
        let made = try CLI.run(["run", "--store", store, script.path])
        XCTAssertEqual(made.stdout, "1\n", made.stderr)
        XCTAssertEqual(try CLI.run(["store", "check", "--store", store]).stdout, "store \(store): ok\n")
        let copy = dir.appendingPathComponent("copy.sqlite").path
        XCTAssertEqual(try CLI.run(["store", "copy", store, copy]).status, 0)
        for table in ["share_request", "share_block"] {
            XCTAssertEqual(
                try Tools.sqliteRows(copy, "select * from \(table) order by 1"),
                try Tools.sqliteRows(store, "select * from \(table) order by 1")
            )
            XCTAssertEqual(try Tools.sqliteRows(copy, "select count(*) from \(table)"), "(1,)\n", table)
        }

        let keep = dir.appendingPathComponent("keep.lua")
        try CLI.write("return { sharing = { requestTTLDays = 0 } }", to: keep)
        let kept = try CLI.run(["store", "compact", "--store", store, "--config", keep.path, "--json"])
        XCTAssertTrue(kept.stdout.contains(#""closedRequests":0"#), kept.stdout + kept.stderr)
        let soon = dir.appendingPathComponent("soon.lua")
        try CLI.write("return { sharing = { requestTTLDays = 0.000000001, maxRequesters = 5 } }", to: soon)
        let closed = try CLI.run(["store", "compact", "--store", store, "--config", soon.path])
        XCTAssertTrue(closed.stdout.contains("closed 1 access request older than"), closed.stdout + closed.stderr)
        XCTAssertEqual(try Tools.sqliteRows(store, "select count(*) from share_request"), "(0,)\n")

        let bad = dir.appendingPathComponent("bad.lua")
        try CLI.write("return { sharing = { maxRequesters = 0 } }", to: bad)
        let refused = try CLI.run(["store", "check", "--store", store, "--config", bad.path])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("sharing.maxRequesters must be a whole number from 1 to 100000, got 0"), refused.stderr)
    }

    /// Ctrl-C (or SIGTERM) mid-copy leaves no partial file.
    func testAnInterruptedCopyLeavesNoFile() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = dir.appendingPathComponent("big.sqlite").path
        try CLI.write(
            """
            local sf = require("shareflow")
            local a = sf.accounts.create{ email = "a@example.com" }
            local db = sf.as(a):container("iCloud.x").privateCloudDatabase
            local zone = db:saveZone("Z")
            for i = 1, 40 do
              local batch = {}
              for j = 1, 400 do
                batch[#batch + 1] = sf.Record{ recordType = "N", recordName = "n" .. i .. "_" .. j, zone = zone,
                                              fields = { text = string.rep("x", 2000) } }
              end
              db:modifyRecords{ save = batch }
            end
            """,
            to: dir.appendingPathComponent("fill.lua")
        )
        let filled = try CLI.run(["run", "--store", store, dir.appendingPathComponent("fill.lua").path], timeout: 300)
        XCTAssertEqual(filled.status, 0, filled.stderr)
        for signal in [SIGINT, SIGTERM] {
            let copy = Process()
            copy.executableURL = URL(fileURLWithPath: CLI.binary)
            copy.arguments = ["store", "copy", store, dir.appendingPathComponent("copy.sqlite").path]
            copy.standardOutput = FileHandle.nullDevice
            copy.standardError = FileHandle.nullDevice
            try copy.run()
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline, !(try FileManager.default.contentsOfDirectory(atPath: dir.path).contains { $0.contains(".copying-") }) {
                usleep(5_000)
            }
            usleep(200_000)
            kill(copy.processIdentifier, signal)
            copy.waitUntilExit()
            XCTAssertEqual(copy.terminationStatus, 128 + signal, "interrupted, not finished (make the store bigger if this fails)")
            // The source's own -wal and -shm may stay, as after any exit that skips closing it.
            XCTAssertEqual(
                try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted().filter {
                    !$0.hasPrefix("fill") && !$0.hasPrefix("big.sqlite-")
                },
                ["big.sqlite"],
                "signal \(signal)"
            )
        }
    }

    func testPluginsReloadMakesNoStore() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try CLI.run(["plugins", "reload", "--plugins", CLI.root.appendingPathComponent("Plugins").path], cwd: dir)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), [], "nothing made in the current folder")
    }

    /// A read-only script waited 10 s for a busy writer (opening took the write lock) and failed
    /// without naming the store. Readers now start and finish while another process writes.
    func testAReaderDoesNotWaitForABusyWriter() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try oneAccountStore(in: dir)
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = [
            "python3", "-c",
            """
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("BEGIN IMMEDIATE"); c.execute("UPDATE account SET name = name")
            print("locked", flush=True); time.sleep(8); c.execute("ROLLBACK")
            """, store,
        ]
        let out = Pipe()
        holder.standardOutput = out
        try holder.run()
        defer {
            holder.terminate()
            holder.waitUntilExit()
        }
        _ = out.fileHandleForReading.availableData  // "locked"
        let start = Date()
        let r = try CLI.run(["run", "--store", store, dir.appendingPathComponent("r.lua").path])
        XCTAssertEqual(r.stdout, "1\n", r.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(start), 5, "the reader did not wait for the writer")
        let info = try CLI.run(["store", "info", "--store", store])
        XCTAssertEqual(info.status, 0, info.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(start), 7)
    }

    /// A database URL of no driver this binary has is refused as one (attack pass: it was
    /// "built without its driver" for POSTGRES://, which it has), and makes no folder.
    func testADatabaseURLWithoutADriverIsNamedAndPostgresSchemesIgnoreCase() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try CLI.write("print(1)", to: dir.appendingPathComponent("s.lua"))
        let r = try CLI.run(["run", "--store", "mysql://app@db/shop", "s.lua"], cwd: dir)
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("it is a database URL (mysql://), and this program has no driver for mysql"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("mysql:").path), "no folder made")
        // A PostgreSQL URL in capitals goes to the PostgreSQL driver (here: nothing listens).
        let upper = try CLI.run(["run", "--store", "POSTGRES://app@127.0.0.1:1/shop", "s.lua"], cwd: dir)
        XCTAssertEqual(upper.status, 1)
        XCTAssertTrue(upper.stderr.contains("PostgreSQL cannot be reached"), upper.stderr)
    }

    /// A refused store gets no -wal or -shm file beside it.
    func testARefusedStoreGetsNoSideFiles() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let other = dir.appendingPathComponent("other.sqlite").path
        try Tools.sqlite(other, "create table notes(x)")
        let r = try CLI.run(["run", "--store", other, "/dev/null"])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("is not a ShareFlow store"), r.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["other.sqlite"])
    }

    /// A read while the store's file was read-only (its folder writable) leaves `-wal` and
    /// `-shm` files with the file's mode (SQLite gives them the store's): once the file is
    /// writable again, a write still fails — and the error names the side file and what to do,
    /// not "its file or folder".
    func testAStaleReadOnlySideFileIsNamed() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { throw XCTSkip("no unshare") }
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try oneAccountStore(in: dir)
        guard (try? asNobody(["--version"]))?.status == 0 else { throw XCTSkip("user namespaces are not available here") }
        XCTAssertEqual(chmod(store, 0o444), 0)
        let read = try asNobody(["run", "--store", store, dir.appendingPathComponent("r.lua").path])
        XCTAssertEqual(read.status, 0, read.stderr)
        guard FileManager.default.fileExists(atPath: store + "-shm") else { throw XCTSkip("this SQLite leaves no -shm after a read-only read") }
        XCTAssertEqual(chmod(store, 0o644), 0)
        let write = try asNobody(["run", "--store", store, dir.appendingPathComponent("w.lua").path])
        XCTAssertEqual(write.status, 1)
        let firstLine = write.stderr.split(separator: "\n").first.map(String.init) ?? ""
        XCTAssertTrue(firstLine.hasPrefix("shareflow: serviceUnavailable (6): store \(store) is read-only (\(store)-"), write.stderr)
        XCTAssertTrue(
            firstLine.contains("cannot be written: a read made it while the store's file was read-only; remove \(store)-shm and \(store)-wal"),
            write.stderr
        )
        // Removed as it says, the store is written again.
        try? FileManager.default.removeItem(atPath: store + "-shm")
        try? FileManager.default.removeItem(atPath: store + "-wal")
        try CLI.write("require('shareflow').accounts.create{ email = 'b@example.com' }", to: dir.appendingPathComponent("w2.lua"))
        let again = try asNobody(["run", "--store", store, dir.appendingPathComponent("w2.lua").path])
        XCTAssertEqual(again.status, 0, again.stderr)
    }

    /// A store in a read-only place could not be opened even to read. It opens read-only now:
    /// reads work, writes fail naming the store. (Tests run as root, who may write anywhere:
    /// the process runs as `nobody` in a user namespace.)
    func testAStoreInAReadOnlyPlaceOpensReadOnly() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { throw XCTSkip("no unshare") }
        let dir = try CLI.temporaryDirectory()
        defer {
            chmod(dir.path, 0o755)
            try? FileManager.default.removeItem(at: dir)
        }
        let store = try oneAccountStore(in: dir)
        XCTAssertEqual(chmod(dir.path, 0o555), 0)
        guard (try? asNobody(["--version"]))?.status == 0 else { throw XCTSkip("user namespaces are not available here") }
        let read = try asNobody(["run", "--store", store, dir.appendingPathComponent("r.lua").path])
        XCTAssertEqual(read.status, 0, read.stderr)
        XCTAssertEqual(read.stdout, "1\n")
        let write = try asNobody(["run", "--store", store, dir.appendingPathComponent("w.lua").path])
        XCTAssertEqual(write.status, 1)
        XCTAssertTrue(write.stderr.hasPrefix("shareflow: serviceUnavailable (6): store \(store) is read-only"), write.stderr)
        XCTAssertEqual(try asNobody(["store", "check", "--store", store]).status, 0)
        XCTAssertEqual(
            Set(try FileManager.default.contentsOfDirectory(atPath: dir.path)),
            ["store.sqlite", "w.lua", "r.lua"],
            "nothing made beside it"
        )
    }

    /// Runs the CLI as `nobody` in a user namespace: tests run as root, who may write anywhere,
    /// and a file's mode binds only a process without root's rights over it.
    /// A store in `dir` with one account, made by w.lua (a write, to run again); r.lua beside
    /// it prints how many accounts there are (a read).
    private func oneAccountStore(in dir: URL, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let store = dir.appendingPathComponent("store.sqlite").path
        try CLI.write("require('shareflow').accounts.create{ email = 'a@example.com' }", to: dir.appendingPathComponent("w.lua"))
        try CLI.write("print(require('shareflow').accounts.count())", to: dir.appendingPathComponent("r.lua"))
        XCTAssertEqual(try CLI.run(["run", "--store", store, dir.appendingPathComponent("w.lua").path]).status, 0, file: file, line: line)
        return store
    }

    /// A store in `dir` made by the audit_access example: accounts, two shares, their participants.
    private func auditAccessStore(in dir: URL, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let store = dir.appendingPathComponent("store.sqlite").path
        let setup = try CLI.run(["run", "--store", store, "Scripts/examples/audit_access.lua"])
        XCTAssertEqual(setup.status, 0, setup.stderr, file: file, line: line)
        return store
    }

    private func asNobody(_ args: [String]) throws -> CLI.Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        p.arguments = ["--user", "--map-user=65534", CLI.binary] + args
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        p.waitUntilExit()
        return CLI.Result(
            status: p.terminationStatus,
            stdout: String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
            stderr: String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        )
    }
}
