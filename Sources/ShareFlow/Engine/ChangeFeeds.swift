import Crypto
import Foundation

/// What changed in a zone since a token (O10, SPEC §14 S2, S3): each changed record once, in its
/// latest state, each deleted one once, oldest first; the token to ask with next.
public struct RecordZoneChanges {
    /// Each record changed since the token, once, in its latest state with `desiredKeys` applied (S2).
    public var modifications: [Record]
    /// Each record deleted since the token, or gone from the caller's view (S3), once: its ID and type.
    public var deletions: [(recordID: RecordID, recordType: String)]
    /// The token to ask with next; opaque (S1).
    public var changeToken: String
    /// Whether more changes wait: ask again with `changeToken`.
    public var moreComing: Bool
}

/// What changed in a database since a token (O9, S4): zones changed or made, zones gone.
public struct DatabaseChanges: Sendable {
    /// The zones made or changed since the token (S4).
    public var changedZoneIDs: [RecordZoneID]
    /// Each zone gone, and why: `deleted` or `purged`.
    public var deletions: [(zoneID: RecordZoneID, reason: String)]
    /// The token to ask with next; opaque (S1).
    public var changeToken: String
    /// Whether more changes wait: ask again with `changeToken`.
    public var moreComing: Bool
}

extension CloudDatabase {
    /// The zone's changes since `token` (nil: from its start), at most `resultsLimit` records
    /// (at most 200 a page; `moreComing` says there are more).
    ///
    /// ```swift
    /// var token: String? = nil
    /// repeat {
    ///     let page = try db.recordZoneChanges(zoneID, since: token)
    ///     apply(page.modifications, page.deletions)
    ///     token = page.changeToken
    /// } while page.moreComing
    /// ```
    ///
    /// `maxBytes`: the page ends early, `moreComing`, once its records reach this many stored
    /// bytes (one record more at most; at least one entry when above 0, none at 0): what an
    /// answer of a bounded size can carry.
    public func recordZoneChanges(
        _ zoneID: RecordZoneID,
        since token: String? = nil,
        resultsLimit: Int? = nil,
        desiredKeys: [String]? = nil,
        maxBytes: Int? = nil
    ) throws -> RecordZoneChanges {
        try enter(.recordZoneChanges(zoneID)) {
            try engine.recordZoneChanges(zoneID, since: token, resultsLimit: resultsLimit, desiredKeys: desiredKeys, maxBytes: maxBytes, in: self)
        }
    }

    /// The database's zone changes since `token` (nil: from the start).
    public func databaseChanges(since token: String? = nil, resultsLimit: Int? = nil) throws -> DatabaseChanges {
        try enter(.databaseChanges(sentChangeToken: token != nil)) {
            try engine.databaseChanges(since: token, resultsLimit: resultsLimit, in: self)
        }
    }

    /// The zone's current token: its changes from here on are what a later fetch returns.
    public func currentChangeToken(_ zoneID: RecordZoneID) throws -> String {
        try engine.currentChangeToken(zoneID, in: self)
    }

    /// The database feed's current token: where fetching from the start would end, read
    /// without reading the feed (a live stream starts there).
    public func currentDatabaseChangeToken() throws -> String {
        try engine.currentDatabaseChangeToken(in: self)
    }
}

extension Engine {
    /// The most records (or zones) one page of a feed holds (WEB-SERVICES.md §2).
    public static let feedPageLimit = 200
    /// The largest `resultsLimit` taken: past it a number is a mistake, not a wish.
    public static let feedResultsLimitMaximum = 100_000

    func feedLimit(_ resultsLimit: Int?) throws -> Int {
        guard let resultsLimit else { return Engine.feedPageLimit }
        guard (1...Engine.feedResultsLimitMaximum).contains(resultsLimit) else {
            throw ShareFlowError(
                .invalidArguments,
                "resultsLimit must be a whole number from 1 to \(Engine.feedResultsLimitMaximum), not \(resultsLimit)"
            )
        }
        return min(resultsLimit, Engine.feedPageLimit)
    }

