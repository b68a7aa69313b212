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
    /// Decisions the table keeps unless `policies.keepDecisions` says otherwise.
    package static let defaultKept = 10_000
    /// Decisions waiting to be written, at most.
    package static let capacity = 10_000
    /// Rows per INSERT (14 values each: below both stores' limits on parameters).
    static let rowsPerInsert = 500
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

    /// Decisions this process wrote, kept with their table IDs after the write: a read that
    /// began before their commit still lists them.
    static let recentKept = 1_000
    /// How long a background write waits for a lock held elsewhere before trying again (it
    /// holds up no request: only a `latest` that would write first, which then does not).
    package static let writerWaitMs = 250

    private struct State {
        var waiting: [PolicyDecision] = []
        var recent: [PolicyDecision] = []
        var draining = false
        var dropped = 0
        var closed = false
        /// Until when (uptime, ns) `latest` does not try to write: a lock was found held.
        var flushAfter: UInt64 = 0
    }
    private let connect: @Sendable () throws -> any DecisionLogConnection
    private let label: String
    private let lock = NSLock()
    private var state = State()
    /// The connection writes go through, and the one reads go through (apart, so a write
    /// waiting for a lock never holds up a read). Each guarded by its lock.
    private let writing = NSLock(), reading = NSLock()
    private var writer: (any DecisionLogConnection)?, reader: (any DecisionLogConnection)?
    /// The table's latest rows as `latest` last read them, and the store's version then.
    /// Guarded by `reading`.
    private var lastRead: (limit: Int, version: Int64, at: UInt64, decisions: [PolicyDecision])?
    /// How long a read of the table is answered again without asking whether it changed.
    static let freshNanoseconds: UInt64 = 1_000_000
    private let queue = DispatchQueue(label: "shareflow.decisions")
    private let logs = NSLock()
    private var logger = Logger(label: "shareflow.decisions")

    /// `connect` opens one of the log's own connections to the store named `label`; called on
    /// first use and again after a connection was lost.
    package init(label: String, connect: @escaping @Sendable () throws -> any DecisionLogConnection) {
        self.label = label
        self.connect = connect
    }

    deinit {
        writer?.close()
        reader?.close()
    }

    /// Decisions the table keeps (`policies.keepDecisions`, 1 to 10,000,000).
    package var kept: Int {
        get { lock.withLock { keep } }
        set { lock.withLock { keep = min(max(newValue, 1), 10_000_000) } }
    }
    private var keep = StoreDecisionLog.defaultKept
    package func setLogger(_ logger: Logger) { logs.withLock { self.logger = logger } }
    private var log: Logger { logs.withLock { logger } }
    private var isClosed: Bool { lock.withLock { state.closed } }

    /// Hands `decision` over to be written; returns at once. With `capacity` waiting already
    /// (the table unwritable for a while), it is dropped and counted; after `close()`, it is
    /// not written.
    package func add(_ decision: PolicyDecision) {
        let (start, dropped) = lock.withLock { () -> (Bool, Int?) in
            guard !state.closed else { return (false, nil) }
            guard state.waiting.count < StoreDecisionLog.capacity else {
                state.dropped += 1
                return (false, state.dropped)
            }
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

    /// Writes what waits, batch by batch, on the log's queue, each write waiting a moment
    /// for a lock held elsewhere (`writerWaitMs`); a lock still held is tried again shortly,
    /// quietly; any other failure a second later, said. Nothing after `close()`.
    private func drain() {
        guard !isClosed else { return }
        do {
            while try writing.withLock({ try writeNext(endsDraining: true, waiting: true) }) {}
        } catch is DecisionLogBusy {
            queue.asyncAfter(deadline: .now() + StoreDecisionLog.busyRetry) { self.drain() }
        } catch is DecisionLogClosed {
            return
        } catch {
            log.warning("decision log of \(label): decisions not written yet (\(error)); trying again in 1 s")
            queue.asyncAfter(deadline: .now() + 1) { self.drain() }
        }
    }

    /// How soon a write that found the table's lock held is tried again.
    static let busyRetry = 0.02
    /// How long `latest` waits for a background write in progress before reading without
    /// writing first (one in progress takes a moment; one waiting for a lock, longer).
    static let writerGrace = 0.05

    /// Writes the first waiting decisions in one transaction and keeps them as `recent`;
    /// false when none waits. The lock is taken before the batch is made, so an attempt
    /// that does not get it costs one BEGIN. Prunes when the new IDs crossed a multiple of
    /// `pruneEvery`. Call with `writing` held: no two writers send the same decisions.
    private func writeNext(endsDraining: Bool, waiting: Bool) throws -> Bool {
        let empty = lock.withLock { () -> Bool in
            if state.waiting.isEmpty && endsDraining { state.draining = false }
            return state.waiting.isEmpty
        }
        guard !empty else { return false }
        let written = try connected(&writer) { link in
            try link.write(waiting: waiting) { () -> [PolicyDecision] in
                let batch = lock.withLock { Array(state.waiting.prefix(StoreDecisionLog.rowsPerInsert)) }
                guard !batch.isEmpty else { return [] }
                var values: [DatabaseValue] = []
                values.reserveCapacity(batch.count * 14)
                for d in batch {
                    values += [
                        d.point.databaseValue, StoreDecisionLog.json(d.policies).databaseValue, (d.allow ? 1 : 0).databaseValue,
                        StoreDecisionLog.json(d.reasons).databaseValue, d.duration.databaseValue,
                        d.time.timeIntervalSince1970.databaseValue,
                    ]
                    values += DecisionColumns.values(of: d)
                }
                let rows = Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", count: batch.count).joined(separator: ", ")
                let ids = try link.query(
                    "INSERT INTO decision (point, policies, allow, reasons, duration, at, \(DecisionColumns.names)) VALUES \(rows) RETURNING id",
                    values
                )
                .compactMap { row -> Int64? in if case .int64(let id)? = row.first?.storage { return id } else { return nil } }
                if let first = ids.min(), let last = ids.max(),
                    (first - 1) / StoreDecisionLog.pruneEvery != last / StoreDecisionLog.pruneEvery
                {
                    try prune(below: last - Int64(kept), link)
                }
                return zip(batch, ids.sorted()).map { d, id in d.numbered(Int(id)) }
            }
        }
        guard !written.isEmpty else { return false }
        // Only writers (`writing` held) remove, and only from the front: these are the batch's
        // decisions, now in the table.
        lock.withLock {
            state.waiting.removeFirst(written.count)
            state.recent += written
            if state.recent.count > 2 * StoreDecisionLog.recentKept { state.recent.removeFirst(state.recent.count - StoreDecisionLog.recentKept) }
        }
        return true
    }

    /// Deletes decisions up to ID `id`, a few bounded statements' worth.
    private func prune(below id: Int64, _ link: any DecisionLogConnection) throws {
        for _ in 0..<StoreDecisionLog.pruneStatements {
            let deleted = try link.execute(
                "DELETE FROM decision WHERE id IN (SELECT id FROM decision WHERE id <= ? ORDER BY id LIMIT \(StoreDecisionLog.pruneRows))",
                [id.databaseValue]
            )
            if deleted < StoreDecisionLog.pruneRows { break }
        }
    }

    /// The latest `limit` decisions of every process, oldest first; nil when the table
    /// cannot be read (the caller shows its own). What this process has not written yet is
    /// written first when that needs no wait (never inside this process's own write on SQLite,
    /// whose lock the engine holds; nor while the background write waits), and listed after
    /// the table's rows otherwise, its ID this process's count until written.
    package func latest(limit: Int) -> [PolicyDecision]? {
        guard limit > 0, !isClosed else { return limit > 0 ? nil : [] }
        // A lock found held a moment ago is not asked for again (a plugin asking in a loop
        // inside its write would pay a BEGIN, or the wait below, each time).
        let now = DispatchTime.now().uptimeNanoseconds
        if now >= lock.withLock({ state.flushAfter }) {
            var skip: Double = 0
            if writing.lock(before: Date().addingTimeInterval(StoreDecisionLog.writerGrace)) {
                do {
                    while try writeNext(endsDraining: false, waiting: false) {}
                } catch is DecisionLogBusy {
                    skip = StoreDecisionLog.busyRetry
                } catch {}
                writing.unlock()
            } else {
                // The background write waits for a lock held elsewhere (or this process's).
                skip = Double(StoreDecisionLog.writerWaitMs) / 1000
            }
            if skip > 0 { lock.withLock { state.flushAfter = now + UInt64(skip * 1e9) } }
        }
        // Freshness counts from now, after any wait for the writer above.
        let readAt = DispatchTime.now().uptimeNanoseconds
        do {
            let table = try withReader { link -> [PolicyDecision] in
                // The table as last read, while no connection has written since (a
                // plugin asking in a loop reads it once), or read under a millisecond ago
                // (such a loop does not even ask: what this process wrote since is listed
                // from `recent` below all the same).
                if let read = lastRead, read.limit >= limit, readAt < read.at + StoreDecisionLog.freshNanoseconds {
                    return Array(read.decisions.suffix(limit))
                }
                let version = try link.version()
                if let version, let read = lastRead, read.version == version, read.limit >= limit {
                    lastRead?.at = readAt
                    return Array(read.decisions.suffix(limit))
                }
                let decisions = try link.read(
                    "SELECT id, point, policies, allow, reasons, duration, at, \(DecisionColumns.names) FROM decision ORDER BY id DESC LIMIT ?",
                    [limit.databaseValue]
                ).reversed().compactMap(StoreDecisionLog.decision)
                lastRead = version.map { (limit, $0, readAt, decisions) }
                return decisions
            }
            // Written by this process after that read began, and not written yet.
            let newest = table.last?.id ?? 0
            let later = lock.withLock { () -> [PolicyDecision] in
                // `recent` is in ID order: its tail past the table's newest.
                var start = state.recent.endIndex
                while start > state.recent.startIndex, state.recent[start - 1].id > newest, state.recent.endIndex - start < limit { start -= 1 }
                return Array(state.recent[start...]) + state.waiting.suffix(limit)
            }
            return Array((table + later).suffix(limit))
        } catch {
            return nil
        }
    }

    /// Writes what waits (within `closingSeconds`), then closes both connections for good: a
    /// command that ends the process keeps its decisions, and nothing is written or read
    /// after (a retry waiting on the queue finds the log closed).
    package func close() {
        let (left, failure) = writing.withLock { () -> (Int, Error?) in
            let deadline = Date().addingTimeInterval(StoreDecisionLog.closingSeconds)
            var failure: Error?
            while !isClosed {
                do {
                    failure = nil
                    if try !writeNext(endsDraining: false, waiting: true) { break }
                } catch {
                    failure = error
                    if Date() >= deadline { break }
                    Thread.sleep(forTimeInterval: StoreDecisionLog.busyRetry)
                }
            }
            let left = lock.withLock { () -> Int in
                state.closed = true
                return state.waiting.count
            }
            writer?.close()
            writer = nil
            return (left, failure)
        }
        reading.withLock {
            reader?.close()
            reader = nil
            lastRead = nil
        }
        if let failure, left > 0 {
            log.error("\(left) policy decisions were not written to the decision log of \(label) (\(failure))")
        }
    }

    /// Runs `body` on the reader's connection, `reading` held. A new connection counts
    /// `data_version` from its own start: what was read through an earlier one is forgotten.
    private func withReader<T>(_ body: (any DecisionLogConnection) throws -> T) throws -> T {
        try reading.withLock {
            if reader == nil { lastRead = nil }
            return try connected(&reader, body)
        }
    }

    /// Runs `body` on `link`, opened on first use; a lost connection is closed and the next
    /// use opens another. Refused once the log is closed. Touches nothing but `link`: the
    /// writer's and the reader's are each guarded by their own lock, held by the caller.
    private func connected<T>(_ link: inout (any DecisionLogConnection)?, _ body: (any DecisionLogConnection) throws -> T) throws -> T {
        guard !isClosed else { throw DecisionLogClosed() }
        let current: any DecisionLogConnection
        if let open = link {
            current = open
        } else {
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
        guard row.count == 15, case .int64(let id) = row[0].storage, let point = String.fromDatabaseValue(row[1]),
            let policies = String.fromDatabaseValue(row[2]), case .int64(let allow) = row[3].storage,
            let reasons = String.fromDatabaseValue(row[4]), let duration = Double.fromDatabaseValue(row[5]),
            let at = Double.fromDatabaseValue(row[6])
        else { return nil }
        var decision = PolicyDecision(
            id: Int(id),
            point: point,
            policies: strings(policies),
            allow: allow != 0,
            reasons: strings(reasons),
            duration: duration,
            time: Date(timeIntervalSince1970: at)
        )
        DecisionColumns.read(Array(row[7...]), into: &decision)
        return decision
    }

    /// The latest decisions `filter` selects, from the table (what this process has not written
    /// yet is written first, as for `latest(limit:)`); nil when it cannot be read.
    package func latest(_ filter: DecisionFilter) -> [PolicyDecision]? {
        let limit = min(max(filter.limit, 0), DecisionFilter.maxLimit)
        guard limit > 0, !isClosed else { return limit > 0 ? nil : [] }
        // Written first, so the table holds them: `latest(limit: 1)` writes what waits.
        _ = latest(limit: 1)
        var conditions: [String] = []
        var values: [DatabaseValue] = []
        if let point = filter.point {
            conditions.append("point = ?")
            values.append(point.databaseValue)
        }
        if filter.denied { conditions.append("allow = 0") }
        if let since = filter.since {
            conditions.append("at >= ?")
            values.append(since.timeIntervalSince1970.databaseValue)
        }
        if let caller = filter.caller {
            conditions.append("caller = ?")
            values.append(caller.databaseValue)
        }
        if filter.shadowFlips {
            // The shadow verdict's JSON begins with its `allow` (keys sorted).
            conditions.append(#"((allow = 1 AND shadow LIKE '{"allow":false%') OR (allow = 0 AND shadow LIKE '{"allow":true%'))"#)
        }
        values.append(limit.databaseValue)
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        do {
            return try withReader { link in
                try link.read(
                    "SELECT id, point, policies, allow, reasons, duration, at, \(DecisionColumns.names) FROM decision \(whereClause) ORDER BY id DESC LIMIT ?",
                    values
                ).reversed().compactMap(StoreDecisionLog.decision)
            }
        } catch {
            return nil
        }
    }

    static func json(_ strings: [String]) -> String {
        JSONText.of(strings.map { $0.utf8.count <= longestText ? $0 : JSONText.cut($0, bytes: longestText) + "…" })
    }

    static func strings(_ json: String) -> [String] {
        (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String] ?? []
    }
}

/// The decision log's own connection to its store (`StoreDecisionLog`): statements bounded by
/// `StoreDecisionLog.timeoutMs`.
package protocol DecisionLogConnection: AnyObject {
    /// Runs `body` in a write transaction; `waiting`: whether its start waits a moment for a
    /// lock held elsewhere (`StoreDecisionLog.writerWaitMs`) or throws `DecisionLogBusy` at once.
    func write<T>(waiting: Bool, _ body: () throws -> T) throws -> T
    /// Inside `write`: a statement's rows.
    func query(_ sql: String, _ values: [DatabaseValue]) throws -> [[DatabaseValue]]
    /// Inside `write`: runs a statement, giving the rows it changed.
    func execute(_ sql: String, _ values: [DatabaseValue]) throws -> Int
    /// A SELECT on its own, which never waits for a writer.
    func read(_ sql: String, _ values: [DatabaseValue]) throws -> [[DatabaseValue]]
    /// A number that changes whenever another connection commits to the store, if the
    /// database keeps one (SQLite's `data_version`); nil: every read reads.
    func version() throws -> Int64?
    /// Whether the connection is gone (a lost one is closed and opened again).
    var isLost: Bool { get }
    func close()
}

/// A write of the log that did not get a lock held elsewhere: tried again shortly.
package struct DecisionLogBusy: Error {}
/// The log was closed: nothing is written or read any more.
struct DecisionLogClosed: Error {}

/// The decision log's connection to an SQLite store: the file opened again, read-write but
/// never made (a store deleted under a running process is not made anew, empty, by its log).
final class SQLiteDecisionConnection: DecisionLogConnection {
    private let queue: DatabaseQueue
    /// The connection inside `write`.
    private var current: Database?

    init(path: String) throws {
        var config = Configuration()
        config.busyMode = .timeout(Double(StoreDecisionLog.timeoutMs) / 1000)
        config.label = "shareflow.decisions"
        queue = try DatabaseQueue(path: Store.sqliteURI(path, "mode=rw"), configuration: config)
    }

    /// In an IMMEDIATE transaction: the lock is taken (or not) at BEGIN, with nothing open.
    func write<T>(waiting: Bool, _ body: () throws -> T) throws -> T {
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA busy_timeout = \(waiting ? StoreDecisionLog.writerWaitMs : 0)")
            var result: T?
            do {
                try db.inTransaction(.immediate) {
                    current = db
                    defer { current = nil }
                    result = try body()
                    return .commit
                }
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
                throw DecisionLogBusy()
            }
            return result!
        }
    }

    func query(_ sql: String, _ values: [DatabaseValue]) throws -> [[DatabaseValue]] {
        guard let db = current else { preconditionFailure("a decision log statement outside its write") }
        return try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values)).map { Array($0.databaseValues) }
    }

    func execute(_ sql: String, _ values: [DatabaseValue]) throws -> Int {
        guard let db = current else { preconditionFailure("a decision log statement outside its write") }
        try db.execute(sql: sql, arguments: StatementArguments(values))
        return db.changesCount
    }

    func read(_ sql: String, _ values: [DatabaseValue]) throws -> [[DatabaseValue]] {
        try queue.read { db in try Row.fetchAll(db, sql: sql, arguments: StatementArguments(values)).map { Array($0.databaseValues) } }
    }

    /// `PRAGMA data_version`, its statement compiled once (a plugin asking for the log in a
    /// loop pays little for it). The file control of the same name is cheaper still but sees
    /// other connections' commits only once a read transaction has begun.
    func version() throws -> Int64? {
        try queue.inDatabase { db in try Int64.fetchOne(try db.cachedStatement(sql: "PRAGMA data_version")) }
    }

    /// A file connection is not lost: a failure (the lock held, the table gone) is the table's.
    var isLost: Bool { false }

    func close() { try? queue.close() }
}

