import Foundation
import GRDB

/// The store as the engine uses it inside one read or transaction: rows in, rows out, no SQL
/// outside this folder. This is the seam a driver's store (`StoreDriver`: PostgreSQL) plugs
/// into — the engine never learns the SQL dialect.
///
/// Methods that change rows are named for what they change (`insertRecord`, `setStatus`); the
/// rules deciding whether to call them live in the engine (`SharingRules`, `Engine/RecordSave.swift`, `Engine/ShareSave.swift` …).
package struct StoreTransaction {
    /// Where the statements go: SQLite (GRDB's connection, statements cached, rows read in
    /// place) or a driver's connection (SPEC §16 M6). The SQL is written once, in the dialect
    /// both read (a driver rewrites only what its database spells otherwise).
    package enum Connection {
        case sqlite(Database)
        case driver(any StoreConnection)
    }
    package let connection: Connection
    /// SQLite's connection, for what is SQLite's own (its migrations, tests of its files).
    package var db: Database {
        guard case .sqlite(let db) = connection else { preconditionFailure("an SQLite connection was asked of a driver's store") }
        return db
    }
    /// False in a read: nothing may be inserted (a default zone read before anything was
    /// saved in it is read as empty, not made).
    package let isWritable: Bool
    /// The store's file (or PostgreSQL URL), named by the error a damaged row gives.
    let path: String?

    /// Rows inserted, changed or deleted through this connection so far: a nested engine call
    /// (a policy's) that wrote anything moved it.
    package var changeCount: Int {
        switch connection {
        case .sqlite(let db): return db.totalChangesCount
        case .driver(let connection): return connection.totalChanges
        }
    }

    /// The database feeds already moved in this transaction (nil: note none, move each time).
    let feedBumps: FeedBumps?

    /// SQLite: the connection's `StoreStatement`s (nil: compiled through GRDB's cache by text).
    let shelf: StatementShelf?

    init(_ db: Database, writable: Bool = true, path: String?, feedBumps: FeedBumps? = nil, shelf: StatementShelf? = nil) {
        self.connection = .sqlite(db)
        self.isWritable = writable
        self.path = path
        self.feedBumps = feedBumps
        self.shelf = shelf
    }

    init(_ connection: any StoreConnection, writable: Bool = true, path: String?, feedBumps: FeedBumps? = nil) {
        self.connection = .driver(connection)
        self.isWritable = writable
        self.path = path
        self.feedBumps = feedBumps
        self.shelf = nil
    }

    /// Runs a statement that writes, and says how many rows it changed. On SQLite it is
    /// compiled once per connection: GRDB's `execute(sql:)` compiles its text on every call,
    /// and compiling a record's INSERT cost more than writing the row. Every writing statement
    /// of the store goes through here.
    @discardableResult
    func run(_ sql: String, _ arguments: StoreArguments) throws -> Int {
        if let feedBumps, feedBumps.held != .wholeStore { try mayWrite(sql, feedBumps) }
        switch connection {
        case .sqlite(let db):
            try StoreTransaction.execute(db, sql, arguments)
            return db.changesCount
        case .driver(let connection):
            return try connection.execute(sql, arguments.values)
        }
    }

    /// Steps a writing statement to its end, as GRDB's `execute` does (its will-execute,
    /// did-execute and did-fail calls), with the arguments bound by `StoredRowCursor`.
    private static func execute(_ db: Database, _ sql: String, _ arguments: StoreArguments) throws {
        let cursor = try StoredRowCursor(db.cachedStatement(sql: sql), arguments, table: "", keyAt: 0)
        try withExtendedLifetime(cursor) {
            while try cursor.next() != nil {}
        }
    }

    /// Runs an INSERT into a table whose key is `id`, and gives the new row's `id`.
    func insert(_ sql: String, _ arguments: StoreArguments) throws -> Int64 {
        if let feedBumps, feedBumps.held != .wholeStore { try mayWrite(sql, feedBumps) }
        switch connection {
        case .sqlite(let db):
            try StoreTransaction.execute(db, sql, arguments)
            return db.lastInsertedRowID
        case .driver(let connection):
            guard let id = try connection.query(sql + " RETURNING id", arguments.values).first?.first,
                case .int64(let n) = id.storage
            else {
                throw ShareFlowError(.serviceUnavailable, "\(path ?? "the store"): an insert gave no row ID").forOperator()
            }
            return n
        }
    }
}