    /// The feed's database: only the private and shared databases have feeds (S2).
    private func checkFeedDatabase(_ database: CloudDatabase) throws {
        guard database.databaseScope != .public else {
            throw ShareFlowError(.badDatabase, "the public database has no change feeds (badDatabase); use the private or shared database")
        }
    }

    func recordZoneChanges(
        _ zoneID: RecordZoneID,
        since token: String?,
        resultsLimit: Int?,
        desiredKeys: [String]?,
        maxBytes: Int? = nil,
        in database: CloudDatabase
    ) throws -> RecordZoneChanges {
        try checkFeedDatabase(database)
        let limit = try feedLimit(resultsLimit)
        if faults.isArmed, let injected = zoneFeedFault(zoneID, sentChangeToken: token != nil, in: database) { throw injected }
        return try reading { db in
            let caller = try accountIdentity(id: database.container.session.accountID, db: db)
            let (zone, position, floor) = try zoneFeedPosition(zoneID, token: token, caller: caller, database: database, db: db)
            let viewer: Int64? = database.databaseScope == .shared ? caller.id : nil
            // The wanted keys as a set once per page, not once per record (a caller's 10,000
            // keys × 200 records held the engine 19 s).
            let wanted = desiredKeys.map(Set.init)
            var bytesLeft = maxBytes ?? .max
            // A record past the page's bytes is not built (nil): the page ends before it.
            let rows = try db.zoneChangesWithRecords(zone: zone.id, viewer: viewer, after: position, limit: limit + 1) { row -> Record? in
                guard bytesLeft > 0 else { return nil }
                // Made for this answer alone: no copy to trim. Its bytes are those of the fields
                // kept (`keeping`): a client asking for a few small keys of big records is not
                // charged for the big ones.
                let record = try makeRecord(row, zone: zone, caller: caller, db: db).keeping(keys: wanted)
                bytesLeft -= max(record.storedBytes, 1)
                return record
            }
            var changes = RecordZoneChanges(modifications: [], deletions: [], changeToken: "", moreComing: rows.count > limit)
            changes.modifications.reserveCapacity(min(rows.count, limit))
            var last: Int64?
            for row in rows.prefix(limit) {
                if let made = row.record {
                    guard let record = made else {
                        changes.moreComing = true
                        break
                    }
                    changes.modifications.append(record)
                } else {
                    changes.deletions.append((RecordID(recordName: row.name, zoneID: zone.zoneID), row.type))
                }
                last = row.seq
            }
            let keptFrom = try db.zoneLogBounds(zone: zone.id)?.keptFrom ?? 0
            let end = ChangeToken.end(last ?? position, moreComing: changes.moreComing, keptFrom: keptFrom)
            changes.changeToken = try ChangeToken(
                kind: .zone,
                environment: database.container.containerID.environment,
                scope: database.databaseScope,
                target: zone.id,
                viewer: caller.id,
                seq: end,
                floor: end < keptFrom ? floor : 0
            ).encoded(key: db.changeTokenKey())
            return changes
        }
    }

    func currentChangeToken(_ zoneID: RecordZoneID, in database: CloudDatabase) throws -> String {
        try checkFeedDatabase(database)
        return try reading { db in
            let caller = try accountIdentity(id: database.container.session.accountID, db: db)
            let (zone, _, _) = try zoneFeedPosition(zoneID, token: nil, caller: caller, database: database, db: db)
            let viewer: Int64? = database.databaseScope == .shared ? caller.id : nil
            // The viewer's last entry: where a fetch from the start would end (past the
            // pruned part of the log, as the fetch's token is: ChangeToken.end).
            let position = ChangeToken.end(
                try db.zoneFeedEnd(zone: zone.id, viewer: viewer),
                moreComing: false,
                keptFrom: try db.zoneLogBounds(zone: zone.id)?.keptFrom ?? 0
            )
            return try ChangeToken(
                kind: .zone,
                environment: database.container.containerID.environment,
                scope: database.databaseScope,
                target: zone.id,
                viewer: caller.id,
                seq: position
            ).encoded(key: db.changeTokenKey())
        }
    }

