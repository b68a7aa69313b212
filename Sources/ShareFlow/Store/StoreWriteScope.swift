import Foundation

/// What one write transaction changes, declared before it begins (SPEC §16 M5): the whole
/// store, or only the rows of some zones. A driver whose writers run at once (PostgreSQL's
/// nodes) locks what it names before the transaction's first statement, so that writes to
/// different zones proceed side by side and writes to one zone queue, in one order (no two
/// writers wait for each other). On SQLite one process writes at a time, and it is only kept.
///
/// A write never writes what it holds no lock for, whatever it declared:
/// - every zone a write finds is claimed (`StoreTransaction.claim(zone:)`, from the engine's
///   zone lookups) before its rows are read;
/// - every statement it writes names a table of `tablesOfZones`, whose rows belong to one zone
///   (or, for `feed`, are moved in one order by every writer: `FeedBumps.FeedMove`), or the
///   write takes the whole store first. The list is built up: a table added later is outside
///   it until someone says why its rows are a zone's.
/// What it did not declare is taken if free and never waited for; held by another writer, the
/// write fails as busy (`serviceUnavailable` with `retryAfter`), having written nothing more.
///
/// ```swift
/// let zone = ZoneLockKey(container: container, ownerName: "_abc", zoneName: "Notes")
/// try store.write(scope: .zones([zone])) { tx in … }
/// ```
package enum StoreWriteScope: Sendable, Equatable {
    /// Anything: the driver makes it the only writer (accounts, credentials, zones made or
    /// deleted, maintenance, a script's batch).
    case wholeStore
    /// Only the rows of these zones (their records, shares, participants, change log), and the
    /// database feeds those rows move.
    case zones(Set<ZoneLockKey>)

    /// The tables a zone-scoped write may write. `zone`: its own counter, and a default zone
    /// made on first use (its ID taken under `zoneIDAllocation`). `share_request`,
    /// `share_block`: a share's access requests and blocks (SPEC §17), each row of one share,
    /// so of its zone. `asset_upload`, `asset_blob`, `asset_chunk` (SPEC §19): no zone's, but
    /// written only by statements that are right side by side — an upload's row is claimed by
    /// one UPDATE or DELETE whose count says whether this writer won it, and blobs are named by
    /// their content, inserted once (`ON CONFLICT`) and removed only by collection, which
    /// holds the whole store. SPEC §20: `notify_change` rows are a zone's (the outbox of its
    /// changes); `subscription` rows are written by one keyed upsert or delete each, their zone
    /// claimed by the save's lookup; `notify_inbox` counters are moved by one `UPDATE …
    /// RETURNING` each, a dispatch moving its inboxes in one order (account); `notification`
    /// rows are keyed by the position that UPDATE handed out; `device_token` rows change by
    /// single-row compare-and-set UPDATEs whose count says who won.
    static let tablesOfZones: Set<String> = [
        "zone", "record", "share", "participant", "zone_change", "view_change", "feed", "feed_change", "share_request", "share_block",
        "asset_upload", "asset_blob", "asset_chunk", "subscription", "notify_change", "notify_inbox", "notification", "device_token",
    ]

    /// Whether this scope lets a write `other` declared run under it (a lock taken for this
    /// scope serves `other`).
    package func covers(_ other: StoreWriteScope) -> Bool {
        switch (self, other) {
        case (.wholeStore, _): return true
        case (.zones, .wholeStore): return false
        case (.zones(let held), .zones(let wanted)): return wanted.isSubset(of: held)
        }
    }

    /// The zones' keys, in the one order every driver locks them (no two writers wait on each
    /// other's zones).
    package var orderedZoneKeys: [ZoneLockKey] {
        guard case .zones(let keys) = self else { return [] }
        return keys.sorted { $0.value < $1.value }
    }

    /// Whether `sql` writes (its first word; a `WITH` that names a table it writes).
    static func writes(_ sql: String) -> Bool {
        let first = sql.prefix(while: { !$0.isLetter }).count
        let word = sql.dropFirst(first).prefix(7).uppercased()
        if word.hasPrefix("INSERT") || word.hasPrefix("UPDATE") || word.hasPrefix("DELETE") || word.hasPrefix("REPLACE") { return true }
        return word.hasPrefix("WITH") && writtenTable(sql) != nil
    }

    /// The table a writing statement writes (`INSERT INTO t`, `UPDATE t`, `DELETE FROM t`,
    /// its first), lower-cased; nil when none is found.
    static func writtenTable(_ sql: String) -> String? {
        let words = sql.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "(" }).map { $0.uppercased() }
        for (i, word) in words.enumerated() {
            switch word {
            case "INTO" where i > 0 && (words[i - 1] == "INSERT" || (i > 2 && words[i - 3] == "INSERT" && words[i - 2] == "OR")),
                "UPDATE" where i == 0 || words[i - 1] != "DO",
                "FROM" where i > 0 && words[i - 1] == "DELETE":
                return i + 1 < words.count ? words[i + 1].lowercased() : nil
            default:
                continue
            }
        }
        return nil
    }
}

/// A zone as a write's scope names it: by container, environment, owner's user record name
/// (or the public database's owner) and zone name, so a write can name a zone before it is
/// read, or made. Two zones whose keys collide only wait for each other.
package struct ZoneLockKey: Hashable, Sendable, CustomStringConvertible {
    /// FNV-1a of the names, NUL-separated.
    package let value: Int64
    package let description: String

    /// Not a zone: the lock that hands out zone IDs one at a time while zone-scoped writes run
    /// at once (a new zone's ID is the highest one plus one). Declared with a write's zones by
    /// one that makes a zone, so that it is taken in the same order as theirs: "ShareZid".
    package static let zoneIDAllocation = ZoneLockKey(value: 0x5368_6172_655A_6964, description: "the lock on new zones' IDs")

    private init(value: Int64, description: String) {
        self.value = value
        self.description = description
    }

    package init(container: ContainerID, ownerName: String, zoneName: String) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in [container.identifier, container.environment.rawValue, ownerName, zoneName] {
            for byte in part.utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01B3
            }
            // The NUL between names (hashing 0 leaves the xor as it is).
            hash = hash &* 0x0000_0100_0000_01B3
        }
        value = Int64(bitPattern: hash)
        description = "zone \(zoneName) of \(ownerName) in \(container.identifier) (\(container.environment.rawValue))"
    }

    /// `zoneID` as named (its owner as the caller gave it, resolved or not).
    package init(container: ContainerID, zoneID: RecordZoneID) {
        self.init(container: container, ownerName: zoneID.ownerName, zoneName: zoneID.zoneName)
    }

    /// The key as two 32-bit halves (PostgreSQL's two-key advisory locks, a space apart from
    /// its one-key locks).
    package var halves: (Int32, Int32) {
        (Int32(truncatingIfNeeded: value >> 32), Int32(truncatingIfNeeded: value))
    }
}
