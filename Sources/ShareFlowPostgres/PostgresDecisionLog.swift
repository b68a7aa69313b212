import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
import ShareFlow

/// The policy decision log on PostgreSQL, shared by every node (SPEC §16): `sf.decisions{}` on
/// any node reads the decisions of all of them, from table `decision`.
///
/// The log has a connection of its own, so neither writing nor reading it touches the
/// engine's: a decision is handed over where it is made and written in the background, in
/// the order made, on its own commit (a denial whose item's changes are rolled back is logged
/// all the same). A slow or locked table, or PostgreSQL away, never holds up a request: the
/// log's statements give up after `timeoutMs`, at most `capacity` decisions wait (beyond it
/// newer ones are dropped, counted in `shareflow_decisions_dropped_total`), and a failed write
/// is tried again a second later. The table keeps the latest `kept` decisions: each write that
/// crosses a multiple of `pruneEvery` IDs deletes older ones, in bounded batches.
///
/// ```swift
/// let log = store.driver!.decisionLog!
/// log.add(decision)                 // returns at once
/// let latest = log.latest(limit: 20)  // every node's, oldest first; nil if unreadable
/// ```
final class PostgresDecisionLog: SharedDecisionLog, @unchecked Sendable {  // `state` guarded by `lock`, `session` by `connection`
    /// Decisions the table keeps.
    static let kept = 10_000
    /// Decisions waiting to be written, at most.
    static let capacity = 10_000
    /// Rows per INSERT (6 values each: far below PostgreSQL's 65,535 parameters).
    static let rowsPerInsert = 1_000
    /// IDs between prunes, and the rows one DELETE removes (a few per prune, so a table grown
    /// large while no node pruned shrinks over several writes, each statement short).
    static let pruneEvery: Int64 = 500
    static let pruneRows = 5_000, pruneStatements = 4
    /// How long one of the log's statements, or opening its connection, may take, and how
    /// much longer its answer is waited for (a frozen server).
    static let timeoutMs = 1_000, answerMarginMs = 500
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
    private let connector: PostgresConnector
    private let lock = NSLock()
    private var state = State()
    private let connection = NSLock()
    private var session: PostgresSession?
    private let queue = DispatchQueue(label: "shareflow.decisions")
    private let logs = NIOLockedValueBox(Logger(label: "shareflow.decisions"))
    /// Where the log says what it could not write: the engine's logger (`Engine` sets it).
    var logger: Logger {
        get { logs.withLockedValue { $0 } }
        set { logs.withLockedValue { $0 = newValue } }
    }

    init(_ connector: PostgresConnector) {
        self.connector = connector
    }

    var kept: Int { PostgresDecisionLog.kept }
    func setLogger(_ logger: Logger) { self.logger = logger }

    deinit {
        // A store released without `close()`: its connection goes with it (postgres-nio
        // wants every connection closed, not dropped).
        try? session?.connection.close().wait()
    }

    /// Hands `decision` over to be written; returns at once. With `capacity` waiting already
    /// (the table unwritable for a while), it is dropped and counted.
    func add(_ decision: PolicyDecision) {
        let (start, full) = lock.withLock { () -> (Bool, Bool) in
            guard state.waiting.count < PostgresDecisionLog.capacity else { state.dropped += 1; return (false, true) }
            state.waiting.append(decision)
            defer { state.draining = true }
            return (!state.draining, false)
        }
        if full {
            Counted.decisionsDropped()
            if lock.withLock({ state.dropped }) % 1_000 == 1 {
                logger.warning("decision log: \(PostgresDecisionLog.capacity) decisions wait to be written; newer ones are dropped")
            }
        }
        if start { queue.async { self.drain() } }
    }

    /// Writes what waits, batch by batch, on the log's queue; after a failure, tries again in
    /// a second.
    private func drain() {
        do {
            while try connection.withLock({ try writeNext(endsDraining: true) }) {}
        } catch {
            logger.warning("decision log: decisions not written yet (\(error)); trying again in 1 s")
            queue.asyncAfter(deadline: .now() + 1) { self.drain() }
        }
    }

