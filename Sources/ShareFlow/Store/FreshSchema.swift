import Foundation
import GRDB
import GRDBSQLite

extension Store {
    /// The syncKey row, made for each store: a store's change tokens are signed with its own key.
    static let syncKeySQL = "INSERT OR REPLACE INTO shareflow_meta VALUES ('syncKey', lower(hex(randomblob(32))))"

    /// Makes a new `:memory:` store's schema by copying `freshStoreImage` into it: SQLite then
    /// parses each statement once, where running the migrations parsed and compiled each,
    /// wrote its pages and parsed it again — most of a cold start (SPEC §12). The image is the
    /// database the migrations make (StoreTests holds the two together and rewrites the image
    /// when they part); copied with the backup API, the store stays a plain `:memory:` database.
    static func loadFreshImage(into db: Database) throws {
        guard let runs = Data(base64Encoded: freshStoreImage, options: .ignoreUnknownCharacters), runs.count >= 4 else {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "the built-in empty store image is unreadable")
        }
        let size = Int(runs[0]) | Int(runs[1]) << 8 | Int(runs[2]) << 16 | Int(runs[3]) << 24
        guard let buffer = sqlite3_malloc64(sqlite3_uint64(size))?.bindMemory(to: UInt8.self, capacity: size) else {
            throw DatabaseError(resultCode: .SQLITE_NOMEM, message: "no memory for the empty store image")
        }
        buffer.initialize(repeating: 0, count: size)
        // Runs of non-zero bytes: offset (4 bytes), length (2 bytes), the bytes.
        var i = 4
        while i + 6 <= runs.count {
            let offset = Int(runs[i]) | Int(runs[i + 1]) << 8 | Int(runs[i + 2]) << 16 | Int(runs[i + 3]) << 24
            let length = Int(runs[i + 4]) | Int(runs[i + 5]) << 8
            i += 6
            guard offset + length <= size, i + length <= runs.count else {
                sqlite3_free(buffer)
                throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "the built-in empty store image is damaged")
            }
            runs.withUnsafeBytes { raw in (buffer + offset).update(from: raw.baseAddress!.assumingMemoryBound(to: UInt8.self) + i, count: length) }
            i += length
        }
        var source: OpaquePointer?
        defer { sqlite3_close(source) }
        guard sqlite3_open_v2(":memory:", &source, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK else {
            sqlite3_free(buffer)
            throw DatabaseError(resultCode: .SQLITE_CANTOPEN, message: "cannot open a connection for the empty store image")
        }
        // SQLite owns the buffer from here, whatever deserialize returns.
        guard
            sqlite3_deserialize(
                source,
                "main",
                buffer,
                sqlite3_int64(size),
                sqlite3_int64(size),
                UInt32(SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY)
            ) == SQLITE_OK,
            let backup = sqlite3_backup_init(db.sqliteConnection, "main", source, "main")
        else {
            throw DatabaseError(
                resultCode: .SQLITE_CORRUPT,
                message: "the built-in empty store image cannot be loaded: \(String(cString: sqlite3_errmsg(db.sqliteConnection)))"
            )
        }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE, finished == SQLITE_OK else {
            throw DatabaseError(
                resultCode: ResultCode(rawValue: finished),
                message: "the built-in empty store image cannot be copied: \(String(cString: sqlite3_errmsg(db.sqliteConnection)))"
            )
        }
        try db.execute(sql: syncKeySQL)
    }

    /// `freshStoreImage`: the database the migrations make, serialized, as runs of non-zero
    /// bytes in base64 (an empty database is mostly zeros), in lines of 100 characters.
    package static func freshImage() throws -> String {
        let queue = try DatabaseQueue()
        try migrator().migrate(queue)
        return try queue.writeWithoutTransaction { db in
            // Each store gets its own key when the image is loaded.
            try db.execute(sql: "DELETE FROM shareflow_meta WHERE key = 'syncKey'")
            try db.execute(sql: "VACUUM")
            var size: sqlite3_int64 = 0
            guard let bytes = sqlite3_serialize(db.sqliteConnection, "main", &size, 0) else {
                throw DatabaseError(resultCode: .SQLITE_NOMEM, message: "cannot serialize the empty store")
            }
            defer { sqlite3_free(bytes) }
            var out = Data()
            func append(_ value: Int, bytes count: Int) { for k in 0..<count { out.append(UInt8(truncatingIfNeeded: value >> (8 * k))) } }
            append(Int(size), bytes: 4)
            var i = 0
            let n = Int(size)
            while i < n {
                guard bytes[i] != 0 else {
                    i += 1
                    continue
                }
                // A run ends at 8 zero bytes in a row (shorter gaps cost less kept than split).
                var end = i
                var zeros = 0
                while end < n, zeros < 8, end - i < 65_535 {
                    zeros = bytes[end] == 0 ? zeros + 1 : 0
                    end += 1
                }
                let length = end - i - zeros
                append(i, bytes: 4)
                append(length, bytes: 2)
                out.append(bytes + i, count: length)
                i += length
            }
            let text = out.base64EncodedString()
            return stride(from: 0, to: text.count, by: 100).map { start in
                let a = text.index(text.startIndex, offsetBy: start)
                return String(text[a..<(text.index(a, offsetBy: 100, limitedBy: text.endIndex) ?? text.endIndex)])
            }.joined(separator: "\n")
        }
    }
}
