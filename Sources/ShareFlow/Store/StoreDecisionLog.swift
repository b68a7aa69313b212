import Foundation
import GRDB
import Logging

/// The policy decision log in the store's table `decision`, shared by every process on the
/// store (SPEC §18 P3, §16): `sf.decisions{}` in a `run`, a `serve` or any node reads the
/// decisions of all of them. The same log on both drivers; each gives it a connection of its
/// own (`DecisionLogConnection`: a second SQLite connection to the file, a PostgreSQL
/// session), so neither writing nor reading it touches the engine's.
///
/// A decision is handed over where it is made and written in the background, in the order
/// made, on its own commit (a denial whose item's changes are rolled back is logged all the
/// same). A slow or locked table never holds up a request: the log's statements give up after
/// `timeoutMs`, at most `capacity` decisions wait (beyond it newer ones are dropped, counted in
/// `shareflow_decisions_dropped_total`), and a failed write is tried again a second later. The
/// table keeps the latest `kept` decisions: each write that crosses a multiple of `pruneEvery`
/// IDs deletes older ones, in bounded batches.
///
/// ```swift
/// let log = store.decisionLog!
/// log.add(decision)                   // returns at once
/// let latest = log.latest(limit: 20)  // every process's, oldest first; nil if unreadable
/// ```
package final class StoreDecisionLog: SharedDecisionLog, @unchecked Sendable {  // `state` guarded by `lock`, `link` by `connection`
    /// Decisions the table keeps.
    package static let kept = 10_000
    /// Decisions waiting to be written, at most.
    package static let capacity = 10_000
    /// Rows per INSERT (6 values each: below both stores' limits on parameters).
    static let rowsPerInsert = 1_000
    /// IDs between prunes, and the rows one DELETE removes (a few per prune, so a table grown
    /// large while no process pruned shrinks over several writes, each statement short).
    static let pruneEvery: Int64 = 500
    static let pruneRows = 5_000, pruneStatements = 4
    /// How long one of the log's statements, or opening its connection, may take.
    package static let timeoutMs = 1_000
    /// How long a closing process tries to write what waits.
    static let closingSeconds = 3.0
    /// The longest text kept of a policy's name or a reason (a policy's own reasons are cut
    /// shorter where they are made).
    static let longestText = 1_024

    private struct State {
        var waiting: [PolicyDecision] = []
        var draining = false
        var dropped = 0
    }
    private let connect: @Sendable () throws -> any DecisionLogConnection
    private let label: String
    private let lock = NSLock()
    private var state = State()
    private let connection = NSLock()
    private var link: (any DecisionLogConnection)?
    /// The table's latest rows as `latest` last read them, and the store's version then;
    /// forgotten at each write of the log's own. Guarded by `connection`.
    private var lastRead: (limit: Int, version: Int64, decisions: [PolicyDecision])?
    private let queue = DispatchQueue(label: "shareflow.decisions")
    private let logs = NSLock()
    private var logger = Logger(label: "shareflow.decisions")

    /// `connect` opens the log's own connection to the store named `label`; called on first
    /// use and again after a failure.
    package init(label: String, connect: @escaping @Sendable () throws -> any DecisionLogConnection) {
        self.label = label
        self.connect = connect
    }

    deinit { link?.close() }

    package var kept: Int { StoreDecisionLog.kept }
    package func setLogger(_ logger: Logger) { logs.withLock { self.logger = logger } }
    private var log: Logger { logs.withLock { logger } }

    /// Hands `decision` over to be written; returns at once. With `capacity` waiting already
    /// (the table unwritable for a while), it is dropped and counted.
    package func add(_ decision: PolicyDecision) {
        let (start, dropped) = lock.withLock { () -> (Bool, Int?) in
            guard state.waiting.count < StoreDecisionLog.capacity else { state.dropped += 1; return (false, state.dropped) }
            state.waiting.append(decision)
            defer { state.draining = true }
            return (!state.draining, nil)
        }
        if let dropped {
            Counted.decisionsDropped()
            if dropped % 1_000 == 1 {
                log.warning("decision log of \(label): \(StoreDecisionLog.capacity) decisions wait to be written; newer ones are dropped")
            }
        }
        if start { queue.async { self.drain() } }
    }

    /// Writes what waits, batch by batch, on the log's queue, never waiting for a lock: the
    /// connection is then free for a read of the log at once (a policy asking inside a write
    /// whose lock is the very one). A lock held elsewhere is tried again shortly, quietly; any
    /// other failure a second later, said.
    private func drain() {
        do {
            while try connection.withLock({ try writeNext(endsDraining: true, waiting: false) }) {}
        } catch is DecisionLogBusy {
            queue.asyncAfter(deadline: .now() + StoreDecisionLog.busyRetry) { self.drain() }
        } catch {
            log.warning("decision log of \(label): decisions not written yet (\(error)); trying again in 1 s")
            queue.asyncAfter(deadline: .now() + 1) { self.drain() }
        }
    }

    /// How soon a write that found the table's lock held is tried again.
    static let busyRetry = 0.02

    /// Writes the first waiting decisions and forgets them; false when none waits. Prunes when
    /// the new IDs crossed a multiple of `pruneEvery`. Call with `connection` held: the batch
    /// is taken under it, so no two writers send the same decisions.
    private func writeNext(endsDraining: Bool, waiting: Bool = true) throws -> Bool {
        let batch = lock.withLock { () -> [PolicyDecision] in
            if state.waiting.isEmpty && endsDraining { state.draining = false }
            return Array(state.waiting.prefix(StoreDecisionLog.rowsPerInsert))
        }
        guard !batch.isEmpty else { return false }
        var values: [DatabaseValue] = []
        values.reserveCapacity(batch.count * 6)
        for d in batch {
            values += [d.point.databaseValue, StoreDecisionLog.json(d.policies).databaseValue, (d.allow ? 1 : 0).databaseValue,
                       StoreDecisionLog.json(d.reasons).databaseValue, d.duration.databaseValue,
                       d.time.timeIntervalSince1970.databaseValue]
        }
        let rows = Array(repeating: "(?, ?, ?, ?, ?, ?)", count: batch.count).joined(separator: ", ")
        let ids = try connected {
            try $0.query("INSERT INTO decision (point, policies, allow, reasons, duration, at) VALUES \(rows) RETURNING id", values, waiting: waiting)
        }
            .compactMap { row -> Int64? in if case .int64(let id)? = row.first?.storage { return id } else { return nil } }
        // Only writers (the connection held) remove, and only from the front: these are the
        // batch's decisions.
        lock.withLock { state.waiting.removeFirst(batch.count) }
        lastRead = nil
        if let first = ids.min(), let last = ids.max(),
           (first - 1) / StoreDecisionLog.pruneEvery != last / StoreDecisionLog.pruneEvery {
            prune(below: last - Int64(StoreDecisionLog.kept))
        }
        return true
    }

    /// Deletes decisions up to ID `id`, a few bounded statements' worth; a failure leaves them
    /// for the next prune.
    private func prune(below id: Int64) {
        for _ in 0..<StoreDecisionLog.pruneStatements {
            let deleted = try? connected {
                try $0.execute("DELETE FROM decision WHERE id IN (SELECT id FROM decision WHERE id <= ? ORDER BY id LIMIT \(StoreDecisionLog.pruneRows))",
                               [id.databaseValue])
            }
            if (deleted ?? 0) < StoreDecisionLog.pruneRows { break }
        }
    }

    /// The latest `limit` decisions of every process, oldest first, this process's waiting
    /// ones written first if that needs no wait; nil when the table cannot be read (the caller
    /// shows its own). Asked inside a write of this process's engine (a policy asking), the
    /// SQLite file's write lock is the engine's own: what waits then comes last, as made, its
    /// ID this process's count (the table gives it one once written).
    package func latest(limit: Int) -> [PolicyDecision]? {
        guard limit > 0 else { return [] }
        return connection.withLock { () -> [PolicyDecision]? in
            do {
                while try writeNext(endsDraining: false, waiting: false) {}
            } catch {
                // Left waiting: listed after the table's below.
            }
            do {
                let written = try connected { connection -> [PolicyDecision] in
                    // The table as last read, while no process has written to the store since
                    // (a plugin asking in a loop reads it once).
                    let version = try connection.version()
                    if let version, let read = lastRead, read.version == version, read.limit >= limit {
                        return Array(read.decisions.suffix(limit))
                    }
                    let decisions = try connection.read("SELECT id, point, policies, allow, reasons, duration, at FROM decision ORDER BY id DESC LIMIT ?",
                                                        [limit.databaseValue]).reversed().compactMap(StoreDecisionLog.decision)
                    lastRead = version.map { (limit, $0, decisions) }
                    return decisions
                }
                let unwritten = lock.withLock { state.waiting.suffix(limit) }
                return Array((written + unwritten).suffix(limit))
            } catch {
                return nil
            }
        }
    }

    /// Writes what waits (within one statement timeout a batch) and closes the connection: a
    /// command that ends the process keeps its decisions.
    package func close() {
        connection.withLock {
            let deadline = Date().addingTimeInterval(StoreDecisionLog.closingSeconds)
            var failure: Error?
            while true {
                do {
                    failure = nil
                    if try !writeNext(endsDraining: false) { break }
                } catch {
                    failure = error
                    if Date() >= deadline { break }
                    Thread.sleep(forTimeInterval: 0.25)
                }
            }
            let left = lock.withLock { state.waiting.count }
            if let failure, left > 0 {
                log.error("\(left) policy decisions were not written to the decision log of \(label) (\(failure))")
            }
            link?.close()
            link = nil
        }
    }

    /// Runs `body` on the log's connection, opened on first use; a failure closes it (the
    /// next use opens another: a lost connection is not used again).
    private func connected<T>(_ body: (any DecisionLogConnection) throws -> T) throws -> T {
        let current: any DecisionLogConnection
        if let link { current = link } else {
            current = try connect()
            link = current
        }
        do {
            return try body(current)
        } catch {
            if current.isLost {
                current.close()
                link = nil
            }
            throw error
        }
    }

    private static func decision(_ row: [DatabaseValue]) -> PolicyDecision? {
        guard row.count == 7, case .int64(let id) = row[0].storage, let point = String.fromDatabaseValue(row[1]),
              let policies = String.fromDatabaseValue(row[2]), case .int64(let allow) = row[3].storage,
              let reasons = String.fromDatabaseValue(row[4]), let duration = Double.fromDatabaseValue(row[5]),
              let at = Double.fromDatabaseValue(row[6]) else { return nil }
        return PolicyDecision(id: Int(id), point: point, policies: strings(policies), allow: allow != 0,
                              reasons: strings(reasons), duration: duration, time: Date(timeIntervalSince1970: at))
    }

    static func json(_ strings: [String]) -> String {
        let kept = strings.map { $0.utf8.count <= longestText ? $0 : String(decoding: $0.utf8.prefix(longestText), as: UTF8.self) + "…" }
        return (try? String(decoding: JSONSerialization.data(withJSONObject: kept), as: UTF8.self)) ?? "[]"
    }

    static func strings(_ json: String) -> [String] {
        (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String] ?? []
    }
}