/// The decision table's columns of version 13 (SPEC §18 P3), in the order `names` lists them.
enum DecisionColumns {
    static let names = "caller, container, environment, share, input, consulted, node, shadow"

    static func values(of d: PolicyDecision) -> [DatabaseValue] {
        let share = d.share.map { text(["recordName": $0.recordName, "zoneName": $0.zoneName, "ownerName": $0.ownerName]) }
        let consulted = d.consulted.map { c -> [String: Any] in
            var o: [String: Any] = ["policy": c.policy, "verdict": c.verdict]
            if let reason = c.reason { o["reason"] = reason }
            if let location = c.location { o["location"] = location }
            return o
        }
        let shadow = d.shadow.map { v -> String in
            var o: [String: Any] = ["allow": v.allow]
            if let p = v.policy { o["policy"] = p }
            if let r = v.reason { o["reason"] = r }
            return text(o)
        }
        var input = d.input
        if let i = input, !d.erased.isEmpty, var object = (try? JSONSerialization.jsonObject(with: Data(i.utf8))) as? [String: Any] {
            object["erased"] = d.erased
            input = text(object)
        }
        return [
            d.caller.databaseValue, d.container.databaseValue, d.environment.databaseValue, share.databaseValue, input.databaseValue,
            text(consulted).databaseValue, d.node.databaseValue, shadow.databaseValue,
        ]
    }