// MARK: A write's scope (SPEC §16 M5)

extension StoreTransaction {
    /// Claims `zone` for this write before anything of it is read. A write of the whole store
    /// holds it already, and so does a zone-scoped write that declared it. Another zone is
    /// taken now if no other writer holds it, never waited for (two writers each waiting for
    /// the other's zone would wait for ever); held elsewhere, the write fails as busy, to be
    /// retried. Called by the engine's zone lookups, for every zone a write finds.
    package func claim(zone make: @autoclosure () -> ZoneLockKey) throws {
        // A read claims nothing: its key is not even made (a read's fixed cost, issue 48).
        guard isWritable, let feedBumps, case .zones(let held) = feedBumps.held else { return }
        let zone = make()
        guard !held.contains(zone) else { return }
        try take(.zones([zone]), feedBumps, as: "\(zone)")
        feedBumps.held = .zones(held.union([zone]))
    }

    /// Before a statement writes a table no zone owns (`StoreWriteScope.tablesOfZones`): a
    /// zone-scoped write takes the whole store if no other writer holds any of it.
    private func mayWrite(_ sql: String, _ feedBumps: FeedBumps) throws {
        let table = StoreWriteScope.writtenTable(sql)
        if let table, StoreWriteScope.tablesOfZones.contains(table) { return }
        try takeWholeStore(feedBumps, to: "write \(table ?? "an unnamed table")")
    }

    private func takeWholeStore(_ feedBumps: FeedBumps, to purpose: String) throws {
        try take(.wholeStore, feedBumps, as: "the whole store (to \(purpose))")
        feedBumps.held = .wholeStore
    }

    private func take(_ scope: StoreWriteScope, _ feedBumps: FeedBumps, as what: String) throws {
        guard case .driver(let connection) = connection else { return }  // SQLite: the only writer
        guard try connection.tryToLock(scope) else {
            throw ShareFlowError(
                .serviceUnavailable,
                "store \(path ?? "?") is busy: another writer holds \(what), which this write reached without declaring it; retry",
                retryAfter: 1
            ).forOperator()
        }
    }

    /// In a zone-scoped write, the lock that hands out zone IDs one at a time: declared with
    /// the zones by a write that makes one (`Engine.writeScope`), else waited for here; a
    /// write of the whole store holds every lock already.
    func lockZoneIDs() throws {
        guard let feedBumps, case .zones(let held) = feedBumps.held, !held.contains(.zoneIDAllocation),
            case .driver(let connection) = connection
        else { return }
        try connection.lock(.zoneIDAllocation)
        feedBumps.held = .zones(held.union([.zoneIDAllocation]))
    }

    /// A statement that writes through a read (`UPDATE … RETURNING`), held to the scope.
    func mayWriteReturning(_ sql: String) throws {
        guard let feedBumps, feedBumps.held != .wholeStore, StoreWriteScope.writes(sql) else { return }
        try mayWrite(sql, feedBumps)
    }

    /// Before feed moves are written inside a write rather than at its commit (a feed read
    /// in it): their rows would be locked in two runs, not in the one order every writer
    /// keeps, so a zone-scoped write takes the whole store first (never waiting for it).
    func mayWriteFeedMovesEarly() throws {
        guard let feedBumps, feedBumps.held != .wholeStore else { return }
        try takeWholeStore(feedBumps, to: "write database feeds inside the write, for a feed read in it")
    }
}

/// The values of a statement's placeholders, in order, written as an array literal
/// (`[zone, name]`): one form for both stores.
package struct StoreArguments: ExpressibleByArrayLiteral {
    package var values: [DatabaseValue]

    package init(arrayLiteral elements: (any DatabaseValueConvertible)?...) {
        values = elements.map { $0?.databaseValue ?? .null }
    }

    package init(_ values: [DatabaseValue]) { self.values = values }

    /// As GRDB binds them (SQLite).
    var sqlite: StatementArguments { StatementArguments(values) }

    static func += (lhs: inout StoreArguments, rhs: StoreArguments) { lhs.values += rhs.values }
}