/// The decision log's own connection to its store (`StoreDecisionLog`): each statement its
/// own transaction, bounded by `StoreDecisionLog.timeoutMs`.
package protocol DecisionLogConnection: AnyObject {
    /// `waiting`: whether a write waits for a lock another connection holds (up to the
    /// timeout), or fails at once.
    func query(_ sql: String, _ values: [DatabaseValue], waiting: Bool) throws -> [[DatabaseValue]]
    /// A SELECT, which never waits for a writer.
    func read(_ sql: String, _ values: [DatabaseValue]) throws -> [[DatabaseValue]]
    /// A number that changes whenever another connection commits to the store, if the
    /// database keeps one (SQLite's `data_version`); nil: every read reads.
    func version() throws -> Int64?
    func execute(_ sql: String, _ values: [DatabaseValue]) throws -> Int
    /// Whether the connection is gone (a lost one is closed and opened again).
    var isLost: Bool { get }
    func close()
}

/// A write of the log that did not wait for a lock held elsewhere: tried again shortly.
struct DecisionLogBusy: Error {}

/// The decision log's connection to an SQLite store: the file opened again, waiting at most
/// `StoreDecisionLog.timeoutMs` for the write lock when asked to wait (WAL: reads never wait).
final class SQLiteDecisionConnection: DecisionLogConnection {
    private let queue: DatabaseQueue

