import Foundation
import GRDB

extension Store {
    /// SQLite's migrations: v1 to v9 by hand (each moved data as the schema changed: history,
    /// never edited), then one per version of `catalogue` from `StoreCatalogue.derivedFrom`,
    /// derived from it (`StoreCatalogue.step`). A schema change is made in the catalogue.
    static func migrator(_ catalogue: StoreCatalogue = .current) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE shareflow_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                    INSERT INTO shareflow_meta VALUES ('format', 'shareflow'), ('schemaVersion', '1');

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

                    CREATE TABLE zone (
                        id INTEGER PRIMARY KEY,
                        container TEXT NOT NULL,
                        scope TEXT NOT NULL,
                        ownerID INTEGER NOT NULL,
                        name TEXT NOT NULL,
                        UNIQUE (container, scope, ownerID, name));
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
                        modifiedAt REAL NOT NULL,
                        UNIQUE (zoneID, name));
                    CREATE INDEX record_parent ON record(zoneID, parentName);

                    CREATE TABLE share (
                        id INTEGER PRIMARY KEY,
                        recordID INTEGER NOT NULL UNIQUE REFERENCES record(id) ON DELETE CASCADE,
                        zoneID INTEGER NOT NULL REFERENCES zone(id) ON DELETE CASCADE,
                        url TEXT NOT NULL UNIQUE,
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
                    """
            )
        }
        // R21: change tags are random (a counter restarts when a record is deleted and made
        // again, so a copy of the old record would pass for the new one). A share is a record
        // whose state lives in two more tables: any change to them is a change of the share.
        migrator.registerMigration("v2") { db in
            try db.execute(
                sql: """
                    ALTER TABLE record ADD COLUMN tag TEXT NOT NULL DEFAULT '';
                    UPDATE record SET tag = lower(hex(randomblob(6)));
                    UPDATE shareflow_meta SET value = '2' WHERE key = 'schemaVersion';
                    CREATE TRIGGER participant_insert_changes_share AFTER INSERT ON participant BEGIN
                        UPDATE record SET tag = lower(hex(randomblob(6)))
                        WHERE id = (SELECT recordID FROM share WHERE id = NEW.shareID);
                    END;
                    CREATE TRIGGER participant_update_changes_share AFTER UPDATE ON participant BEGIN
                        UPDATE record SET tag = lower(hex(randomblob(6)))
                        WHERE id = (SELECT recordID FROM share WHERE id = NEW.shareID);
                    END;
                    CREATE TRIGGER share_update_changes_share AFTER UPDATE ON share BEGIN
                        UPDATE record SET tag = lower(hex(randomblob(6))) WHERE id = NEW.recordID;
                    END;
                    """
            )
        }
        // SPEC §13: the server's credentials, stored as SHA-256 hashes (never the tokens).
        migrator.registerMigration("v3") { db in
            try db.execute(
                sql: """
                    CREATE TABLE credential (
                        id INTEGER PRIMARY KEY,
                        kind TEXT NOT NULL,
                        container TEXT NOT NULL,
                        hash TEXT NOT NULL UNIQUE,
                        accountID INTEGER REFERENCES account(id) ON DELETE CASCADE,
                        expiresAt REAL,
                        createdAt REAL NOT NULL);
                    CREATE INDEX credential_lookup ON credential(kind, container, hash);
                    UPDATE shareflow_meta SET value = '3' WHERE key = 'schemaVersion';
                    """
            )
        }
        // SPEC §13: a share's URL is `<public URL>/share/<token>`, so the store keeps only the
        // token (the server's --public-url decides the rest); a record may hold a short GUID
        // reserved by `createShortGUID`, which the share made for it later takes as its token;
        // a server-to-server key is stored as its public key (PEM), named by its key ID.
        // The share trigger is dropped around the rewrite so that no change tag moves.
        migrator.registerMigration("v4") { db in
            try db.execute(
                sql: """
                    DROP TRIGGER share_update_changes_share;
                    ALTER TABLE share RENAME COLUMN url TO token;
                    UPDATE share SET token = replace(token, rtrim(token, replace(token, '/', '')), '');
                    CREATE TRIGGER share_update_changes_share AFTER UPDATE ON share BEGIN
                        UPDATE record SET tag = lower(hex(randomblob(6))) WHERE id = NEW.recordID;
                    END;
                    ALTER TABLE record ADD COLUMN shortGUID TEXT;
                    CREATE UNIQUE INDEX record_shortGUID ON record(shortGUID) WHERE shortGUID IS NOT NULL;
                    ALTER TABLE credential ADD COLUMN publicKey TEXT;
                    UPDATE shareflow_meta SET value = '4' WHERE key = 'schemaVersion';
                    """
            )
        }
        // R31: a record's creation date (its creator and last modifier were kept from v1). Rows
        // written before take their modification date, the best known. The record trigger is
        // not touched, so no change tag moves.
        migrator.registerMigration("v5") { db in
            try db.execute(
                sql: """
                    ALTER TABLE record ADD COLUMN createdAt REAL;
                    UPDATE record SET createdAt = modifiedAt;
                    UPDATE shareflow_meta SET value = '5' WHERE key = 'schemaVersion';
                    """
            )
        }
        // R32: every container has a development and a production data set. A zone names its
        // environment (rows written before are development's); the table is rebuilt because its
        // uniqueness now includes the environment. Records, shares and participants hang off
        // zones, so they follow. An API token names its environment; other credentials (a
        // user's web auth token, a server key) serve both. SPEC §12: a query page reads about
        // as many rows as it returns, in the order of two indexes (by name; by modification).
        migrator.registerMigration("v6") { db in
            try db.execute(
                sql: """
                    CREATE TABLE zone_v6 (
                        id INTEGER PRIMARY KEY,
                        container TEXT NOT NULL,
                        environment TEXT NOT NULL DEFAULT 'development',
                        scope TEXT NOT NULL,
                        ownerID INTEGER NOT NULL,
                        name TEXT NOT NULL,
                        UNIQUE (container, environment, scope, ownerID, name));
                    INSERT INTO zone_v6 (id, container, environment, scope, ownerID, name)
                        SELECT id, container, 'development', scope, ownerID, name FROM zone;
                    DROP TABLE zone;
                    ALTER TABLE zone_v6 RENAME TO zone;
                    ALTER TABLE credential ADD COLUMN environment TEXT;
                    UPDATE credential SET environment = 'development' WHERE kind = 'apiToken';
                    CREATE INDEX record_type_name ON record(zoneID, type, name);
                    CREATE INDEX record_type_modified ON record(zoneID, type, modifiedAt, name);
                    UPDATE shareflow_meta SET value = '6' WHERE key = 'schemaVersion';
                    """
            )
        }
        // SPEC §14: the change log (`StoreTransaction+ChangeLog.swift`). A store made before
        // starts its feeds at its current state: every record of a private zone is logged once,
        // every participant's view is taken, every zone is in its owner's database feed.
        migrator.registerMigration("v7") { db in
            try db.execute(
                sql: """
                    ALTER TABLE zone ADD COLUMN changeSeq INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE zone ADD COLUMN keptFrom INTEGER NOT NULL DEFAULT 0;
                    CREATE TABLE zone_change (
                        zoneID INTEGER NOT NULL REFERENCES zone(id) ON DELETE CASCADE,
                        name TEXT NOT NULL,
                        type TEXT NOT NULL,
                        seq INTEGER NOT NULL,
                        deleted INTEGER NOT NULL,
                        at REAL NOT NULL,
                        PRIMARY KEY (zoneID, name)) WITHOUT ROWID;
                    CREATE INDEX zone_change_seq ON zone_change(zoneID, seq);
                    CREATE TABLE view_change (
                        zoneID INTEGER NOT NULL REFERENCES zone(id) ON DELETE CASCADE,
                        viewerID INTEGER NOT NULL REFERENCES account(id) ON DELETE CASCADE,
                        name TEXT NOT NULL,
                        type TEXT NOT NULL,
                        seq INTEGER NOT NULL,
                        deleted INTEGER NOT NULL,
                        at REAL NOT NULL,
                        PRIMARY KEY (zoneID, viewerID, name)) WITHOUT ROWID;
                    CREATE INDEX view_change_seq ON view_change(zoneID, viewerID, seq);
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
                    INSERT INTO shareflow_meta (key, value) VALUES ('syncKey', lower(hex(randomblob(32))));
                    UPDATE shareflow_meta SET value = '7' WHERE key = 'schemaVersion';
                    INSERT INTO shareflow_meta (key, value) VALUES ('logPending', '1');
                    """
            )
            // The existing contents are logged by v8, which runs next: the log's writers name
            // each record's row, a column v8 adds.
        }
        migrator.registerMigration("v8") { db in
            // A feed page walks the position index: holding what an entry says (tombstone or
            // not, the record's type, its record's row; the name comes with the key), it reads
            // no log row, and each record by its row rather than through the name index.
            try db.execute(
                sql: """
                    ALTER TABLE zone_change ADD COLUMN recordID INTEGER;
                    ALTER TABLE view_change ADD COLUMN recordID INTEGER;
                    UPDATE zone_change SET recordID = (SELECT id FROM record r WHERE r.zoneID = zone_change.zoneID AND r.name = zone_change.name)
                    WHERE deleted = 0;
                    UPDATE view_change SET recordID = (SELECT id FROM record r WHERE r.zoneID = view_change.zoneID AND r.name = view_change.name)
                    WHERE deleted = 0;
                    DROP INDEX zone_change_seq;
                    CREATE INDEX zone_change_seq ON zone_change(zoneID, seq, deleted, recordID, type);
                    DROP INDEX view_change_seq;
                    CREATE INDEX view_change_seq ON view_change(zoneID, viewerID, seq, deleted, recordID, type);
                    UPDATE shareflow_meta SET value = '8' WHERE key = 'schemaVersion';
                    """
            )
            if try String.fetchOne(db, sql: "SELECT value FROM shareflow_meta WHERE key = 'logPending'") != nil {
                try StoreTransaction(db, path: nil).logExistingContents(at: Date().timeIntervalSince1970)
                try db.execute(sql: "DELETE FROM shareflow_meta WHERE key = 'logPending'")
            }
        }
        migrator.registerMigration("v9") { db in
            // The owner's feed is the record table itself: each record row carries its
            // position (`seq`, written by the record's own INSERT or UPDATE) under an index
            // by zone and position, and `zone_change` keeps only tombstones. A save no longer
            // writes a log row for its owner. A live entry's position moves to its record; a
            // record of a private zone with none (another program wrote it) is placed after
            // the zone's last position, as v8 logged a store's contents. A live entry whose
            // record is gone (another program deleted it) stays, a tombstone: v8 sent it as a
            // deletion, and a reader from before it must still be told. The zone's last
            // position is the highest of its counter and every entry's, each feed's: a counter
            // another program left behind its entries must not hand theirs out again.
            try db.execute(
                sql: """
                    ALTER TABLE record ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
                    UPDATE record SET seq = (SELECT l.seq FROM zone_change l WHERE l.zoneID = record.zoneID AND l.name = record.name AND l.deleted = 0)
                    WHERE EXISTS (SELECT 1 FROM zone_change l WHERE l.zoneID = record.zoneID AND l.name = record.name AND l.deleted = 0);
                    UPDATE zone SET changeSeq = MAX(changeSeq, COALESCE((SELECT MAX(seq) FROM zone_change WHERE zoneID = zone.id), 0),
                                                    COALESCE((SELECT MAX(seq) FROM view_change WHERE zoneID = zone.id), 0));
                    CREATE TEMPORARY TABLE unlogged AS
                        SELECT r.id, (SELECT changeSeq FROM zone WHERE id = r.zoneID) + ROW_NUMBER() OVER (PARTITION BY r.zoneID ORDER BY r.id) AS seq
                        FROM record r WHERE r.seq = 0 AND r.zoneID IN (SELECT id FROM zone WHERE scope = 'private');
                    UPDATE record SET seq = (SELECT seq FROM unlogged WHERE unlogged.id = record.id) WHERE id IN (SELECT id FROM unlogged);
                    DROP TABLE unlogged;
                    UPDATE zone SET changeSeq = MAX(changeSeq, COALESCE((SELECT MAX(seq) FROM record WHERE zoneID = zone.id), 0));
                    UPDATE zone_change SET deleted = 1
                    WHERE deleted = 0 AND NOT EXISTS (SELECT 1 FROM record r WHERE r.zoneID = zone_change.zoneID AND r.name = zone_change.name);
                    DELETE FROM zone_change WHERE deleted = 0;
                    CREATE INDEX record_seq ON record(zoneID, seq);
                    UPDATE shareflow_meta SET value = '9' WHERE key = 'schemaVersion';
                    """
            )
        }
        if catalogue.version >= StoreCatalogue.derivedFrom {
            for version in StoreCatalogue.derivedFrom...catalogue.version {
                migrator.registerMigration("v\(version)") { db in
                    for statement in catalogue.step(to: version, .sqlite) { try db.execute(sql: statement) }
                    try db.execute(sql: "UPDATE shareflow_meta SET value = ? WHERE key = 'schemaVersion'", arguments: [String(version)])
                }
            }
        }
        return migrator
    }
}