/// The database feeds (account, zone, scope) whose zone entry one transaction has already moved
/// to a new position: each needs moving once per transaction, not once per record saved in it —
/// no reader sees the transaction in part, so the zone's entry is past every reader's token
/// either way. A savepoint rolled back forgets them all (its moves are undone with it), and a
/// zone reported deleted is forgotten (a later change must bring it back).
package final class FeedBumps {
    /// False only for a bench's baseline store (`Store.logsChanges`): nothing is logged.
    let logging: Bool
    /// What the transaction holds the locks for (`StoreWriteScope`): what it declared, and what
    /// it took since (`StoreTransaction.claim`).
    var held: StoreWriteScope

    init(logging: Bool = true, scope: StoreWriteScope = .wholeStore) {
        self.logging = logging
        self.held = scope
    }

    /// A database feed's move this transaction makes: written just before it commits
    /// (`StoreTransaction.writeFeedMoves`), every feed's in one order (account, container,
    /// environment, scope), so that writers of different zones that move the same accounts'
    /// feeds queue on each feed's row rather than wait on each other in a circle; each feed's
    /// moves in the order they were made.
    struct FeedMove {
        struct Feed: Hashable, Comparable {
            let account: Int64
            let container: String
            let environment: String
            let scope: String

            static func < (a: Feed, b: Feed) -> Bool {
                (a.account, a.container, a.environment, a.scope) < (b.account, b.container, b.environment, b.scope)
            }
        }
        let feed: Feed
        let zone: StoreTransaction.LoggedZone
        /// Nil: the zone changed; else why it is gone (`deleted`, `purged`).
        let goneBecause: String?
        let time: Double
    }
    /// Every move this transaction made, in order; those before `movesWritten` are in the
    /// database already (a feed read inside the write wrote them).
    var feedMoves: [FeedMove] = []
    var movesWritten = 0

    /// What a savepoint rolled back must undo here (`Store.write`, nested).
    struct Savepoint {
        let moves: Int
        let movesWritten: Int
        let held: StoreWriteScope
        let zonesCounted: Set<Int64>
        let zonesToRelog: Set<Int64>
    }

    /// Where a savepoint begins.
    func savepoint() -> Savepoint {
        Savepoint(moves: feedMoves.count, movesWritten: movesWritten, held: held, zonesCounted: Set(seqs.keys), zonesToRelog: Set(zonesToRelog.keys))
    }

    struct Key: Hashable {
        let account: Int64
        let zone: Int64
        let scope: String
    }
    var done: Set<Key> = []
    /// Private zones this transaction has logged a record save in, as the log reads them, and
    /// whether anyone views each (a batch of saves reads them once, not once a record).
    /// Forgotten whenever a share, a participant or a viewer's rows change, which can make a
    /// zone viewed (`StoreTransaction.forgetLoggedZones`).
    var zones: [Int64: (zone: StoreTransaction.LoggedZone, viewed: Bool)] = [:]
    /// Each zone's last position handed out in this transaction, and the counter as its row
    /// holds it (`zone.changeSeq`, read once): positions are taken here and the rows written
    /// once, just before the transaction commits (`StoreTransaction.writeLogPositions`), not
    /// once a record. The transaction holds each zone's lock (or the whole store's) before it
    /// reads the zone, so no other writer moves a counter in between. Only
    /// `StoreTransaction.takeSeqs` moves them.
    var seqs: [Int64: (last: Int64, stored: Int64)] = [:]

    /// Each zone's viewers where no share has a root (`StoreTransaction.flatViewers`; nil
    /// viewers: some share has one), read once; forgotten with `zones`.
    struct Viewers {
        let viewers: [Int64]?
    }
    var flatViewers: [Int64: Viewers] = [:]

    /// Zones asked whether some subscription may fire for their changes (SPEC §20,
    /// `StoreTransaction.notifyWatched`), read once a transaction.
    var watched: [Int64: Bool] = [:]
    /// Whether the transaction noted a change for subscriptions: the engine dispatches once it
    /// commits (`Engine.dispatchNotifications`).
    var outboxWritten = false

    /// Zones whose hierarchy moved in this transaction: every viewer of each is looked at
    /// again once, just before the transaction commits (`StoreTransaction.writeLogPositions`),
    /// not once per record moved (400 records moved under 20 viewers re-read each viewer's
    /// whole view 400 times: 18 s with every other writer waiting). A zone first asked for in
    /// a savepoint rolled back is forgotten with it (`rollBack`): its lock may have gone too.
    var zonesToRelog: [Int64: Double] = [:]

    /// A savepoint rolled back, as it began at `start`:
    /// - the feed moves made since are dropped, and those it wrote (a feed read inside it)
    ///   are to be written again: the database took their rows back;
    /// - what it held again (a driver lets go of the locks a rolled-back savepoint took);
    /// - zones it first counted positions in, or first asked to look at again, are forgotten:
    ///   their rows were rolled back, and the zone may be one whose lock went with it, which
    ///   the write must not touch at its commit (the counter is read again if it is). Positions
    ///   it took in zones counted before it are not given back: they are holes in the feed (a
    ///   feed never promises every position holds an entry; a moved entry leaves one too).
    func rollBack(to start: Savepoint) {
        held = start.held
        done.removeAll()
        zones.removeAll()
        flatViewers.removeAll()
        if start.moves < feedMoves.count { feedMoves.removeSubrange(start.moves...) }
        movesWritten = min(movesWritten, start.movesWritten)
        for zone in seqs.keys where !start.zonesCounted.contains(zone) { seqs[zone] = nil }
        for zone in zonesToRelog.keys where !start.zonesToRelog.contains(zone) { zonesToRelog[zone] = nil }
    }
}