    /// The zone a feed reads and the position to read after: the token's, checked against
    /// the zone, the caller, the database and the log's kept part; and the floor the next
    /// token carries (`ChangeToken.floor`).
    private func zoneFeedPosition(
        _ zoneID: RecordZoneID,
        token: String?,
        caller: AccountIdentityRow,
        database: CloudDatabase,
        db: StoreTransaction
    ) throws -> (ZoneRow, Int64, Int64) {
        guard !zoneID.isDefaultZone else {
            throw ShareFlowError(.invalidArguments, "the default zone has no change feed; only custom zones do (S2)")
        }
        let zone = try self.zone(for: zoneID, in: database, caller: caller, db: db)
        guard let token else { return (zone, 0, try db.zoneLogBounds(zone: zone.id)?.keptFrom ?? 0) }
        let decoded = try ChangeToken.decode(token, key: db.changeTokenKey(), kind: .zone)
        guard decoded.environment == database.container.containerID.environment, decoded.scope == database.databaseScope,
            decoded.viewer == caller.id
        else {
            throw ShareFlowError(
                .invalidArguments,
                "the change token is of another \(decoded.environment != database.container.containerID.environment ? "environment" : decoded.scope != database.databaseScope ? "database" : "user")"
            )
        }
        guard decoded.target == zone.id else {
            // The zone deleted and made again under its name: its old positions mean nothing.
            if try db.zoneName(id: decoded.target) == nil {
                throw ShareFlowError(
                    .changeTokenExpired,
                    "the change token is of a zone '\(zoneID.zoneName)' deleted since; fetch again from the start"
                )
            }
            throw ShareFlowError(.invalidArguments, "the change token is of another zone than '\(zoneID.zoneName)'")
        }
        let bounds = try db.zoneLogBounds(zone: zone.id)
        if let bounds, decoded.seq < bounds.keptFrom, decoded.floor < bounds.keptFrom {
            throw ShareFlowError(
                .changeTokenExpired,
                "the change token of zone '\(zoneID.zoneName)' is older than the kept log; fetch again from the start"
            )
        }
        if let bounds, decoded.seq > bounds.current {
            throw ShareFlowError(.invalidArguments, "the change token of zone '\(zoneID.zoneName)' names a position the zone has not reached")
        }
        return (zone, decoded.seq, decoded.floor)
    }

    func currentDatabaseChangeToken(in database: CloudDatabase) throws -> String {
        try checkFeedDatabase(database)
        let scope = database.databaseScope == .shared ? "shared" : "private"
        return try reading { db in
            let caller = try accountIdentity(id: database.container.session.accountID, db: db)
            let feed = try db.feed(account: caller.id, container: database.container.containerID, scope: scope)
            // As the last page of a fetch from the start ends (ChangeToken.end).
            let seq = ChangeToken.end(feed?.current ?? 0, moreComing: false, keptFrom: feed?.keptFrom ?? 0)
            return ChangeToken(
                kind: .database,
                environment: database.container.containerID.environment,
                scope: database.databaseScope,
                target: feed?.id ?? 0,
                viewer: caller.id,
                seq: seq,
                zoneSeq: try feed.map { try zonePosition(at: seq, of: $0.id, db: db) } ?? 0
            )
            .encoded(key: try db.changeTokenKey())
        }
    }

