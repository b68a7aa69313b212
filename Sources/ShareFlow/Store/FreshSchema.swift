import Foundation
import GRDB
import GRDBSQLite

extension Store {
    /// The schema `migrator` leaves, made at once: a new `:memory:` store starts from it rather
    /// than running every migration (cold start, SPEC §12). The statements are those the
    /// migrated schema holds in `sqlite_master`, in its order, so both are the same text
    /// (StoreTests.testFreshSchemaIsTheMigratedSchema holds them together; after a new
    /// migration, paste what it prints here).
    static let freshSchemaSQL = """
        CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
        CREATE TABLE shareflow_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE account (
            id INTEGER PRIMARY KEY,
            userRecordID TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL DEFAULT '{}',
            discoverability TEXT NOT NULL,
            createdAt REAL NOT NULL);
        CREATE TABLE account_email (
            email TEXT PRIMARY KEY,
            accountID INTEGER NOT NULL REFERENCES account(id) ON DELETE CASCADE,
            position INTEGER NOT NULL) WITHOUT ROWID;
        CREATE INDEX account_email_account ON account_email(accountID);
        CREATE TABLE account_phone (
            phone TEXT PRIMARY KEY,
            accountID INTEGER NOT NULL REFERENCES account(id) ON DELETE CASCADE,
            position INTEGER NOT NULL) WITHOUT ROWID;
        CREATE INDEX account_phone_account ON account_phone(accountID);
        CREATE TABLE contact (
            id INTEGER PRIMARY KEY,
            accountID INTEGER NOT NULL REFERENCES account(id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            value TEXT NOT NULL,
            contactIdentifier TEXT NOT NULL);
        CREATE INDEX contact_account ON contact(accountID);
        CREATE TABLE record (
            id INTEGER PRIMARY KEY,
            zoneID INTEGER NOT NULL REFERENCES zone(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            type TEXT NOT NULL,
            fields TEXT NOT NULL,
            parentName TEXT,
            changeTag INTEGER NOT NULL,
            createdBy INTEGER,
            modifiedBy INTEGER,
            modifiedAt REAL NOT NULL, tag TEXT NOT NULL DEFAULT '', shortGUID TEXT, createdAt REAL, seq INTEGER NOT NULL DEFAULT 0,
            UNIQUE (zoneID, name));
        CREATE INDEX record_parent ON record(zoneID, parentName);
        CREATE TABLE share (
            id INTEGER PRIMARY KEY,
            recordID INTEGER NOT NULL UNIQUE REFERENCES record(id) ON DELETE CASCADE,
            zoneID INTEGER NOT NULL REFERENCES zone(id) ON DELETE CASCADE,
            token TEXT NOT NULL UNIQUE,
            rootName TEXT,
            publicPermission TEXT NOT NULL);
        CREATE INDEX share_zone ON share(zoneID, rootName);
        CREATE TABLE participant (
            id INTEGER PRIMARY KEY,
            shareID INTEGER NOT NULL REFERENCES share(id) ON DELETE CASCADE,
            participantID TEXT NOT NULL UNIQUE,
            accountID INTEGER REFERENCES account(id),
            lookupKind TEXT NOT NULL,
            lookupValue TEXT NOT NULL,
            role TEXT NOT NULL,
            permission TEXT NOT NULL,
            status TEXT NOT NULL,
            addedAt REAL NOT NULL);
        CREATE INDEX participant_share ON participant(shareID, accountID);
        CREATE INDEX participant_account ON participant(accountID);
        CREATE INDEX participant_lookup ON participant(lookupKind, lookupValue);
        CREATE TRIGGER participant_insert_changes_share AFTER INSERT ON participant BEGIN
            UPDATE record SET tag = lower(hex(randomblob(6)))
            WHERE id = (SELECT recordID FROM share WHERE id = NEW.shareID);
        END;
        CREATE TRIGGER participant_update_changes_share AFTER UPDATE ON participant BEGIN
            UPDATE record SET tag = lower(hex(randomblob(6)))
            WHERE id = (SELECT recordID FROM share WHERE id = NEW.shareID);
        END;
        CREATE TABLE credential (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            container TEXT NOT NULL,
            hash TEXT NOT NULL UNIQUE,
            accountID INTEGER REFERENCES account(id) ON DELETE CASCADE,
            expiresAt REAL,
            createdAt REAL NOT NULL, publicKey TEXT, environment TEXT);
        CREATE INDEX credential_lookup ON credential(kind, container, hash);
        CREATE TRIGGER share_update_changes_share AFTER UPDATE ON share BEGIN
            UPDATE record SET tag = lower(hex(randomblob(6))) WHERE id = NEW.recordID;
        END;
        CREATE UNIQUE INDEX record_shortGUID ON record(shortGUID) WHERE shortGUID IS NOT NULL;
        CREATE TABLE "zone" (
            id INTEGER PRIMARY KEY,
            container TEXT NOT NULL,
            environment TEXT NOT NULL DEFAULT 'development',
            scope TEXT NOT NULL,
            ownerID INTEGER NOT NULL,
            name TEXT NOT NULL, changeSeq INTEGER NOT NULL DEFAULT 0, keptFrom INTEGER NOT NULL DEFAULT 0,
            UNIQUE (container, environment, scope, ownerID, name));
        CREATE INDEX record_type_name ON record(zoneID, type, name);
        CREATE INDEX record_type_modified ON record(zoneID, type, modifiedAt, name);
        CREATE TABLE zone_change (
            zoneID INTEGER NOT NULL REFERENCES zone(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            type TEXT NOT NULL,
            seq INTEGER NOT NULL,
            deleted INTEGER NOT NULL,
            at REAL NOT NULL, recordID INTEGER,
            PRIMARY KEY (zoneID, name)) WITHOUT ROWID;
        CREATE INDEX zone_change_seq ON zone_change(zoneID, seq, deleted, recordID, type);
        CREATE TABLE view_change (
            zoneID INTEGER NOT NULL REFERENCES zone(id) ON DELETE CASCADE,
            viewerID INTEGER NOT NULL REFERENCES account(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            type TEXT NOT NULL,
            seq INTEGER NOT NULL,
            deleted INTEGER NOT NULL,
            at REAL NOT NULL, recordID INTEGER,
            PRIMARY KEY (zoneID, viewerID, name)) WITHOUT ROWID;
        CREATE INDEX view_change_seq ON view_change(zoneID, viewerID, seq, deleted, recordID, type);
        CREATE INDEX view_change_name ON view_change(zoneID, name, deleted);
        CREATE TABLE feed (
            id INTEGER PRIMARY KEY,
            accountID INTEGER NOT NULL REFERENCES account(id) ON DELETE CASCADE,
            container TEXT NOT NULL,
            environment TEXT NOT NULL,
            scope TEXT NOT NULL,
            seq INTEGER NOT NULL,
            keptFrom INTEGER NOT NULL,
            UNIQUE (accountID, container, environment, scope));
        CREATE TABLE feed_change (
            feedID INTEGER NOT NULL REFERENCES feed(id) ON DELETE CASCADE,
            zoneName TEXT NOT NULL,
            ownerName TEXT NOT NULL,
            seq INTEGER NOT NULL,
            deleted INTEGER NOT NULL,
            reason TEXT,
            at REAL NOT NULL,
            PRIMARY KEY (feedID, zoneName, ownerName)) WITHOUT ROWID;
        CREATE INDEX feed_change_seq ON feed_change(feedID, seq);
        CREATE INDEX record_seq ON record(zoneID, seq);
        INSERT INTO shareflow_meta VALUES ('format', 'shareflow'), ('schemaVersion', '9'), ('syncKey', lower(hex(randomblob(32))));
        INSERT INTO grdb_migrations VALUES ('v1'), ('v2'), ('v3'), ('v4'), ('v5'), ('v6'), ('v7'), ('v8'), ('v9');
        """