    static func read(_ row: [DatabaseValue], into d: inout PolicyDecision) {
        guard row.count == 8 else { return }
        d.caller = String.fromDatabaseValue(row[0])
        d.container = String.fromDatabaseValue(row[1])
        d.environment = String.fromDatabaseValue(row[2])
        if let s = object(row[3]) {
            d.share = PolicyDecision.SharedRecord(
                recordName: s["recordName"] as? String ?? "",
                zoneName: s["zoneName"] as? String ?? "",
                ownerName: s["ownerName"] as? String ?? ""
            )
        }
        if var input = object(row[4]) {
            d.erased = input["erased"] as? [String] ?? []
            input["erased"] = nil
            d.input = PolicyInput.text(input)
        }
        if let list = String.fromDatabaseValue(row[5]).flatMap({ try? JSONSerialization.jsonObject(with: Data($0.utf8)) }) as? [[String: Any]] {
            d.consulted = list.map {
                PolicyDecision.Consulted(
                    policy: $0["policy"] as? String ?? "",
                    verdict: $0["verdict"] as? String ?? "",
                    reason: $0["reason"] as? String,
                    location: $0["location"] as? String
                )
            }
        }
        d.node = String.fromDatabaseValue(row[6])
        if let s = object(row[7]) {
            d.shadow = PolicyDecision.ShadowVerdict(
                allow: s["allow"] as? Bool ?? false,
                policy: s["policy"] as? String,
                reason: s["reason"] as? String
            )
        }
    }

    private static func object(_ value: DatabaseValue) -> [String: Any]? {
        String.fromDatabaseValue(value).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } as? [String: Any]
    }

    private static func text(_ o: Any) -> String { JSONText.of(o) }
}