    func databaseChanges(since token: String?, resultsLimit: Int?, in database: CloudDatabase) throws -> DatabaseChanges {
        try checkFeedDatabase(database)
        let limit = try feedLimit(resultsLimit)
        let scope = database.databaseScope == .shared ? "shared" : "private"
        var page = try reading { db -> DatabaseChanges in
            let caller = try accountIdentity(id: database.container.session.accountID, db: db)
            let feed = try db.feed(account: caller.id, container: database.container.containerID, scope: scope)
            var position: Int64 = 0
            var seen: Int64 = 0
            // A fetch from the start has seen nothing pruned (ChangeToken.floor).
            var floor = feed?.keptFrom ?? 0
            let key = try db.changeTokenKey()
            if let token {
                let decoded = try ChangeToken.decode(token, key: key, kind: .database)
                guard decoded.environment == database.container.containerID.environment, decoded.scope == database.databaseScope,
                    decoded.viewer == caller.id, decoded.target == feed?.id ?? 0 || (decoded.target == 0 && decoded.seq == 0)
                else {
                    throw ShareFlowError(.invalidArguments, "the database change token is of another database, container, environment or user")
                }
                if let feed, decoded.seq < feed.keptFrom, decoded.floor < feed.keptFrom {
                    throw ShareFlowError(.changeTokenExpired, "the database change token is older than the kept log; fetch again from the start")
                }
                if decoded.seq > feed?.current ?? 0 {
                    throw ShareFlowError(.invalidArguments, "the database change token names a position the database has not reached")
                }
                position = decoded.seq
                floor = decoded.floor
                seen = decoded.zoneSeq
            }
            var rows = try feed.map { try db.feedChanges(feed: $0.id, after: position, limit: limit + 1) } ?? []
            // The entry at the token's own position stays there while only its zone changes
            // (a write leaves a feed's last entry in place): reported again once the zone's
            // position passed the one the token kept (unknown in a token of before: reported).
            var zoneSeq = token == nil ? 0 : seen
            if let feed, position > 0, let at = try db.feedChange(feed: feed.id, at: position), at.deletedReason == nil {
                let now = try db.feedZonePosition(feed: feed.id, zoneName: at.zoneName, ownerName: at.ownerName)
                if seen < 0 || now > seen { rows.insert(at, at: 0) }
                zoneSeq = now
            }
            let page = rows.prefix(limit)
            var changes = DatabaseChanges(changedZoneIDs: [], deletions: [], changeToken: "", moreComing: rows.count > limit)
            for row in page {
                let id = RecordZoneID(zoneName: row.zoneName, ownerName: row.ownerName)
                if let reason = row.deletedReason { changes.deletions.append((id, reason)) } else { changes.changedZoneIDs.append(id) }
            }
            let keptFrom = feed?.keptFrom ?? 0
            let end = ChangeToken.end(page.last?.seq ?? position, moreComing: changes.moreComing, keptFrom: keptFrom)
            if end != position || !page.isEmpty {
                zoneSeq = 0
                if let feed {
                    // The entry at `end` is the page's last when the page ends there: not read again.
                    let entry = page.last?.seq == end ? page.last : (end > 0 ? try db.feedChange(feed: feed.id, at: end) : nil)
                    zoneSeq = try zonePosition(of: entry, in: feed.id, db: db)
                }
            }
            changes.changeToken = ChangeToken(
                kind: .database,
                environment: database.container.containerID.environment,
                scope: database.databaseScope,
                target: feed?.id ?? 0,
                viewer: caller.id,
                seq: end,
                floor: end < keptFrom ? floor : 0,
                zoneSeq: zoneSeq
            ).encoded(key: key)
            return changes
        }
        purgeFaults(&page, in: database)
        return page
    }
}

extension Engine {
    /// Where the zone of the database feed's live entry at `seq` stands (its position, kept by
    /// a token pointing at that entry: `StoreTransaction.feedZonePosition`); 0 for none.
    fileprivate func zonePosition(at seq: Int64, of feed: Int64, db: StoreTransaction) throws -> Int64 {
        try zonePosition(of: seq > 0 ? try db.feedChange(feed: feed, at: seq) : nil, in: feed, db: db)
    }

    /// `zonePosition(at:of:db:)` of an entry already read.
    fileprivate func zonePosition(of entry: FeedChangeRow?, in feed: Int64, db: StoreTransaction) throws -> Int64 {
        guard let entry, entry.deletedReason == nil else { return 0 }
        return try db.feedZonePosition(feed: feed, zoneName: entry.zoneName, ownerName: entry.ownerName)
    }
}

/// A change token's content (S1): which feed (a zone's or a database's), whose, which
/// environment and database, and the position; signed, so a forged or altered one is refused.
/// Deterministic: the same position gives the same string.
struct ChangeToken: Equatable {
    enum Kind: UInt8 {
        case zone = 1
        case database = 2
    }
    let kind: Kind
    let environment: CloudEnvironment
    let scope: DatabaseScope
    /// The zone's row, or the database feed's (0 before it has one).
    let target: Int64
    let viewer: Int64
    let seq: Int64
    /// For a position inside the pruned part of the log (`seq` below the feed's kept-from
    /// position), the kept-from position when the fetch that reached it started from the
    /// start: that fetch has seen no entry pruned before it, so its token stays good until
    /// the log is pruned again. Without it, a first sync of a feed longer than a page, once
    /// a tombstone was pruned, was `changeTokenExpired` on its second page, every time.
    /// 0 elsewhere: those tokens are as before (version 1), the same string for a position.
    var floor: Int64 = 0
    /// A database token's: where the zone of the entry at `seq` stood when the token was
    /// given (its position for the feed's account), so a change of that zone that left the
    /// entry in place is reported (`Engine.databaseChanges`); -1 in a token given before
    /// (unknown: the entry is reported again once). 0 in a zone's token.
    var zoneSeq: Int64 = 0