    /// The syncKey row, made for each store: a store's change tokens are signed with its own key.
    static let syncKeySQL = "INSERT OR REPLACE INTO shareflow_meta VALUES ('syncKey', lower(hex(randomblob(32))))"

    /// Makes a new `:memory:` store's schema by copying `freshStoreImage` into it: SQLite then
    /// parses each statement once, where executing `freshSchemaSQL` parsed and compiled each,
    /// wrote its pages and parsed it again — a fifth of a cold start. The image is the database
    /// `freshSchemaSQL` makes (StoreTests holds the two together and rewrites the image when
    /// they part); copied with the backup API, the store stays a plain `:memory:` database.
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
            guard offset + length <= size, i + length <= runs.count else { sqlite3_free(buffer); throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "the built-in empty store image is damaged") }
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
        guard sqlite3_deserialize(source, "main", buffer, sqlite3_int64(size), sqlite3_int64(size),
                                  UInt32(SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY)) == SQLITE_OK,
              let backup = sqlite3_backup_init(db.sqliteConnection, "main", source, "main") else {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "the built-in empty store image cannot be loaded: \(String(cString: sqlite3_errmsg(db.sqliteConnection)))")
        }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE, finished == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: finished), message: "the built-in empty store image cannot be copied: \(String(cString: sqlite3_errmsg(db.sqliteConnection)))")
        }
        try db.execute(sql: syncKeySQL)
    }

    /// `freshStoreImage` for `sql`: the database it makes, serialized, as runs of non-zero bytes
    /// in base64 (an empty database is mostly zeros), in lines of 100 characters.
    package static func freshImage(of sql: String) throws -> String {
        let queue = try DatabaseQueue()
        return try queue.writeWithoutTransaction { db in
            try db.execute(sql: sql)
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
                guard bytes[i] != 0 else { i += 1; continue }
                // A run ends at 8 zero bytes in a row (shorter gaps cost less kept than split).
                var end = i, zeros = 0
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
