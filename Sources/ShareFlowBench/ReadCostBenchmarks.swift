import CShareFlowSupport
import Foundation
import GRDBSQLite
import ShareFlow
import ShareFlowLua

/// What one read costs beside the raw SQLite reads of the rows it returns (SPEC §12, issue 24):
/// a read should cost what it returns, not a fixed toll per operation.
extension Benchmarks {
    /// Reads per second of each repetition: (`db:fetchRecord` of one record from Lua, the raw
    /// indexed read of its row through SQLite's C API).
    func fetchRecordVersusSQLite(in scratch: URL) throws -> ([Double], [Double]) {
        let path = scratch.appendingPathComponent("fetch-record.sqlite").path
        let engine = Engine(store: try Store(path: path))
        engine.logger.logLevel = .critical
        let owner = try engine.accounts.create(emails: ["owner@bench.example"])
        let db = try engine.session(for: owner).container("iCloud.com.example.bench").privateCloudDatabase
        let zone = try db.saveZone("Bench").zoneID
        let records = (0..<1_000).map { i in
            Record(
                recordType: "Note",
                recordID: RecordID(recordName: "note\(i)", zoneID: zone),
                fields: ["title": .string("Note \(i)"), "rank": .integer(Int64(i)), "body": .string(String(repeating: "x", count: 200))]
            )
        }
        for batch in stride(from: 0, to: records.count, by: 200) {
            _ = try db.modifyRecords(saving: Array(records[batch..<min(batch + 200, records.count)]), deleting: [])
        }
        let calls = max(200, sizes.lookups / 20)
        let host = try ScriptHost(engine: engine)
        try host.run(
            """
            local db = shareflow.as("owner@bench.example"):container("iCloud.com.example.bench").privateCloudDatabase
            local ids = {}
            for i = 0, 999 do ids[i] = shareflow.RecordID{ recordName = "note" .. i, zoneID = "Bench" } end
            function bench_fetch(n)
              for i = 1, n do assert(db:fetchRecord(ids[(i * 7919) % 1000])) end
            end
            """
        )

        var raw: OpaquePointer?
        guard sqlite3_open_v2(path, &raw, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { throw PluginError("cannot open \(path)") }
        defer { sqlite3_close(raw) }
        let zoneRow = try rawInteger(raw, "SELECT zoneID FROM record WHERE name = 'note0'")
        var statement: OpaquePointer?
        sqlite3_prepare_v2(
            raw,
            """
            SELECT id, name, type, fields, parentName, changeTag, createdBy, modifiedBy, modifiedAt, shortGUID, createdAt
            FROM record WHERE zoneID = ? AND name = ?
            """,
            -1,
            &statement,
            nil
        )
        defer { sqlite3_finalize(statement) }
        let names = (0..<1_000).map { "note\($0)" }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

        func rawRate() -> Double {
            let start = sf_now_ns()
            for i in 1...calls {
                sqlite3_reset(statement)
                sqlite3_bind_int64(statement, 1, zoneRow)
                sqlite3_bind_text(statement, 2, names[(i * 7919) % 1000], -1, transient)
                precondition(sqlite3_step(statement) == SQLITE_ROW, "every bench record exists")
                for column in 0..<11 { _ = sqlite3_column_text(statement, Int32(column)) }
            }
            return Double(calls) / (Double(sf_now_ns() - start) / 1e9)
        }
        func luaRate() throws -> Double {
            let start = sf_now_ns()
            try host.run("bench_fetch(\(calls))")
            return Double(calls) / (Double(sf_now_ns() - start) / 1e9)
        }
        return try pairedRuns(ours: luaRate, baseline: rawRate)
    }

    /// Reads per second of each repetition: (FetchShareMetadata of a share with 64 participants
    /// by one of them, the raw SQLite reads of the same rows: the share and its root, its
    /// participants, and each participant's identity).
    func shareMetadataVersusSQLite(in scratch: URL) throws -> ([Double], [Double]) {
        let path = scratch.appendingPathComponent("share-metadata.sqlite").path
        let engine = Engine(store: try Store(path: path))
        engine.logger.logLevel = .critical
        let guestCount = 63
        let guests = try (0..<guestCount).map { i -> (id: Int64, email: String) in
            let email = "guest\(i)@bench.example"
            return (try engine.accounts.create(emails: [email], name: NameComponents(givenName: "Guest", familyName: "\(i)")).id, email)
        }
        let shareCount = 20
        let urls = try bulkShares(engine, count: shareCount, guests: guests)
        let readers = try guests.map { try engine.session(for: $0.email).container("iCloud.com.example.bench") }
        // Every guest has accepted (set-up, not measured): a participant sees the accepted ones
        // (R37), so each read returns all 64.
        for reader in readers {
            let metadata = try reader.fetchShareMetadataResults(urls).0.map { try $0.1.get() }
            for result in reader.acceptShareResults(metadata).0 { _ = try result.1.get() }
        }
        let calls = max(100, sizes.lookups / 200)

        var raw: OpaquePointer?
        guard sqlite3_open_v2(path, &raw, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { throw PluginError("cannot open \(path)") }
        defer { sqlite3_close(raw) }
        var share: OpaquePointer?
        var participants: OpaquePointer?
        var identity: OpaquePointer?
        sqlite3_prepare_v2(
            raw,
            """
            SELECT s.id, s.publicPermission, s.rootName, r.id, r.name, r.type, r.fields, r.changeTag, r.modifiedAt, r.shortGUID
            FROM share s JOIN record r ON r.id = s.recordID WHERE s.token = ?
            """,
            -1,
            &share,
            nil
        )
        sqlite3_prepare_v2(
            raw,
            """
            SELECT participantID, accountID, lookupKind, lookupValue, role, permission, status FROM participant WHERE shareID = ?
            """,
            -1,
            &participants,
            nil
        )
        sqlite3_prepare_v2(
            raw,
            """
            SELECT a.userRecordID, a.name, a.discoverability, e.email FROM account a
            LEFT JOIN account_email e ON e.accountID = a.id AND e.position = 0 WHERE a.id = ?
            """,
            -1,
            &identity,
            nil
        )
        defer {
            sqlite3_finalize(share)
            sqlite3_finalize(participants)
            sqlite3_finalize(identity)
        }
        let tokens = urls.map { String($0.split(separator: "/").last ?? "") }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

        func rawRate() -> Double {
            let start = sf_now_ns()
            var seen = 0
            for i in 0..<calls {
                sqlite3_reset(share)
                sqlite3_bind_text(share, 1, tokens[i % shareCount], -1, transient)
                precondition(sqlite3_step(share) == SQLITE_ROW, "every bench share exists")
                for column in 0..<10 { _ = sqlite3_column_text(share, Int32(column)) }
                sqlite3_reset(participants)
                sqlite3_bind_int64(participants, 1, sqlite3_column_int64(share, 0))
                while sqlite3_step(participants) == SQLITE_ROW {
                    for column in 0..<7 { _ = sqlite3_column_text(participants, Int32(column)) }
                    sqlite3_reset(identity)
                    sqlite3_bind_int64(identity, 1, sqlite3_column_int64(participants, 1))
                    if sqlite3_step(identity) == SQLITE_ROW {
                        for column in 0..<4 { _ = sqlite3_column_text(identity, Int32(column)) }
                    }
                    seen += 1
                }
            }
            precondition(seen == calls * (guestCount + 1), "every share has its \(guestCount + 1) participants: \(seen)")
            return Double(calls) / (Double(sf_now_ns() - start) / 1e9)
        }
        func engineRate() throws -> Double {
            let start = sf_now_ns()
            for i in 0..<calls {
                let (results, _) = readers[i % readers.count].fetchShareMetadataResults([urls[i % shareCount]])
                let metadata = try results[0].1.get()
                precondition(metadata.share.participants.count == guestCount + 1, "\(metadata.share.participants.count) participants")
            }
            return Double(calls) / (Double(sf_now_ns() - start) / 1e9)
        }
        return try pairedRuns(ours: engineRate, baseline: rawRate)
    }

    private func rawInteger(_ db: OpaquePointer?, _ sql: String) throws -> Int64 {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else { throw PluginError("cannot prepare \(sql)") }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { throw PluginError("no row for \(sql)") }
        return sqlite3_column_int64(statement, 0)
    }
}