    /// Writes the first waiting decisions and forgets them; false when none waits. Prunes when
    /// the new IDs crossed a multiple of `pruneEvery`. Call with `connection` held: the batch
    /// is taken under it, so no two writers send the same decisions.
    private func writeNext(endsDraining: Bool) throws -> Bool {
        let batch = lock.withLock { () -> [PolicyDecision] in
            if state.waiting.isEmpty && endsDraining { state.draining = false }
            return Array(state.waiting.prefix(PostgresDecisionLog.rowsPerInsert))
        }
        guard !batch.isEmpty else { return false }
        let session = try connected()
        var values: [DatabaseValue] = []
        values.reserveCapacity(batch.count * 6)
        for d in batch {
            values += [d.point.databaseValue, PostgresDecisionLog.json(d.policies).databaseValue, (d.allow ? 1 : 0).databaseValue,
                       PostgresDecisionLog.json(d.reasons).databaseValue, d.duration.databaseValue,
                       d.time.timeIntervalSince1970.databaseValue]
        }
        let rows = Array(repeating: "(?, ?, ?, ?, ?, ?)", count: batch.count).joined(separator: ", ")
        let ids = try guarded(session) {
            try session.query("INSERT INTO decision (point, policies, allow, reasons, duration, at) VALUES \(rows) RETURNING id", values)
        }.compactMap { row -> Int64? in if case .int64(let id)? = row.first?.storage { return id } else { return nil } }
        // Only writers (the connection held) remove, and only from the front: these are the
        // batch's decisions.
        lock.withLock { state.waiting.removeFirst(batch.count) }
        if let first = ids.min(), let last = ids.max(),
           (first - 1) / PostgresDecisionLog.pruneEvery != last / PostgresDecisionLog.pruneEvery {
            prune(below: last - Int64(PostgresDecisionLog.kept), session)
        }
        return true
    }

    /// Deletes decisions up to ID `id`, a few bounded statements' worth; a failure leaves them
    /// for the next prune.
    private func prune(below id: Int64, _ session: PostgresSession) {
        for _ in 0..<PostgresDecisionLog.pruneStatements {
            let deleted = try? guarded(session) {
                try session.execute("DELETE FROM decision WHERE id IN (SELECT id FROM decision WHERE id <= ? ORDER BY id LIMIT \(PostgresDecisionLog.pruneRows))",
                                    [id.databaseValue])
            }
            if (deleted ?? 0) < PostgresDecisionLog.pruneRows { break }
        }
    }

    /// The latest `limit` decisions of every node, oldest first, this node's waiting ones
    /// written first; nil when the table cannot be written or read (the caller shows its own).
    func latest(limit: Int) -> [PolicyDecision]? {
        guard limit > 0 else { return [] }
        return connection.withLock { () -> [PolicyDecision]? in
            do {
                while try writeNext(endsDraining: false) {}
                let session = try connected()
                let rows = try guarded(session) {
                    try session.query("SELECT id, point, policies, allow, reasons, duration, at FROM decision ORDER BY id DESC LIMIT ?",
                                      [limit.databaseValue])
                }
                return rows.reversed().compactMap(PostgresDecisionLog.decision)
            } catch {
                return nil
            }
        }
    }

    /// Writes what waits (within one statement timeout a batch) and closes the connection:
    /// a command that ends the process keeps its decisions.
    func close() {
        connection.withLock {
            let deadline = Date().addingTimeInterval(PostgresDecisionLog.closingSeconds)
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
                logger.error("\(left) policy decisions were not written to the shared decision log (\(failure))")
            }
            try? session?.connection.close().wait()
            session = nil
        }
    }

    /// The log's connection, opened on first use and again after it was lost.
    private func connected() throws -> PostgresSession {
        if let session, !session.connection.isClosed { return session }
        session = nil
        let opened = try connector.openSession(statementTimeoutMs: PostgresDecisionLog.timeoutMs, answerMarginMs: PostgresDecisionLog.answerMarginMs)
        session = opened
        return opened
    }

    private func guarded<T>(_ session: PostgresSession, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as PostgresFailure {
            if failure.isConnectionLost { self.session = nil; try? session.connection.close().wait() }
            throw failure
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
