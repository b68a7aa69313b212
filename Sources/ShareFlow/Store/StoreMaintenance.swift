import Foundation
import GRDB

/// What `shareflow store info` shows.
public struct StoreInfo: Sendable, Codable {
    public let path: String
    public let schemaVersion: Int
    /// Bytes of the database file, and of its write-ahead log not yet checkpointed.
    public let fileBytes: Int64
    public let walBytes: Int64
    /// Rows by kind: accounts, zones, records, shares, participants.
    public let counts: [String: Int]
}

/// What `shareflow store check` found: SQLite's integrity check and ShareFlow's invariants.
public struct StoreCheck: Sendable, Codable {
    /// SQLite's own verdict lines (`ok` when sound).
    public let integrity: [String]
    /// One line per broken invariant, naming the rows.
    public let problems: [String]
    public var isHealthy: Bool { integrity == ["ok"] && problems.isEmpty }
}

extension Store {
    public func info() throws -> StoreInfo {
        try queue.read { db in
            var counts: [String: Int] = [:]
            for (kind, table) in [("accounts", "account"), ("zones", "zone"), ("records", "record"), ("shares", "share"), ("participants", "participant")] {
                counts[kind] = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? 0
            }
            let version = try Int.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM shareflow_meta WHERE key = 'schemaVersion'") ?? 0
            func size(_ file: String) -> Int64 {
                ((try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? NSNumber)?.int64Value ?? 0
            }
            return StoreInfo(path: path, schemaVersion: version, fileBytes: path == ":memory:" ? 0 : size(path),
                             walBytes: path == ":memory:" ? 0 : size(path + "-wal"), counts: counts)
        }
    }

    /// SQLite's integrity and foreign-key checks, then ShareFlow's invariants: one accepted
    /// owner per share, every share's record a share record, every hierarchy share's root in
    /// its zone, every parent in its record's zone, every field readable.
    public func check() throws -> StoreCheck {
        try queue.read { db in
            let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
            var problems: [String] = []
            for row in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check") {
                problems.append("table \(row[0] as String) row \(row[1] as Int64? ?? -1) refers to a missing row of \(row[2] as String)")
            }
            for row in try Row.fetchAll(db, sql: """
                SELECT s.token, (SELECT COUNT(*) FROM participant p WHERE p.shareID = s.id AND p.role = 'owner' AND p.status = 'accepted')
                FROM share s
                """) where (row[1] as Int) != 1 {
                problems.append("share …/share/\(row[0] as String) has \(row[1] as Int) accepted owners (one expected)")
            }
            for row in try Row.fetchAll(db, sql: "SELECT s.token, r.type FROM share s JOIN record r ON r.id = s.recordID WHERE r.type != 'cloudkit.share'") {
                problems.append("share …/share/\(row[0] as String) is saved as a record of type \(row[1] as String)")
            }
            for row in try Row.fetchAll(db, sql: """
                SELECT s.token, s.rootName FROM share s
                WHERE s.rootName IS NOT NULL AND NOT EXISTS (SELECT 1 FROM record r WHERE r.zoneID = s.zoneID AND r.name = s.rootName)
                """) {
                problems.append("share …/share/\(row[0] as String): its root record \(row[1] as String) does not exist")
            }
            for row in try Row.fetchAll(db, sql: """
                SELECT c.name, c.parentName FROM record c
                WHERE c.parentName IS NOT NULL AND NOT EXISTS (SELECT 1 FROM record p WHERE p.zoneID = c.zoneID AND p.name = c.parentName)
                """) {
                problems.append("record \(row[0] as String): its parent \(row[1] as String) does not exist (R25)")
            }
            for row in try Row.fetchAll(db, sql: "SELECT name, fields FROM record") {
                let json: String = row[1]
                if (try? JSONDecoder().decode([String: FieldValue].self, from: Data(json.utf8))) == nil {
                    problems.append("record \(row[0] as String): its fields cannot be read")
                }
            }
            return StoreCheck(integrity: integrity, problems: problems)
        }
    }

    /// Copies the store to `destination` with SQLite's online backup: consistent while other
    /// processes go on writing. Refuses to overwrite a file.
    public func backup(to destination: String) throws {
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw StoreError.cannotBackUp(destination: destination, reason: "it exists; a backup never overwrites a file")
        }
        do {
            let target = try DatabaseQueue(path: destination)
            try queue.backup(to: target)
            try target.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = DELETE") }
            try target.close()
        } catch let error as DatabaseError {
            try? FileManager.default.removeItem(atPath: destination)
            throw StoreError.cannotBackUp(destination: destination, reason: Store.reason(error))
        }
    }
}