    private static let version: UInt8 = 1
    /// A token carrying a `floor`.
    private static let versionWithFloor: UInt8 = 2
    /// The token as given since wave 4: opaque to its holder (see `encoded`).
    private static let versionSealed: UInt8 = 3
    /// Sealed, with `zoneSeq` (every token given since).
    static let versionSealedWithZone: UInt8 = 4
    private static let macBytes = 16
    private static let plainBytes = 36
    private static let plainBytesWithZone = 44

    /// Where a page's token points: after its last entry (`seq`); for the last page, at
    /// least the kept-from position — nothing is left to read before it, and a token below
    /// it would be expired at once (a pruned tombstone the feed's last entry, or another
    /// viewer's).
    static func end(_ seq: Int64, moreComing: Bool, keptFrom: Int64) -> Int64 {
        moreComing ? seq : max(seq, keptFrom)
    }

    /// The token as its holder gets it: encrypted and authenticated with the store's key,
    /// deterministically, so it tells its holder nothing (not the zone's counter, which moves
    /// with the owner's changes outside a share, nor row IDs) and the same position gives the
    /// same string on every node (§14 S1, §16). AES-GCM with its nonce derived from the
    /// plaintext by HMAC (a synthetic IV): a nonce repeats only for the same plaintext, and
    /// then only equality shows. Every token has one length.
    func encoded(key: [UInt8]) -> String {
        var plain: [UInt8] = [kind.rawValue, environment == .production ? 1 : 0, scope == .shared ? 1 : 0, 0]
        for n in [target, viewer, seq, floor, zoneSeq] { withUnsafeBytes(of: n.bigEndian) { plain.append(contentsOf: $0) } }
        let keys = ChangeTokenKeys.shared.derived(from: key)
        let nonce = Array(HMAC<SHA256>.authenticationCode(for: plain, using: keys.nonce).prefix(12))
        // A 12-byte nonce and a 32-byte key: sealing cannot fail.
        guard let box = try? AES.GCM.seal(plain, using: keys.seal, nonce: AES.GCM.Nonce(data: nonce)) else { return "" }
        let string = Base64URL.encode([ChangeToken.versionSealedWithZone] + nonce + Array(box.ciphertext) + Array(box.tag))
        ChangeTokenKeys.shared.sealed(string, self, key: key)
        return string
    }

