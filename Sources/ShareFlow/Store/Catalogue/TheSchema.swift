extension StoreCatalogue {
    /// ShareFlow's schema (version 16). A change is made here alone: a column or table with
    /// `since: 16` (and `version: 16`) reaches both drivers' new and existing stores, `store
    /// check` and `store copy`. Tables come after those they reference.
    package static let current: StoreCatalogue = {
        typealias C = Column
        let tables: [Table] = [
            Table("shareflow_meta", key: .given(["key"]), columns: [C("key", .text), C("value", .text)]),
            Table(
                "account",
                key: .made,
                columns: [
                    C("id", .integer), C("userRecordID", .text, unique: true), C("name", .text, default: "'{}'", read: StoredTable.name),
                    C("discoverability", .text, read: StoredTable.word(Discoverability.self)), C("createdAt", .real),
                ]
            ),
            Table(
                "account_email",
                key: .given(["email"]),
                columns: [
                    C("email", .text), C("accountID", .integer, references: "account(id)", cascade: true), C("position", .integer),
                ],
                withoutRowID: true
            ),
            Table(
                "account_phone",
                key: .given(["phone"]),
                columns: [
                    C("phone", .text), C("accountID", .integer, references: "account(id)", cascade: true), C("position", .integer),
                ],
                withoutRowID: true
            ),
            Table(
                "contact",
                key: .made,
                columns: [
                    C("id", .integer), C("accountID", .integer, references: "account(id)", cascade: true),
                    C("kind", .text, read: StoredTable.lookupKind), C("value", .text), C("contactIdentifier", .text),
                ]
            ),
            Table(
                "zone",
                key: .given(["id"]),
                columns: [
                    C("id", .integer), C("container", .text),
                    C("environment", .text, default: "'development'", read: StoredTable.word(CloudEnvironment.self)),
                    C("scope", .text, read: StoredTable.scope), C("ownerID", .integer), C("name", .text),
                    C("changeSeq", .integer, default: "0"), C("keptFrom", .integer, default: "0"),
                ],
                uniques: [["container", "environment", "scope", "ownerID", "name"]]
            ),
            Table(
                "record",
                key: .made,
                columns: [
                    C("id", .integer), C("zoneID", .integer, references: "zone(id)", cascade: true), C("name", .text), C("type", .text),
                    C("fields", .text, read: StoredTable.fields), C("parentName", .text, nullable: true), C("changeTag", .integer),
                    C("createdBy", .integer, nullable: true), C("modifiedBy", .integer, nullable: true), C("modifiedAt", .real),
                    C("tag", .text, default: "''"), C("shortGUID", .text, nullable: true), C("createdAt", .real, nullable: true),
                    C("seq", .integer, default: "0"),
                ],
                uniques: [["zoneID", "name"]]
            ),
            Table(
                "share",
                key: .made,
                columns: [
                    C("id", .integer), C("recordID", .integer, unique: true, references: "record(id)", cascade: true),
                    C("zoneID", .integer, references: "zone(id)", cascade: true), C("token", .text, unique: true),
                    C("rootName", .text, nullable: true), C("publicPermission", .text, read: StoredTable.word(ParticipantPermission.self)),
                    // 12: whether people without an invitation may ask to join (R38).
                    C("allowsAccessRequests", .integer, default: "0", since: 12),
                ]
            ),
            Table(
                "participant",
                key: .made,
                columns: [
                    C("id", .integer), C("shareID", .integer, references: "share(id)", cascade: true), C("participantID", .text, unique: true),
                    C("accountID", .integer, nullable: true, references: "account(id)"), C("lookupKind", .text, read: StoredTable.lookupKind),
                    C("lookupValue", .text), C("role", .text, read: StoredTable.word(ParticipantRole.self)),
                    C("permission", .text, read: StoredTable.word(ParticipantPermission.self)),
                    C("status", .text, read: StoredTable.word(ParticipantAcceptanceStatus.self)), C("addedAt", .real),
                    // 12: added by approving their access request (R41).
                    C("approvedRequester", .integer, default: "0", since: 12),
                    // 12: a one-time link's token (R44), unique store-wide like a share's
                    // (an index: SQLite adds no UNIQUE column to a table that exists).
                    C("oneTimeToken", .text, nullable: true, since: 12),
                ]
            ),
            // 12: open access requests (R39): one per account and share, the address the
            // requester consented to show (R40), closed by deleting the row.
            Table(
                "share_request",
                key: .made,
                columns: [
                    C("id", .integer), C("shareID", .integer, references: "share(id)", cascade: true),
                    C("accountID", .integer, references: "account(id)", cascade: true), C("requestID", .text, unique: true),
                    C("lookupKind", .text, read: StoredTable.lookupKind), C("lookupValue", .text), C("requestedAt", .real),
                ],
                uniques: [["shareID", "accountID"]],
                since: 12
            ),
            // 12: identities blocked from asking or joining (R41, R42): by account where the
            // identity has one, else by address.
            Table(
                "share_block",
                key: .made,
                columns: [
                    C("id", .integer), C("shareID", .integer, references: "share(id)", cascade: true),
                    C("accountID", .integer, nullable: true, references: "account(id)", cascade: true), C("blockID", .text, unique: true),
                    C("lookupKind", .text, read: StoredTable.lookupKind), C("lookupValue", .text), C("blockedAt", .real),
                ],
                since: 12
            ),
            Table(
                "credential",
                key: .made,
                columns: [
                    C("id", .integer), C("kind", .text, read: StoredTable.word(StoredCredential.Kind.self)), C("container", .text),
                    C("hash", .text, unique: true), C("accountID", .integer, nullable: true, references: "account(id)", cascade: true),
                    C("expiresAt", .real, nullable: true), C("createdAt", .real), C("publicKey", .text, nullable: true),
                    C("environment", .text, nullable: true, read: StoredTable.optionalWord(CloudEnvironment.self)),
                ]
            ),
            Table(
                "zone_change",
                key: .given(["zoneID", "name"]),
                columns: [
                    C("zoneID", .integer, references: "zone(id)", cascade: true), C("name", .text), C("type", .text), C("seq", .integer),
                    C("deleted", .integer), C("at", .real), C("recordID", .integer, nullable: true),
                ],
                withoutRowID: true
            ),
            Table(
                "view_change",
                key: .given(["zoneID", "viewerID", "name"]),
                columns: [
                    C("zoneID", .integer, references: "zone(id)", cascade: true), C("viewerID", .integer, references: "account(id)", cascade: true),
                    C("name", .text), C("type", .text), C("seq", .integer), C("deleted", .integer), C("at", .real),
                    C("recordID", .integer, nullable: true),
                ],
                withoutRowID: true
            ),
            Table(
                "feed",
                key: .made,
                columns: [
                    C("id", .integer), C("accountID", .integer, references: "account(id)", cascade: true), C("container", .text),
                    C("environment", .text, read: StoredTable.word(CloudEnvironment.self)),
                    C("scope", .text, read: { _ = try $0.word($1, $2, in: ["private", "shared"]) }), C("seq", .integer), C("keptFrom", .integer),
                ],
                uniques: [["accountID", "container", "environment", "scope"]]
            ),
            Table(
                "feed_change",
                key: .given(["feedID", "zoneName", "ownerName"]),
                columns: [
                    C("feedID", .integer, references: "feed(id)", cascade: true), C("zoneName", .text), C("ownerName", .text),
                    C("seq", .integer), C("deleted", .integer), C("reason", .text, nullable: true), C("at", .real),
                ],
                withoutRowID: true
            ),
            // 10: the rate-limit buckets every process on the store may share (a PostgreSQL
            // cluster's nodes do: `PostgresRateBuckets`). A bucket lost in a crash is a full
            // one, which is what a missing row reads as anyway: not logged, not copied.
            Table(
                "rate_bucket",
                key: .given(["key"]),
                columns: [
                    C("key", .text), C("tokens", .real), C("at", .real), C("granted", .integer),
                ],
                withoutRowID: true,
                unlogged: true,
                kept: false,
                since: 10
            ),
            // 11: the policy decision log every process on the store writes and reads (SPEC §18 P3).
            Table(
                "decision",
                key: .made,
                columns: [
                    C("id", .integer), C("point", .text), C("policies", .text, read: StoredTable.jsonStrings), C("allow", .integer),
                    C("reasons", .text, read: StoredTable.jsonStrings),
                    C("duration", .real), C("at", .real),
                    // 13: what OPA's decision log carries (SPEC §18 P3): who asked where, about
                    // which share, the input as the policies saw it (JSON, masked), each policy's
                    // verdict and line, the process, and the shadow candidates' verdict (P6).
                    C("caller", .text, nullable: true, since: 13), C("container", .text, nullable: true, since: 13),
                    C("environment", .text, nullable: true, since: 13), C("share", .text, nullable: true, since: 13),
                    C("input", .text, nullable: true, since: 13), C("consulted", .text, nullable: true, since: 13),
                    C("node", .text, nullable: true, since: 13), C("shadow", .text, nullable: true, since: 13),
                ],
                since: 11
            ),
            // 14: asset uploads (SPEC §19 A3): a reservation made by assets/upload (only the
            // SHA-256 of its URL's secret is kept), its bytes once POSTed, the receipt's hash
            // until a save redeems it (the row is then deleted: a receipt is used once).
            Table(
                "asset_upload",
                key: .made,
                columns: [
                    C("id", .integer), C("secretHash", .text, unique: true), C("receiptHash", .text, nullable: true, unique: true),
                    C("accountID", .integer, references: "account(id)", cascade: true), C("container", .text), C("environment", .text),
                    C("scope", .text), C("zoneName", .text, nullable: true), C("recordName", .text, nullable: true),
                    C("fieldName", .text, nullable: true), C("checksum", .text, nullable: true), C("size", .integer, nullable: true),
                    C("createdAt", .real), C("expiresAt", .real),
                ],
                since: 14
            ),
            // 14: assets' bytes in a driver's database (SPEC §19 A4), so every node serves every
            // blob: one row per content, its bytes in 1 MiB chunks (base64). An SQLite store
            // keeps its blobs in files beside it and these tables empty.
            Table(
                "asset_blob",
                key: .given(["checksum"]),
                columns: [C("checksum", .text), C("size", .integer), C("chunks", .integer), C("createdAt", .real)],
                withoutRowID: true,
                since: 14
            ),
            Table(
                "asset_chunk",
                key: .given(["checksum", "n"]),
                columns: [C("checksum", .text, references: "asset_blob(checksum)", cascade: true), C("n", .integer), C("data", .text)],
                withoutRowID: true,
                since: 14
            ),
            // 15: subscriptions (SPEC §20 N1): one row each, its zone's row when it names one
            // (gone with the zone), its predicate as JSON, `wire`: the HTTP `query` as sent
            // (its recordType and filterBy), `cost`: what evaluating it costs each change.
            Table(
                "subscription",
                key: .made,
                columns: [
                    C("id", .integer), C("accountID", .integer, references: "account(id)", cascade: true), C("container", .text),
                    C("environment", .text), C("scope", .text), C("subscriptionID", .text), C("kind", .text),
                    C("zoneID", .integer, nullable: true, references: "zone(id)", cascade: true), C("zoneName", .text, nullable: true),
                    C("zoneOwner", .text, nullable: true), C("recordType", .text, nullable: true), C("predicate", .text, nullable: true),
                    C("firesOn", .integer, default: "0"), C("firesOnce", .integer, default: "0"), C("info", .text),
                    C("wire", .text, nullable: true), C("createdAt", .real), C("cost", .integer, default: "1"),
                ],
                uniques: [["accountID", "container", "environment", "scope", "subscriptionID"]],
                since: 15
            ),
            // 15: the outbox (SPEC §20 N2): one row per record change in a zone some
            // subscription may fire for, written in the change's transaction and evaluated
            // after it commits (`Engine.dispatchNotifications`); the record's fields as saved
            // (or last saved, for a delete); `viewers`: the participants the change log sent it
            // to (who a shared-database subscription may tell); `progress`: the last
            // subscription a dispatch evaluated for it. `node`: the process that wrote it.
            Table(
                "notify_change",
                key: .made,
                columns: [
                    C("id", .integer), C("zoneID", .integer, references: "zone(id)", cascade: true), C("node", .text), C("name", .text),
                    C("type", .text), C("reason", .integer), C("seq", .integer), C("writerID", .integer, nullable: true),
                    C("clientID", .text, nullable: true), C("fields", .text, nullable: true), C("createdBy", .integer, nullable: true),
                    C("createdAt", .real, nullable: true), C("viewers", .text, nullable: true), C("progress", .integer, default: "0"),
                    C("at", .real),
                ],
                since: 15
            ),
            // 15: each account's notifications in a container (SPEC §20 N3): a counter, and
            // the first position still kept (older ones were dropped: `queueMax`).
            Table(
                "notify_inbox",
                key: .made,
                columns: [
                    C("id", .integer), C("accountID", .integer, references: "account(id)", cascade: true), C("container", .text),
                    C("environment", .text), C("seq", .integer, default: "0"), C("keptFrom", .integer, default: "1"),
                    C("dropped", .integer, default: "0"),
                ],
                uniques: [["accountID", "container", "environment"]],
                since: 15
            ),
            Table(
                "notification",
                key: .given(["inboxID", "seq"]),
                columns: [
                    C("inboxID", .integer, references: "notify_inbox(id)", cascade: true), C("seq", .integer), C("nid", .text),
                    C("subscriptionID", .text), C("scope", .text), C("zoneID", .integer), C("recordName", .text, nullable: true),
                    C("reason", .integer, nullable: true), C("clientID", .text, nullable: true), C("payload", .text), C("at", .real),
                ],
                withoutRowID: true,
                since: 15
            ),
            // 15: device tokens (SPEC §20 N3): only the hashes of the token and of its poll
            // URL's secret; a cursor into its account's inbox (`delivered`), and the web auth
            // token that made it (its hash: revoked, the token ends too).
            Table(
                "device_token",
                key: .made,
                columns: [
                    C("id", .integer), C("tokenHash", .text, unique: true), C("pollHash", .text, unique: true),
                    C("accountID", .integer, references: "account(id)", cascade: true), C("credentialHash", .text, nullable: true),
                    C("container", .text), C("environment", .text), C("apnsEnvironment", .text), C("clientID", .text, nullable: true),
                    C("delivered", .integer, default: "0"), C("dropped", .integer, default: "0"), C("createdAt", .real),
                    C("lastPollAt", .real),
                ],
                since: 15
            ),
        ]
        let indexes: [Index] = [
            Index("account_email_account", on: "account_email", ["accountID"]),
            Index("account_phone_account", on: "account_phone", ["accountID"]),
            // 16: an account's first address in one seek of the index alone
            // (`accountIdentityColumns`), where it took four: every participant list and
            // caller's identity reads it (issue 48).
            Index("account_email_first", on: "account_email", ["accountID", "position", "email"], since: 16),
            Index("account_phone_first", on: "account_phone", ["accountID", "position", "phone"], since: 16),
            Index("contact_account", on: "contact", ["accountID"]),
            Index("record_parent", on: "record", ["zoneID", "parentName"]),
            Index("record_shortGUID", on: "record", ["shortGUID"], unique: true, where: "shortGUID IS NOT NULL"),
            Index("record_type_name", on: "record", ["zoneID", "type", "name"]),
            Index("record_type_modified", on: "record", ["zoneID", "type", "modifiedAt", "name"]),
            Index("record_seq", on: "record", ["zoneID", "seq"]),
            Index("share_zone", on: "share", ["zoneID", "rootName"]),
            Index("participant_share", on: "participant", ["shareID", "accountID"]),
            Index("participant_account", on: "participant", ["accountID"]),
            Index("participant_lookup", on: "participant", ["lookupKind", "lookupValue"]),
            Index("credential_lookup", on: "credential", ["kind", "container", "hash"]),
            Index("zone_change_seq", on: "zone_change", ["zoneID", "seq", "deleted", "recordID", "type"]),
            Index("view_change_seq", on: "view_change", ["zoneID", "viewerID", "seq", "deleted", "recordID", "type"]),
            Index("view_change_name", on: "view_change", ["zoneID", "name", "deleted"]),
            Index("feed_change_seq", on: "feed_change", ["feedID", "seq"]),
            Index("rate_bucket_at", on: "rate_bucket", ["at"], since: 10),
            Index("share_request_age", on: "share_request", ["requestedAt"], since: 12),
            Index("participant_one_time", on: "participant", ["oneTimeToken"], unique: true, where: "oneTimeToken IS NOT NULL", since: 12),
            Index("share_block_share", on: "share_block", ["shareID", "accountID"], since: 12),
            Index("asset_upload_expires", on: "asset_upload", ["expiresAt"], since: 14),
            Index("asset_upload_account", on: "asset_upload", ["accountID", "expiresAt"], since: 14),
            Index("asset_blob_created", on: "asset_blob", ["createdAt"], since: 14),
            Index("subscription_zone", on: "subscription", ["zoneID", "kind"], since: 15),
            Index("subscription_zoneless", on: "subscription", ["container", "environment", "zoneID", "scope", "accountID"], since: 15),
            Index("notify_change_zone", on: "notify_change", ["zoneID", "id"], since: 15),
            Index("device_token_account", on: "device_token", ["accountID", "container", "environment"], since: 15),
            Index("device_token_idle", on: "device_token", ["lastPollAt"], since: 15),
        ]
        // A share's change tag moves when its participants or its own row change (R31): the
        // tag is on the share's record row.
        let triggers: [Trigger] = [
            Trigger(
                "changes_share",
                on: "participant",
                after: [.insert, .update],
                "UPDATE record SET tag = {tag}\n    WHERE id = (SELECT recordID FROM share WHERE id = NEW.shareID)"
            ),
            Trigger("changes_share", on: "share", after: [.update], "UPDATE record SET tag = {tag} WHERE id = NEW.recordID"),
        ]
        return StoreCatalogue(version: 16, tables: tables, indexes: indexes, triggers: triggers)
    }()
}
