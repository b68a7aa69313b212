import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import ShareFlow

/// Where a PostgreSQL store is (SPEC §16): `postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|require]`,
/// `postgresql://` alike.
package struct PostgresLocation: Sendable, Equatable {
    package let user: String
    package let password: String?
    package let host: String
    package let port: Int
    package fileprivate(set) var database: String
    package let requiresTLS: Bool

    /// Whether `store` names a PostgreSQL store rather than an SQLite file.
    package static func isURL(_ store: String) -> Bool {
        let lowered = store.prefix(13).lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    package init(_ url: String) throws {
        func bad(_ why: String) -> StoreError {
            .cannotOpen(
                path: PostgresLocation.redacted(url),
                reason: "\(why); expected postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|require]"
            )
        }
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(), ["postgres", "postgresql"].contains(scheme) else {
            throw bad("it is not a PostgreSQL URL")
        }
        guard let user = parts.user, !user.isEmpty else { throw bad("it names no user") }
        guard let host = parts.host, !host.isEmpty else { throw bad("it names no host") }
        let database = String(parts.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else { throw bad("it names no database") }
        if let port = parts.port, !(1...65535).contains(port) { throw bad("its port \(port) is out of range") }
        var requiresTLS = false
        for item in parts.queryItems ?? [] {
            switch (item.name, item.value) {
            case ("sslmode", "disable"): requiresTLS = false
            case ("sslmode", "require"): requiresTLS = true
            case ("sslmode", let other): throw bad("sslmode must be disable or require, not \(other ?? "nothing")")
            default: throw bad("it has an unknown parameter \(item.name)")
            }
        }
        self.user = parts.user?.removingPercentEncoding ?? user
        self.password = parts.password?.removingPercentEncoding
        self.host = host
        self.port = parts.port ?? 5432
        self.database = database.removingPercentEncoding ?? database
        self.requiresTLS = requiresTLS
    }

    /// The URL as messages show it: never the password.
    package var label: String { "postgres://\(user)@\(host):\(port)/\(database)" }

    package static func redacted(_ url: String) -> String { Store.redactedURL(url) }
}

/// How a node uses PostgreSQL (config `postgres = { poolSize, statementTimeoutMs, passwordFile }`).
package struct PostgresSettings: Sendable, Equatable {
    /// Connections a node holds at most.
    package var poolSize: Int = 8
    /// How long one statement may run, and a connection take to open, before the request fails
    /// with `serviceUnavailable` (SPEC §16: 5 s by default).
    package var statementTimeoutMs: Int = 5_000
    /// A file whose first line is the password (config `postgres.passwordFile`), for a URL
    /// without one; see `PostgresPassword` for the order.
    package var passwordFile: String?

    package init(poolSize: Int = 8, statementTimeoutMs: Int = 5_000) {
        self.poolSize = poolSize
        self.statementTimeoutMs = statementTimeoutMs
    }
}

/// A ShareFlow store on PostgreSQL: the tables in schema `shareflow`. The engine's writes go
/// through one connection (`PostgresSession`, opened again on the next use after PostgreSQL went
/// away), beside a spare where a write that may not wait asks for its locks; reading threads,
/// the decision log, rate buckets and commit notices each have connections of their own. Every write transaction first takes transaction-scoped advisory locks
/// for what it declared it writes (`locking`): each of its zones' (beside the cluster's lock,
/// shared), or the whole store's. Writes to one zone therefore run one at a time, from any
/// node: per-zone positions are gapless and in commit order, and a rule checked inside the
/// transaction (one share per record, 100 participants, a change tag) still holds at commit.
/// Writes to different zones run at once. Reads take no lock and see one snapshot.
package final class PostgresStore: StoreDriver, @unchecked Sendable {
    package var location: PostgresLocation { connector.location }
    package var settings: PostgresSettings { connector.settings }
    /// How its connections are opened (the log's, the rate buckets' and the listener's too).
    let connector: PostgresConnector
    private var session: PostgresSession?
    /// A second connection, where a write that may not wait asks for the lock (SPEC §16 M5).
    private var spare: PostgresSession?
    /// The write lock asked for there and not yet claimed.
    private var lockRequest: LockRequest?
    /// Whether a connection was opened before: opening another is a reconnection.
    private var connectedBefore = false
    /// The decision log every node shares, on a connection of its own.
    let sharedDecisions: StoreDecisionLog
    /// Readers made and not closed (`makeReader`).
    let readersMade = NIOLockedValueBox(0)

    /// The advisory lock every write holds until it commits ("ShareFlw").
    static let writeLock: Int64 = 0x5368_6172_6546_6C77
    /// The lock a node holds while it migrates the schema.
    static let migrationLock: Int64 = 0x5368_6172_6546_6D67
    /// How long an answer is waited for beyond the statement's own timeout (`PostgresSession`).
    static let answerMarginMs = 5_000
    /// Seconds a caller is told to wait when PostgreSQL is unreachable.
    static let outageRetryAfter = 2.0

    package convenience init(
        _ location: PostgresLocation,
        settings: PostgresSettings = PostgresSettings(),
        catalogue: StoreCatalogue = .current
    ) throws {
        self.init(location: location, settings: settings, catalogue: catalogue)
        do {
            try migrate(try connected())
        } catch let failure as PostgresFailure {
            throw StoreError.cannotOpen(path: location.label, reason: PostgresStore.reason(failure))
        }
    }

    private init(location: PostgresLocation, settings: PostgresSettings, catalogue: StoreCatalogue) {
        self.catalogue = catalogue
        let connector = PostgresConnector(location: location, settings: settings)
        self.connector = connector
        sharedDecisions = StoreDecisionLog(label: location.label) { try PostgresDecisionConnection(connector) }
    }

    deinit {
        try? session?.connection.close().wait()
        try? spare?.connection.close().wait()
    }

    package func close() {
        try? session?.connection.close().wait()
        try? spare?.connection.close().wait()
        session = nil
        spare = nil
        lockRequest = nil
    }

    package var label: String { location.label }
    package var name: String { "postgres" }
    package let catalogue: StoreCatalogue
    package var dialect: StoreDialect { PostgresSchema.dialect }
    package var connectionLimit: Int { settings.poolSize }
    package var decisionLog: (any SharedDecisionLog)? { sharedDecisions }
    package func makeRateBuckets() -> (any SharedRateBuckets)? { PostgresRateBuckets(connector) }
    package func listenForCommits(_ poke: @escaping @Sendable () -> Void) async {
        await PostgresChangeNotices.listen(connector, poke: poke)
    }

    package func shareFlowError(_ error: Error) -> ShareFlowError? {
        (error as? PostgresFailure).map(shareFlowError)
    }

    /// The open connection, or a new one.
    func connected() throws -> PostgresSession {
        if let session, !session.connection.isClosed { return session }
        session = nil
        if connectedBefore { Counted.storeRetry("postgres", reason: "reconnect") }
        connectedBefore = true
        let opened = try openSession(statementTimeoutMs: settings.statementTimeoutMs)
        session = opened
        return opened
    }

    func openSession(statementTimeoutMs: Int, answerMarginMs: Int = 5_000) throws -> PostgresSession {
        try connector.openSession(statementTimeoutMs: statementTimeoutMs, answerMarginMs: answerMarginMs)
    }

    /// Makes the schema, or brings it up to this binary's version, under a lock so that nodes
    /// starting together migrate once.
    private func migrate(_ session: PostgresSession) throws {
        try session.command("SELECT pg_advisory_lock(\(PostgresStore.migrationLock))")
        defer { try? session.command("SELECT pg_advisory_unlock(\(PostgresStore.migrationLock))") }
        try session.command("CREATE SCHEMA IF NOT EXISTS \(PostgresSchema.name)")
        let hasMeta =
            try session.query("SELECT 1 FROM pg_tables WHERE schemaname = ? AND tablename = 'shareflow_meta'", [PostgresSchema.name.databaseValue])
            .isEmpty == false
        var version: Int?
        if hasMeta {
            let rows = try session.query("SELECT key, value FROM shareflow_meta WHERE key IN ('format', 'schemaVersion')", [])
            var found: [String: String] = [:]
            for row in rows where row.count == 2 {
                if case .string(let k) = row[0].storage, case .string(let v) = row[1].storage { found[k] = v }
            }
            guard found["format"] == Store.formatName else {
                throw StoreError.notAStore(path: location.label, reason: "its schema \(PostgresSchema.name) has no ShareFlow format mark")
            }
            guard let stored = found["schemaVersion"].flatMap(Int.init), stored >= PostgresSchema.oldest else {
                throw StoreError.cannotOpen(path: location.label, reason: "it is damaged (its schema version is missing or not a number)")
            }
            if stored > catalogue.version {
                throw StoreError.newerSchema(path: location.label, found: stored, supported: catalogue.version)
            }
            version = stored
        } else {
            let tables = try session.query(
                "SELECT tablename FROM pg_tables WHERE schemaname = ? ORDER BY tablename LIMIT 5",
                [PostgresSchema.name.databaseValue]
            )
            guard tables.isEmpty else {
                let names = tables.compactMap { row -> String? in
                    if case .string(let s)? = row.first?.storage { return s }
                    return nil
                }
                throw StoreError.notAStore(
                    path: location.label,
                    reason: "its schema \(PostgresSchema.name) holds tables of another program (\(names.joined(separator: ", ")))"
                )
            }
        }
        /// One step's statements in one transaction, its version marked with it.
        func apply(_ statements: [String], reaching target: Int) throws {
            try session.command("BEGIN")
            do {
                for statement in statements { try session.command(statement) }
                try session.execute("UPDATE shareflow_meta SET value = ? WHERE key = 'schemaVersion'", [String(target).databaseValue])
                try session.command("COMMIT")
            } catch {
                try? session.command("ROLLBACK")
                throw error
            }
        }
        guard var version else {
            // A new store: the catalogue whole, and the change tokens' key (SPEC §14 S1), made
            // once in the database so every node signs the same tokens.
            try apply(
                PostgresSchema.creation(catalogue) + [
                    "INSERT INTO shareflow_meta (key, value) VALUES ('syncKey', '\(PostgresStore.randomHex(bytes: 32))') ON CONFLICT (key) DO NOTHING"
                ],
                reaching: catalogue.version
            )
            return
        }
        guard version < catalogue.version else { return }
        // What the upgrade would make, made already by someone else: refused before any step.
        let names = Set(
            try session.query(
                "SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ?",
                [PostgresSchema.name.databaseValue]
            ).compactMap { String.fromDatabaseValue($0[0]) }
                + session.query(
                    "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ?",
                    [PostgresSchema.name.databaseValue]
                ).compactMap { String.fromDatabaseValue($0[0]) }
        )
        if let taken = catalogue.madeAfter(version, PostgresSchema.dialect).first(where: { names.contains($0.name.lowercased()) }) {
            throw StoreError.cannotOpen(
                path: location.label,
                reason:
                    "it holds a \(taken.kind) \(taken.name) ShareFlow did not make, and upgrading it from schema version \(version) makes one of that name; rename or drop it (nothing was changed)"
            )
        }
        while version < catalogue.version {
            version += 1
            try apply(catalogue.step(to: version, PostgresSchema.dialect), reaching: version)
        }
    }

    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Runs `body` in a transaction: a write holds the write lock; a read sees one snapshot.
    /// A write that changed rows tells every node's change streams at its commit (NOTIFY).
    package func transaction<T>(_ kind: StoreTransactionKind, scope: StoreWriteScope, _ body: (any StoreConnection) throws -> T) throws -> T {
        let writing = kind.writes
        var grace: TimeInterval?
        var within: TimeInterval = 0
        switch kind {
        case .read: break
        case .write(let w): within = w
        case .writeIfFree(let g, let w): (grace, within) = (g, w)
        }
        return try transaction(writing: writing, scope: scope, lockGrace: grace, lockWithin: within) { (session: PostgresSession) -> T in
            let changesBefore = session.totalChanges
            let result = try body(session)
            // Other nodes' change streams look at their feeds once this commits.
            if writing, session.totalChanges != changesBefore { session.pipeline(PostgresChangeNotices.notify) }
            return result
        }
    }

    /// Runs `body` in a transaction: a write holds the write lock; a read sees one snapshot.
    ///
    /// A write that may not wait long (`lockGrace` set, SPEC §16 M5) waits that long for the
    /// lock (one round trip; none at all with no grace). When it has not come, it asks for the lock on a connection of its own
    /// (`spare`), where PostgreSQL queues it fairly behind the other nodes' writes, and throws
    /// `StoreBusy`, which tells its caller when the lock has come; the next write claims that
    /// connection, its transaction begun and the lock held, if the request covers what it
    /// writes. A write that waits in place claims a request whose locks have come; one still
    /// out it ends (see below). A lost connection is dropped, so the next call opens a new one.
    func transaction<T>(
        writing: Bool,
        scope: StoreWriteScope = .wholeStore,
        lockGrace: TimeInterval? = nil,
        lockWithin: TimeInterval = 0,
        _ body: (PostgresSession) throws -> T
    ) throws -> T {
        // A request still out holds up only the writes it would serve. One that may not wait
        // and that it does not cover tries its own locks on the engine's connection (the
        // request stays out). One that waits in place for just what it asked for (an observer's
        // write to the zone the node's requests wait for) waits for it and claims it, within the busy
        // timeout: the node keeps its place in PostgreSQL's queue (ending it each time starved
        // the requests in line; they ask again once it is claimed). The engine's connection
        // holds no lock meanwhile (this is an outermost transaction), so no other node's wait
        // can be on this one. One that waits in place for anything else ends it (its
        // connection closed, which ends its statement in PostgreSQL too:
        // `client_connection_check_interval`; whoever waits on it asks again) and waits for
        // its own locks alone: claiming it would wait for every lock it asked for, its own or
        // not, on the engine's thread.
        var lockWithin = lockWithin
        if writing, lockGrace == nil, let request = lockRequest, !request.isAnswered {
            if request.scope == scope {
                let answered = DispatchSemaphore(value: 0)
                request.whenAnswered { answered.signal() }
                let started = ProcessInfo.processInfo.systemUptime
                if answered.wait(timeout: .now() + lockWithin) == .timedOut {
                    lockRequest = nil
                    drop(request.session)
                    throw StoreBusy(path: label).shareFlowError(waited: lockWithin)
                }
                // One deadline for the whole wait: should the request have failed, this write
                // waits for its own locks only for what is left of the busy timeout.
                lockWithin = max(0.001, lockWithin - (ProcessInfo.processInfo.systemUptime - started))
            } else {
                lockRequest = nil
                drop(request.session)
            }
        }
        var pending: LockRequest?
        if writing, let request = lockRequest, !request.isAnswered, !request.scope.covers(scope) {
            pending = request
        } else if writing, let request = lockRequest {
            guard lockGrace == nil || request.isAnswered else { throw StoreBusy(path: label, onReady: request.whenAnswered) }
            lockRequest = nil
            if !request.failed && request.scope.covers(scope) {
                request.session.pipeline(PostgresStore.lockTimeout(lockWithin))
                return try run(on: request.session, writing: true, scope: scope, begun: true, body)
            }
            // The lock never came (its wait ran out, or the connection was lost or given up),
            // or came for zones this write does not write: that request is over, and this
            // write asks anew.
            if request.session.connection.isClosed {
                drop(request.session)
            } else {
                // Waited for: it takes the failed statements sent ahead with it.
                do { try request.session.command("ROLLBACK") } catch let failure as PostgresFailure where failure.isConnectionLost {
                    drop(request.session)
                } catch {}
                request.session.transactionEnded()
            }
        }
        let session = try connected()
        guard writing, let lockGrace else {
            return try run(on: session, writing: writing, scope: scope, begun: false, lockWithin: lockWithin, body)
        }
        var free = true
        do {
            session.pipeline("BEGIN")
            if lockGrace > 0 {
                // Waited for within the grace (PostgreSQL's lock_timeout covers advisory locks),
                // then any lock the transaction takes later within the busy timeout.
                session.pipeline(PostgresStore.lockTimeout(lockGrace))
                do {
                    try session.execute(PostgresStore.locking(scope))
                    session.pipeline(PostgresStore.lockTimeout(lockWithin))
                } catch let failure as PostgresFailure where failure.sqlState == "55P03" {
                    free = false
                }
            } else {
                let got = try session.query(PostgresStore.locking(scope, ifFree: true), [])
                free = got.first?.first?.storage == .int64(1)
                if free { session.pipeline(PostgresStore.lockTimeout(lockWithin)) }
            }
        } catch let failure as PostgresFailure {
            if failure.isConnectionLost { drop(session) }
            throw failure
        }
        guard free else {
            // The next statement on the connection comes after it: no wait here.
            session.pipeline("ROLLBACK")
            // The spare connection is taken by the request out already: this write is run
            // again once that one is answered (and then asks for its own).
            if let pending { throw StoreBusy(path: label, onReady: pending.whenAnswered) }
            let request = try askForLock(scope, within: lockWithin)
            throw StoreBusy(path: label, onReady: request.whenAnswered)
        }
        return try run(on: session, writing: true, scope: scope, begun: true, body)
    }

    /// The statement that bounds the transaction's lock waits from here on at `seconds`:
    /// whole milliseconds, at least 1 (PostgreSQL's 0 would be no timeout at all).
    static func lockTimeout(_ seconds: TimeInterval) -> String {
        let ms = seconds.isFinite ? max(1, Int(min(seconds, 86_400) * 1000)) : 1
        return "SET LOCAL lock_timeout = \(ms)"
    }

    /// The statement that takes what a write of `scope` locks (SPEC §16 M5): the whole store,
    /// the store's lock alone; some zones, the store's lock shared (a write of the whole store
    /// waits for every zone's writes, and they for it) and each zone's own, in one order.
    /// `ifFree`: one boolean, whether all of it was free (taken then), never waiting.
    static func locking(_ scope: StoreWriteScope, ifFree: Bool = false) -> String {
        let take = ifFree ? "pg_try_advisory_xact_lock" : "pg_advisory_xact_lock"
        let locks: [String]
        switch scope {
        case .wholeStore:
            locks = ["\(take)(\(writeLock))"]
        case .zones:
            // Two-key locks: a space apart from the store's one-key locks.
            locks = ["\(take)_shared(\(writeLock))"] + scope.orderedZoneKeys.map { "\(take)(\($0.halves.0), \($0.halves.1))" }
        }
        return "SELECT " + locks.joined(separator: ifFree ? " AND " : ", ")
    }

    /// The write lock asked for on the spare connection, and when PostgreSQL answered.
    final class LockRequest: @unchecked Sendable {  // `state` guarded by its box
        let session: PostgresSession
        /// What the lock asked for covers.
        let scope: StoreWriteScope
        private let state = NIOLockedValueBox((answered: false, failed: false, waiting: [@Sendable () -> Void]()))

        /// `deadline`: how long the answer is waited for before the connection is given up (a
        /// connection lost without a word, a frozen server), which fails the request and wakes
        /// its waiters to ask anew.
        init(_ session: PostgresSession, scope: StoreWriteScope, answer: EventLoopFuture<PostgresQueryResult>, deadline: TimeAmount) {
            self.session = session
            self.scope = scope
            let connection = session.connection
            let overdue = answer.eventLoop.scheduleTask(in: deadline) {
                let closing: EventLoopFuture<Void> = connection.close()
                _ = closing
            }
            answer.whenComplete { [state] result in
                overdue.cancel()
                let waiting = state.withLockedValue { state -> [@Sendable () -> Void] in
                    state.answered = true
                    if case .failure = result { state.failed = true }
                    defer { state.waiting.removeAll() }
                    return state.waiting
                }
                for wake in waiting { wake() }
            }
        }

        /// Whether PostgreSQL answered (the lock granted, or the request failed).
        var isAnswered: Bool { state.withLockedValue { $0.answered } }
        /// Whether the request failed: the lock did not come.
        var failed: Bool { state.withLockedValue { $0.failed } }

        /// Calls `wake` once PostgreSQL has answered (at once if it has).
        @Sendable func whenAnswered(_ wake: @escaping @Sendable () -> Void) {
            let now = state.withLockedValue { state -> Bool in
                if !state.answered { state.waiting.append(wake) }
                return state.answered
            }
            if now { wake() }
        }
    }

    /// Asks for the write lock on the spare connection (opened as needed), without waiting. The
    /// request is kept for `within` seconds (the store's busy timeout, which may pass the
    /// statement timeout) and a second more, then PostgreSQL ends it.
    private func askForLock(_ scope: StoreWriteScope, within: TimeInterval) throws -> LockRequest {
        let spare: PostgresSession
        if let open = self.spare, !open.connection.isClosed {
            spare = open
        } else {
            spare = try openSession(statementTimeoutMs: settings.statementTimeoutMs)
            self.spare = spare
        }
        let waitMs = Int(within * 1000) + 1_000
        spare.pipeline("BEGIN")
        spare.pipeline("SET LOCAL statement_timeout = \(waitMs)")
        let answer = spare.pipelineWatching(PostgresStore.locking(scope))
        spare.pipeline("SET LOCAL statement_timeout = DEFAULT")
        let request = LockRequest(spare, scope: scope, answer: answer, deadline: .milliseconds(Int64(waitMs + PostgresStore.answerMarginMs)))
        lockRequest = request
        return request
    }

    /// A lock granted that no write claimed (its requests gave up, or no longer write): let go,
    /// or every other node's writes would wait for it.
    package func releaseUnclaimedLock() {
        guard let request = lockRequest, request.isAnswered else { return }
        lockRequest = nil
        do {
            try request.session.command("ROLLBACK")
        } catch let failure as PostgresFailure where failure.isConnectionLost {
            drop(request.session)
        } catch {}
        request.session.transactionEnded()
    }

    /// Runs `body` in a transaction on `session`, begun already (`begun`: BEGIN and the lock
    /// sent) or begun here: a write waits for its locks, and any it takes later, at most
    /// `lockWithin` seconds (the store's busy timeout; PostgreSQL's `lock_timeout`, 55P03).
    private func run<T>(
        on session: PostgresSession,
        writing: Bool,
        scope: StoreWriteScope,
        begun: Bool,
        lockWithin: TimeInterval = 0,
        _ body: (PostgresSession) throws -> T
    ) throws -> T {
        defer { session.transactionEnded() }
        do {
            if !begun {
                if writing {
                    session.pipeline("BEGIN")
                    session.pipeline(PostgresStore.lockTimeout(lockWithin))
                    session.pipeline(PostgresStore.locking(scope))
                } else {
                    session.pipeline(PostgresSession.beginSnapshot)
                }
            }
            let result = try session.rollingBack { try body(session) }
            if writing {
                // The transaction's ID goes out with the COMMIT (pipelined: no round trip), so
                // that a COMMIT whose answer is lost can be asked about.
                let id = session.pipelineKeepingInteger("SELECT txid_current_if_assigned()")
                do {
                    try session.commit()
                } catch let failure as PostgresFailure where failure.isConnectionLost {
                    // It may have committed all the same: a write reported failed that did
                    // commit would meet its own records on retry as someone else's (EXISTS,
                    // CONFLICT), and its events would never be sent.
                    guard let xid = id.value, committed(xid, after: session) else { throw failure }
                    return result
                }
            } else {
                // A read's end need not be waited for: the next statement comes after it.
                session.pipeline("COMMIT")
            }
            return result
        } catch let failure as PostgresFailure {
            if failure.isConnectionLost { drop(session) }
            throw failure
        }
    }

    /// Forgets a lost connection (the engine's or the spare) and closes it.
    private func drop(_ lost: PostgresSession) {
        if session === lost { session = nil }
        if spare === lost { spare = nil }
        if lockRequest?.session === lost { lockRequest = nil }
        try? lost.connection.close().wait()
    }

    /// Whether transaction `xid`, whose COMMIT went unanswered on `lost`, committed: asked on a
    /// new connection (false when that cannot be asked either: the caller is told to retry).
    private func committed(_ xid: Int64, after lost: PostgresSession) -> Bool {
        drop(lost)
        guard let fresh = try? connected(),
            let rows = try? fresh.query("SELECT txid_status(?)", [xid.databaseValue]),
            case .string(let status)? = rows.first?.first?.storage
        else { return false }
        return status == "committed"
    }

    /// Runs `body` in a savepoint of the open transaction (a nested engine call's write).
    package func savepoint<T>(_ connection: any StoreConnection, _ body: () throws -> T) throws -> T {
        guard let session = connection as? PostgresSession else { preconditionFailure("a savepoint on another driver's connection") }
        try session.command("SAVEPOINT nested")
        let result: T
        do {
            result = try body()
        } catch {
            if let failure = error as? PostgresFailure, failure.isConnectionLost { throw failure }
            try session.command("ROLLBACK TO SAVEPOINT nested")
            try session.command("RELEASE SAVEPOINT nested")
            throw error
        }
        try session.command("RELEASE SAVEPOINT nested")
        return result
    }

    /// What went wrong, in words an operator acts on (never the SQL).
    static func reason(_ failure: PostgresFailure) -> String {
        switch failure.error?.code {
        case .authMechanismRequiresPassword?:
            return
                "password required: PostgreSQL asks for a password and none was given; set PGPASSWORD, a ~/.pgpass line or postgres.passwordFile (the URL's password shows in ps)"
        case .sslUnsupported?:
            return "PostgreSQL does not offer TLS, which the URL requires (sslmode=require)"
        default: break
        }
        if failure.isConnectionLost || failure.sqlState == nil {
            return "PostgreSQL cannot be reached (\(failure.code)); check that it runs and accepts connections"
        }
        switch failure.sqlState ?? "" {
        case "28P01": return "PostgreSQL refused the user or password (\(failure))"
        case "28000" where "\(failure)".contains("no encryption") || "\(failure)".contains("SSL off"):
            return "TLS required: PostgreSQL accepts this user only over TLS; add ?sslmode=require to the URL"
        case "28000": return "PostgreSQL refused the user (\(failure))"
        case "3D000": return "the database does not exist (\(failure)); create it with createdb"
        case "42501": return "permission denied (\(failure))"
        default: return "PostgreSQL failed: \(failure)"
        }
    }

    /// A failure as the caller gets it: `serviceUnavailable`, with `retryAfter` where retrying helps.
    func shareFlowError(_ failure: PostgresFailure) -> ShareFlowError { cause(failure).forOperator() }

    private func cause(_ failure: PostgresFailure) -> ShareFlowError {
        let store = "store \(location.label)"
        Counted.storeError("postgres", cause: failure.isConnectionLost || failure.sqlState == nil ? "unreachable" : failure.sqlState ?? "unknown")
        if failure.isConnectionLost || failure.sqlState == nil {
            return ShareFlowError(
                .serviceUnavailable,
                "\(store) is unreachable (PostgreSQL: \(failure.code)); retry after \(Int(PostgresStore.outageRetryAfter)) s",
                retryAfter: PostgresStore.outageRetryAfter
            )
        }
        switch failure.sqlState ?? "" {
        case "57014":
            return ShareFlowError(
                .serviceUnavailable,
                "\(store) is busy (a statement ran past the statement timeout of \(settings.statementTimeoutMs) ms); retry",
                retryAfter: PostgresStore.outageRetryAfter
            )
        case "55P03":
            return ShareFlowError(
                .serviceUnavailable,
                "\(store) is busy: another writer held what this write writes past the busy timeout (store.busyTimeoutMs); retry",
                retryAfter: 1
            ).asLockWait()
        case "40001", "40P01":
            return ShareFlowError(.serviceUnavailable, "\(store) is busy (\(failure)); retry", retryAfter: 1)
        case "23503":
            return ShareFlowError(
                .unknownItem,
                "\(store) refused a change: an item it refers to no longer exists (it was deleted while the change was being made)"
            )
        case "23505":
            return ShareFlowError(
                .serviceUnavailable,
                "\(store) refused a change: an item of the same name was made while the change was being made; retry to be told why",
                retryAfter: 1
            )
        case let state where state.hasPrefix("53"):
            return ShareFlowError(.serviceUnavailable, "\(store) is out of resources (\(failure)); retry", retryAfter: 30)
        case "42P01", "42703":
            return ShareFlowError(
                .serviceUnavailable,
                "\(store) does not have the schema this shareflow expects (\(failure)); check it with `shareflow store check`"
            )
        default:
            return ShareFlowError(.serviceUnavailable, "\(store) failed: \(failure)")
        }
    }
}

// MARK: Scratch databases (tests)

extension PostgresStore {
    private static let scratch = ScratchDatabases()

    /// A new, empty PostgreSQL store for one test or one Lua test file: a database made from
    /// `template`'s (brought to this binary's schema first, once per process), named after the
    /// template, this process and a counter. `dropScratch` removes it. The cluster's user needs
    /// the CREATEDB right.
    package static func makeScratch(template url: String) throws -> String {
        let template = try PostgresLocation(url)
        try scratch.prepare(template)
        let name = "\(template.database)_\(getpid())_\(scratch.next())"
        try admin(template) { try $0.command("CREATE DATABASE \"\(name)\" TEMPLATE \"\(template.database)\"") }
        return template.url(database: name)
    }

    /// Whether the database at `url` holds a ShareFlow store already, asked without making one
    /// (opening a store makes its schema): `store copy` reads only a store that exists.
    package static func holdsStore(_ url: String) throws -> Bool {
        let location = try PostgresLocation(url)
        let store = PostgresStore(unmigrated: location)
        defer { store.close() }
        do {
            return try !store.connected().query(
                "SELECT 1 FROM pg_tables WHERE schemaname = ? AND tablename = 'shareflow_meta'",
                [PostgresSchema.name.databaseValue]
            ).isEmpty
        } catch let failure as PostgresFailure {
            throw StoreError.cannotOpen(path: location.label, reason: reason(failure))
        }
    }

    /// Drops a database `makeScratch` made (its connections closed first).
    package static func dropScratch(_ url: String) {
        guard let location = try? PostgresLocation(url) else { return }
        try? admin(location) { try $0.command("DROP DATABASE IF EXISTS \"\(location.database)\" WITH (FORCE)") }
    }

    /// Runs `body` on a connection to the cluster's `postgres` database.
    private static func admin(_ location: PostgresLocation, _ body: (PostgresSession) throws -> Void) throws {
        let store = PostgresStore(unmigrated: location.with(database: "postgres"))
        defer { store.close() }
        do {
            try body(try store.connected())
        } catch let failure as PostgresFailure {
            throw StoreError.cannotOpen(path: location.label, reason: reason(failure))
        }
    }

    private convenience init(unmigrated location: PostgresLocation) {
        self.init(location: location, settings: PostgresSettings(), catalogue: .current)
    }

    /// Templates brought to this binary's schema in this process, and the scratch counter.
    private final class ScratchDatabases: @unchecked Sendable {
        private let lock = NSLock()
        private var prepared: Set<String> = []
        private var count = 0

        func next() -> Int {
            lock.withLock {
                count += 1
                return count
            }
        }

        func prepare(_ template: PostgresLocation) throws {
            try lock.withLock {
                guard !prepared.contains(template.label) else { return }
                // Migrated, then closed: a database is copied only while no one is connected to it.
                let store = try PostgresStore(template)
                store.close()
                prepared.insert(template.label)
            }
        }
    }
}

extension PostgresLocation {
    func with(database: String) -> PostgresLocation {
        var copy = self
        copy.database = database
        return copy
    }

    /// This location's URL naming another database (the password kept).
    package func url(database: String) -> String {
        var parts = URLComponents()
        parts.scheme = "postgres"
        parts.user = user
        parts.password = password
        parts.host = host
        parts.port = port
        parts.path = "/" + database
        if requiresTLS { parts.queryItems = [URLQueryItem(name: "sslmode", value: "require")] }
        return parts.string ?? label
    }
}