/// A record's fields as stored (JSON), made once so a save can check its size (R22) and store
/// the same bytes.
package struct StoredFields {
    let json: String
    package var byteCount: Int { json.utf8.count }

    package init(_ fields: [String: FieldValue]) throws {
        json = try StoredFieldsWriter.write(fields) ?? String(decoding: JSONEncoder().encode(fields), as: UTF8.self)
    }

    /// The fields stored as `json`. Anything but a JSON object of field values (invalid JSON,
    /// an array, a value of no field type) is `Unreadable`: read as no fields, a damaged
    /// record would lose its data at its next save.
    /// One decoder for every read: making one costs about as much as decoding a small record.
    private static let decoder = JSONDecoder()

    static func decode(_ json: String) throws -> [String: FieldValue] {
        do {
            return try decoder.decode([String: FieldValue].self, from: Data(json.utf8))
        } catch let error as DecodingError {
            throw Unreadable(json: json, error: error)
        }
    }

    /// Why stored fields cannot be read, in words (the JSON's shape, the field at fault).
    struct Unreadable: Error, CustomStringConvertible {
        let description: String

        init(json: String, error: DecodingError) {
            let path: [CodingKey]
            switch error {
            case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c): path = c.codingPath
            @unknown default: path = []
            }
            if let field = path.first {
                description = "expected a JSON object of fields, found field '\(StoredRow.excerpt(field.stringValue))' holding no field value"
            } else {
                description = "expected a JSON object of fields, found \(Unreadable.shape(of: json))"
            }
        }

        /// What a JSON text is at its top: an array, a string… or no JSON at all.
        static func shape(of json: String) -> String {
            let kind: String
            switch json.unicodeScalars.first(where: { !$0.properties.isWhitespace }) ?? " " {
            case "{": kind = "a JSON object of another shape"
            case "[": kind = "a JSON array"
            case "\"": kind = "a JSON string"
            case "t", "f": kind = "a JSON boolean"
            case "n": kind = "JSON null"
            case let c where c == "-" || CharacterSet.decimalDigits.contains(c): kind = "a JSON number"
            default: kind = "no JSON"
            }
            // Invalid text after a valid start is still no JSON.
            guard (try? JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])) != nil else {
                return "invalid JSON"
            }
            return kind
        }
    }
}

// MARK: Rows

/// A zone as stored: its row ID and the zone ID callers name it by.
package struct ZoneRow {
    package let id: Int64
    package let container: ContainerID
    package let ownerID: Int64
    package let zoneID: RecordZoneID
    package let isPublic: Bool

    /// How a write's scope names it.
    package var lockKey: ZoneLockKey { ZoneLockKey(container: container, zoneID: zoneID) }
}