    init(path: String) throws {
        var config = Configuration()
        config.busyMode = .timeout(Double(StoreDecisionLog.timeoutMs) / 1000)
        config.label = "shareflow.decisions"
        queue = try DatabaseQueue(path: path, configuration: config)
    }

    func query(_ sql: String, _ values: [DatabaseValue], waiting: Bool) throws -> [[DatabaseValue]] {
        guard !waiting else { return try rows(sql, values) }
        try queue.inDatabase { db in try db.execute(sql: "PRAGMA busy_timeout = 0") }
        defer { try? queue.inDatabase { db in try db.execute(sql: "PRAGMA busy_timeout = \(StoreDecisionLog.timeoutMs)") } }
        do {
            return try rows(sql, values)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
            throw DecisionLogBusy()
        }
    }

    func read(_ sql: String, _ values: [DatabaseValue]) throws -> [[DatabaseValue]] {
        try queue.read { db in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values)).map { Array($0.databaseValues) } }
    }

    func version() throws -> Int64? {
        try queue.inDatabase { db in try Int64.fetchOne(db, sql: "PRAGMA data_version") }
    }

    /// In an IMMEDIATE transaction: a lock held elsewhere fails its BEGIN, with nothing open.
    private func rows(_ sql: String, _ values: [DatabaseValue]) throws -> [[DatabaseValue]] {
        try queue.writeWithoutTransaction { db in
            var rows: [[DatabaseValue]] = []
            try db.inTransaction(.immediate) {
                rows = try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values)).map { Array($0.databaseValues) }
                return .commit
            }
            return rows
        }
    }

    func execute(_ sql: String, _ values: [DatabaseValue]) throws -> Int {
        try queue.writeWithoutTransaction { db in
            var changed = 0
            try db.inTransaction(.immediate) {
                try db.execute(sql: sql, arguments: StatementArguments(values))
                changed = db.changesCount
                return .commit
            }
            return changed
        }
    }

    /// A file connection is not lost: a failure (the lock held past the timeout) is the table's.
    var isLost: Bool { false }

    func close() { try? queue.close() }
}
