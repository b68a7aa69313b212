import Foundation
import GRDB
import Logging

/// A database a store lives in other than its own SQLite file (SPEC §16 M6): the engine knows
/// this protocol, never a driver. ShareFlowPostgres supplies one (`PostgresStore`); SQLite is
/// the store's own, on its hot path (cached statements, rows read in place).
///
/// The store's SQL is written once and handed to the driver's connection as it is; the driver
/// reads it in its dialect (placeholders, SQLite's scalar `MAX`), maps its own failures to the
/// caller's (`shareFlowError`), and keeps what several processes on it share (the decision log,
/// rate buckets, the commit signal).
///
/// ```swift
/// let driver = try PostgresStore(PostgresLocation("postgres://shareflow@db/shareflow"))
/// let store = Store(driver: driver)
/// try store.write { tx in … }   // a transaction on one of the driver's connections
/// ```
package protocol StoreDriver: AnyObject, Sendable {
    /// Where the store is, as messages name it (never a password).
    var label: String { get }
    /// The database's name in metrics' labels (`postgres`).
    var name: String { get }
    /// The schema the driver brought its database to (`StoreCatalogue.current`, or a test's).
    var catalogue: StoreCatalogue { get }
    /// How the database spells the catalogue's DDL and what `store copy` writes.
    var dialect: StoreDialect { get }

    /// Runs `body` in a transaction on one connection: a write holds what makes writes to the
    /// same rows run one at a time and commits; a read sees one snapshot and may not write.
    /// A `writeIfFree` that finds another process's write lock held throws `StoreBusy` before
    /// `body` runs. A write locks what `scope` names before `body` runs: the whole store, or
    /// its zones (in `orderedZoneKeys`' order) beside every other zone-scoped write.
    func transaction<T>(_ kind: StoreTransactionKind, scope: StoreWriteScope, _ body: (any StoreConnection) throws -> T) throws -> T

    /// Runs `body` in a savepoint of the transaction open on `connection` (a nested engine
    /// call's write); a failure rolls back to it and passes through.
    func savepoint<T>(_ connection: any StoreConnection, _ body: () throws -> T) throws -> T

    /// Lets go of a write lock granted for a `writeIfFree` that no write claimed since.
    func releaseUnclaimedLock()

    /// `error` as the caller gets it when it is the driver's own failure (`serviceUnavailable`,
    /// naming the store and the cause, never the SQL); nil for any other error.
    func shareFlowError(_ error: Error) -> ShareFlowError?

    /// Closes every connection; nothing may use the store after.
    func close()

    /// How many connections the driver may hold at once (a server keeps descriptors for them).
    var connectionLimit: Int { get }
    /// A connection of its own for one reading thread (SPEC §16 M5); nil when the driver has
    /// none to spare (its connection limit reached).
    func makeReader() throws -> (any StoreDriverReader)?

    // MARK: What several processes share

    /// The decision log every process on the store reads (SPEC §18 P3); nil: each its own.
    var decisionLog: (any SharedDecisionLog)? { get }
    /// Rate-limit buckets every process on the store takes from; nil: each its own.
    func makeRateBuckets() -> (any SharedRateBuckets)?
    /// Calls `poke` whenever any process committed a change, until the task is cancelled; nil
    /// when only this process's commits are known (`Store.committed`).
    func listenForCommits(_ poke: @escaping @Sendable () -> Void) async

    // MARK: An operator's passes (`store info`, `check`, `copy`)

    /// The schema version stored, and the bytes the store takes.
    func info(_ tx: StoreTransaction) throws -> (schemaVersion: Int, bytes: Int64)
    /// The tables present, and the schema's problems: what ShareFlow did not make, what it
    /// made and was changed, every table and column of `reads` (what ShareFlow reads) missing.
    func schemaProblems(_ tx: StoreTransaction, reads: [(table: String, columns: [String])]) throws -> (tables: Set<String>, problems: [String])
    /// What ShareFlow did not make in the store's schema, each named (a copy refuses it).
    func foreignObjects(_ tx: StoreTransaction) throws -> [String]
    /// After a copy's rows are in: made IDs go on after the highest copied, statistics.
    func finishCopy(_ tx: StoreTransaction, madeIDs tables: [String]) throws
}

/// What a driver's transaction may do, and how its write waits for the lock.
package enum StoreTransactionKind: Sendable, Equatable {
    /// One snapshot; nothing may be written.
    case read
    /// A write, waiting for the write lock at most `within` seconds (the store's busy
    /// timeout), then failing with `serviceUnavailable`.
    case write(within: TimeInterval)
    /// A write that waits at most `grace` seconds for the write lock, then fails with
    /// `StoreBusy` (having asked for the lock, where the driver can, to say when it came: the
    /// request kept for up to `within` seconds, the store's busy timeout).
    case writeIfFree(grace: TimeInterval, within: TimeInterval)

    package var writes: Bool { self != .read }
}

/// One connection of a driver, in a transaction (`StoreDriver.transaction`). Values cross as
/// SQLite's storage classes (`DatabaseValue`).
package protocol StoreConnection: AnyObject {
    /// Rows inserted, changed or deleted through this connection so far.
    var totalChanges: Int { get }
    /// The rows `sql` gives, each as its values.
    func query(_ sql: String, _ values: [DatabaseValue]) throws -> [[DatabaseValue]]
    /// Runs `sql` and says how many rows it changed.
    @discardableResult
    func execute(_ sql: String, _ values: [DatabaseValue]) throws -> Int
    /// Lifts the statement timeout for the rest of this transaction (an operator's pass over
    /// every row).
    func liftStatementTimeout() throws
    /// Holds `key` (`ZoneLockKey.zoneIDAllocation`) until the transaction ends, waiting for
    /// any other transaction holding it.
    func lock(_ key: ZoneLockKey) throws
    /// Takes what `scope` names in the open write transaction if no other transaction holds
    /// any of it, without waiting; false when one does.
    func tryToLock(_ scope: StoreWriteScope) throws -> Bool
}

/// The policy decision log every process on a store shares (SPEC §16, §18 P3).
package protocol SharedDecisionLog: AnyObject, Sendable {
    /// Decisions it keeps, at most (`policies.keepDecisions`).
    var kept: Int { get set }
    /// Hands `decision` over to be written; returns at once.
    func add(_ decision: PolicyDecision)
    /// The latest `limit` decisions of every process, oldest first; nil when unreadable.
    func latest(limit: Int) -> [PolicyDecision]?
    /// The latest decisions `filter` selects, oldest first; nil when unreadable.
    func latest(_ filter: DecisionFilter) -> [PolicyDecision]?
    /// Where it says what it could not write.
    func setLogger(_ logger: Logger)
    /// Writes what waits, then closes.
    func close()
}

/// Rate-limit buckets every process on a store shares (SPEC §16).
package protocol SharedRateBuckets: Sendable {
    /// Takes one request from `key`'s bucket of `requests` refilled over `perSeconds`: nil when
    /// granted, else the seconds until one is. Throws when the store cannot answer.
    func take(_ key: String, requests: Int, perSeconds: Double) async throws -> Double?
    /// Forgets buckets untouched for `seconds`.
    func prune(olderThan seconds: Double) async throws
    func close() async
}