package struct RecordRow {
    package let id: Int64
    package let name: String
    package let type: String
    /// The fields as read: a feed page keeps them checked and undecoded (`FieldsAsRead`).
    package let fieldsAsRead: FieldsAsRead
    /// The fields (decoded at each use for a row read lazily: such a row goes straight to a `Record`).
    package var fields: [String: FieldValue] { fieldsAsRead.fields }
    package let parentName: String?
    package let tag: String
    package let modifiedAt: Double
    /// Reserved by `createShortGUID` (SPEC §13): the token of the share made for this record.
    package let shortGUID: String?
    /// R31: when it was first saved, by whom (account row and userRecordID), and who saved it
    /// last. Nil where the account is gone.
    package let createdAt: Double
    package let createdBy: Int64?
    package var creatorName: String?
    package var modifierName: String?
    /// The size of its fields as stored (their JSON), what answering with it costs.
    package var storedBytes: Int = 0
    /// The share rooted at this record, when the read that made the row looked (`record(zone:name:)`
    /// does, in the same statement); else the engine asks (`share(zone:rootName:)`).
    package var rootedShare: RootedShareLookup = .notRead
}

/// Whether a record's row says which share is rooted at it.
package enum RootedShareLookup {
    case notRead
    case none
    case share(recordName: String, token: String)
}

package struct ShareRow {
    package let id: Int64
    package let recordID: Int64
    package let zoneRowID: Int64
    /// The URL's token (R6); the engine makes the URL (`Engine.shareURL(token:)`).
    package let token: String
    package let rootName: String?
    package let publicPermission: ParticipantPermission
    package let recordName: String
    /// Whether people without an invitation may ask to join (R38).
    package var allowsAccessRequests = false
}

package struct ParticipantRow {
    package let id: Int64
    package let participantID: String
    package let accountID: Int64?
    package let lookup: LookupInfo
    package var role: ParticipantRole
    package var permission: ParticipantPermission
    package var status: ParticipantAcceptanceStatus
    /// Added by approving their access request (R41).
    package var isApprovedRequester = false
    /// When added (or added again).
    package var addedAt: Double = 0
    /// A one-time link's token (R44): the participant is the link's until someone claims it.
    package var oneTimeToken: String?

    /// Who is on the share how, to tell whether a save changed the participants (R35).
    package var state: String { "\(id):\(role.rawValue):\(permission.rawValue):\(status.rawValue)" }
}

extension ParticipantRow: ParticipantStanding {}

/// What others see of an account, read in one statement: its user record, its name and
/// whether it shows it (R2), and its first email and phone (how an owner is named). Never its
/// contacts: a participant or an owner needs no more of the account.
package struct AccountIdentityRow {
    package let id: Int64
    package let userRecordID: String
    package let name: NameComponents
    package let discoverability: Discoverability
    package let email: String?
    package let phone: String?

    package init(id: Int64, userRecordID: String, name: NameComponents, discoverability: Discoverability, email: String?, phone: String?) {
        (self.id, self.userRecordID, self.name, self.discoverability, self.email, self.phone) = (
            id, userRecordID, name, discoverability, email, phone
        )
    }
}

/// A participant with what others see of its account (`participantsWithAccounts`).
///
/// A class, not a tuple: a 64-participant share's rows are copied while sorted and looked
/// over, and a tuple of two structs of a dozen strings each was copied and destroyed through
/// the runtime's generic tuple witnesses, field by field (7.8% of FetchShareMetadata's
/// instructions, issue 48, callgrind); a reference is one retain.
package final class ParticipantWithAccount {
    package let row: ParticipantRow
    package let account: AccountIdentityRow?

    package init(row: ParticipantRow, account: AccountIdentityRow?) {
        self.row = row
        self.account = account
    }
}

/// What share metadata needs to know about a URL's token for a caller before it does anything else
/// (R16, R27): one probe, the same work for a live token as for a made-up one.
package struct ShareProbe {
    package let exists: Bool
    package let isPublic: Bool
    package let isParticipant: Bool
    package let hasUnmatchedInvitations: Bool
}

/// A pending invitation as stored.
package struct InvitationRow {
    package let participantID: String
    package let token: String
    package let fields: [String: FieldValue]
    package let lookup: LookupInfo
    package let addedAt: Double
}