    /// The two keys a sealed token uses, derived from the store's change-token key.
    static func keys(_ key: [UInt8]) -> (seal: SymmetricKey, nonce: SymmetricKey) {
        let root = SymmetricKey(data: key)
        return (
            SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: Array("shareflow change token: seal".utf8), using: root))),
            SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: Array("shareflow change token: nonce".utf8), using: root)))
        )
    }

    /// A sealed token's plaintext, or nil when it was not sealed with `key` (altered, forged,
    /// or a nonce other than its own: one position, one string).
    private static func unseal(_ bytes: [UInt8], key: [UInt8]) -> [UInt8]? {
        let length = bytes.first == versionSealedWithZone ? plainBytesWithZone : plainBytes
        guard bytes.count == 1 + 12 + length + 16, bytes[0] == versionSealed || bytes[0] == versionSealedWithZone else { return nil }
        let nonce = Array(bytes[1..<13])
        let sealed = Array(bytes[13..<(13 + length)])
        let tag = Array(bytes[(13 + length)...])
        let keys = ChangeTokenKeys.shared.derived(from: key)
        guard let box = try? AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: sealed, tag: tag),
            let plain = try? Array(AES.GCM.open(box, using: keys.seal)),
            Array(HMAC<SHA256>.authenticationCode(for: plain, using: keys.nonce).prefix(12)) == nonce
        else { return nil }
        return plain
    }

    /// The token `string` of a `kind` feed, or `invalidArguments` saying why not.
    static func decode(_ string: String, key: [UInt8], kind: Kind) throws -> ChangeToken {
        let invalid = ShareFlowError(
            .invalidArguments,
            "the change token '\(StoredRow.excerpt(string))' is not one ShareFlow gave (forged, altered or cut)"
        )
        guard string.utf8.count < 200 else { throw invalid }
        // One this process sealed with `key` lately (the page before's): what it says is known.
        if let known = ChangeTokenKeys.shared.known(string, key: key), known.kind == kind { return known }
        guard let bytes = Base64URL.decode(string) else { throw invalid }
        // The token's fields in the sealed layout: kind, environment, scope, 0, then target,
        // viewer, seq, floor and (version 4) zoneSeq (8 bytes each, big-endian).
        let plain: [UInt8]
        if bytes.first == versionSealed || bytes.first == versionSealedWithZone {
            guard let opened = unseal(bytes, key: key) else { throw invalid }
            plain = opened
        } else {
            // A token given before wave 4 (readable, authenticated only): still honoured, so
            // clients holding one keep syncing; the next token they get is sealed.
            guard bytes.count == 28 + macBytes || bytes.count == 36 + macBytes else { throw invalid }
            let length = bytes.count - macBytes
            let body = Array(bytes[0..<length])
            let mac = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: key))
            guard Array(mac.prefix(macBytes)) == Array(bytes[length...]), body[0] == (length == 28 ? version : versionWithFloor) else {
                throw invalid
            }
            plain = Array(body[1...3]) + [0] + Array(body[4...]) + (length == 28 ? [UInt8](repeating: 0, count: 8) : [])
        }
        guard let tokenKind = Kind(rawValue: plain[0]), plain[1] <= 1, plain[2] <= 1, plain[3] == 0 else { throw invalid }
        guard tokenKind == kind else {
            throw ShareFlowError(
                .invalidArguments,
                "the change token is a \(tokenKind == .zone ? "zone's" : "database's"), not a \(kind == .zone ? "zone's" : "database's")"
            )
        }
        func int(_ at: Int) -> Int64 { plain[at..<at + 8].reduce(Int64(0)) { $0 << 8 | Int64($1) } }
        return ChangeToken(
            kind: tokenKind,
            environment: plain[1] == 1 ? .production : .development,
            scope: plain[2] == 1 ? .shared : .private,
            target: int(4),
            viewer: int(12),
            seq: int(20),
            floor: int(28),
            zoneSeq: plain.count >= plainBytesWithZone ? int(36) : -1
        )
    }
}

/// Base64 with the URL's alphabet (`-`, `_`) and no padding (RFC 4648 §5), as tokens travel in
/// URLs and JSON; written out because Foundation's encoder and three `replacingOccurrences`
/// cost more than the rest of a feed page's bookkeeping.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            var group = UInt32(bytes[i]) << 16
            if n > 1 { group |= UInt32(bytes[i + 1]) << 8 }
            if n > 2 { group |= UInt32(bytes[i + 2]) }
            for k in 0...n { out.append(alphabet[Int(group >> (18 - 6 * UInt32(k)) & 63)]) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes `string` holds, or nil for a character outside the alphabet, padding, or a
    /// length no encoding gives (a remainder of one character).
    static func decode(_ string: String) -> [UInt8]? {
        var out: [UInt8] = []
        var group: UInt32 = 0
        var bits = 0
        var count = 0
        for c in string.utf8 {
            let v: UInt8
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = c - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = c - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): v = 62
            case UInt8(ascii: "_"): v = 63
            default: return nil
            }
            group = group << 6 | UInt32(v)
            bits += 6
            count += 1
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: group >> UInt32(bits)))
                group &= (1 << UInt32(bits)) - 1
            }
        }
        // Leftover bits must be zero, as the encoder leaves them: else two strings would name one token.
        guard count % 4 != 1, group == 0 else { return nil }
        return out
    }
}
