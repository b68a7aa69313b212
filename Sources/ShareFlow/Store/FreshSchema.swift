import GRDB

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
            modifiedAt REAL NOT NULL, tag TEXT NOT NULL DEFAULT '', shortGUID TEXT, createdAt REAL,
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
        INSERT INTO shareflow_meta VALUES ('format', 'shareflow'), ('schemaVersion', '7'), ('syncKey', lower(hex(randomblob(32))));
        INSERT INTO grdb_migrations VALUES ('v1'), ('v2'), ('v3'), ('v4'), ('v5'), ('v6'), ('v7');
        """
}
