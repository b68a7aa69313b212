import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PostgresNIO
import ShareFlow

/// One connection to PostgreSQL, driven from one thread at a time (the engine's, a reading
/// thread's, the decision log's): each statement is sent and waited for there (never on one of
/// NIO's threads), so the engine stays synchronous and its
/// SQL is the same on both stores (`StoreTransaction`). Values cross as SQLite's storage
/// classes (`DatabaseValue`): integers, reals, text, blobs, NULL.
final class PostgresSession: StoreConnection, @unchecked Sendable {
    let connection: PostgresConnection
    /// The store's URL without its password, as errors name it.
    let label: String
    private let logger: Logger
    /// Rows changed by this session's statements (`StoreTransaction.changeCount`).
    package private(set) var totalChanges = 0
    /// Each statement text as PostgreSQL reads it (`PostgresDialect`), rewritten once.
    private var translated: [String: String] = [:]
    /// Prepared statements this connection has run (`PostgresPrepared`), and those whose
    /// preparation failed here: postgres-nio answers every later use of such a name with the
    /// same failure, so they go out unnamed.
    private var preparedHere: Set<String> = []
    private var unprepared: Set<String> = []
    /// Where prepared executions run: the connection's event loop (`EventLoopTaskExecutor`).
    private lazy var executor = EventLoopTaskExecutor(connection.eventLoop)

    /// How long a statement's answer is waited for before the connection is given up:
    /// PostgreSQL's own statement timeout plus a margin, for an answer that never comes
    /// (PostgreSQL stopped or the network cut mid-statement, or a statement sent on a
    /// connection closing at that moment, whose answer postgres-nio never gives). Without it
    /// the engine's thread would wait for ever.
    private let answerWithin: TimeAmount
    /// False while the statement timeout is lifted (`liftStatementTimeout`): no limit then.
    private var answerLimited = true

    /// `answerMarginMs`: what an answer may take beyond the statement timeout (the server's own
    /// timing, the network, a busy machine) before it is taken as never coming.
    init(connection: PostgresConnection, label: String, logger: Logger, statementTimeoutMs: Int, answerMarginMs: Int = 5_000) {
        self.connection = connection
        self.label = label
        self.logger = logger
        answerWithin = .milliseconds(Int64(statementTimeoutMs + answerMarginMs))
    }

    /// Lifts the statement timeout for the rest of this transaction (an operator's pass over
    /// every row: `store check`), and the wait for answers with it.
    package func liftStatementTimeout() throws {
        try execute("SET LOCAL statement_timeout = 0")
        answerLimited = false
    }

    package func lock(_ key: ZoneLockKey) throws {
        try execute("SELECT pg_advisory_xact_lock(\(key.halves.0), \(key.halves.1))")
    }

    package func tryToLock(_ scope: StoreWriteScope) throws -> Bool {
        try query(PostgresStore.locking(scope, ifFree: true), []).first?.first?.storage == .int64(1)
    }

    /// How a read's snapshot begins (the engine's connection's and a reader's).
    static let beginSnapshot = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

    /// Runs `body`, the transaction open on this connection rolled back when it fails. A lost
    /// connection has no transaction left (PostgreSQL rolls it back when it sees the connection
    /// gone): a ROLLBACK on it would only wait.
    func rollingBack<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            if let failure = error as? PostgresFailure, failure.isConnectionLost { throw failure }
            try command("ROLLBACK")
            throw error
        }
    }

    /// The transaction ended: answers are waited for within the limit again.
    func transactionEnded() {
        answerLimited = true
    }

    /// The rows `sql` gives, each as its values.
    package func query(_ sql: String, _ values: [DatabaseValue]) throws -> [[DatabaseValue]] {
        let text = translation(sql)
        if PostgresPrepared.verb(text) == "SELECT", let name = PostgresPrepared.name(for: text, signature: PostgresPrepared.signature(values)),
            !unprepared.contains(name)
        {
            do {
                let rows = try prepared(name, text, values)
                preparedHere.insert(name)
                return rows
            } catch {
                // postgres-nio keeps a failed preparation (a Parse refused in an aborted
                // transaction, say) for the name for as long as the connection lives: that text
                // goes out unnamed on this connection from now on.
                if !preparedHere.contains(name) { unprepared.insert(name) }
                throw error
            }
        }
        let result = try send(text, values)
        totalChanges += PostgresSession.changes(result.metadata)
        return try result.rows.map { row in try row.map(PostgresSession.value) }
    }

    /// Runs `sql` and says how many rows it changed.
    @discardableResult
    package func execute(_ sql: String, _ values: [DatabaseValue] = []) throws -> Int {
        let text = translation(sql)
        // Unnamed: postgres-nio 1.33's prepared statement gives a command tag (the rows changed)
        // only through a call that is a fatal error on every statement (its row stream is
        // never consumed), so only queries are prepared.
        let changed = PostgresSession.changes(try send(text, values).metadata)
        totalChanges += changed
        return changed
    }

    /// `sql` as PostgreSQL reads it (`PostgresDialect`), rewritten once.
    private func translation(_ sql: String) -> String {
        if let known = translated[sql] { return known }
        let text = PostgresDialect.translate(sql)
        translated[sql] = text
        return text
    }

    /// Runs `text` as the statement prepared on this connection under `name` (prepared first
    /// when it is not yet), waiting for its rows as `wait` waits.
    private func prepared(_ name: String, _ text: String, _ values: [DatabaseValue]) throws -> [[DatabaseValue]] {
        // postgres-nio drops a statement written to a closed channel without answering it.
        guard !connection.isClosed else {
            let failure = PostgresFailure(closedFor: text)
            try? settlePipelined()
            throw failure
        }
        let bindings = PostgresSession.bindings(values)
        let answer = PreparedAnswer()
        let (connection, logger) = (self.connection, self.logger)
        let statement = PostgresPrepared.Text(name: name, sql: text)
        Task(executorPreference: executor) {
            do {
                try await PostgresPrepared.$current.withValue(statement) {
                    var out: [[DatabaseValue]] = []
                    for try await row in try await connection.execute(PostgresPrepared.Query(bindings: bindings), logger: logger) {
                        out.append(try row.map(PostgresSession.value))
                    }
                    answer.give(.success(out))
                }
            } catch {
                answer.give(.failure(error))
            }
        }
        let result = answer.wait(within: answerLimited ? answerWithin : nil)
        // Those sent ahead ran first: their failure (a BEGIN refused) is the one to report.
        try settlePipelined()
        guard let result else {
            // Nothing more can be trusted on it: the next use opens a new one.
            let closing: EventLoopFuture<Void> = connection.close()
            _ = closing
            throw PostgresFailure(unansweredAfter: answerWithin, sql: text)
        }
        do {
            return try result.get()
        } catch let error as PSQLError {
            throw PostgresFailure(error, sql: text)
        }
    }

    private static func bindings(_ values: [DatabaseValue]) -> PostgresBindings {
        var binds = PostgresBindings(capacity: values.count)
        for value in values {
            switch value.storage {
            case .null: binds.appendNull()
            case .int64(let n): binds.append(n)
            case .double(let d): binds.append(d)
            case .string(let s): binds.append(s)
            case .blob(let data): binds.append(ByteBuffer(bytes: data))
            }
        }
        return binds
    }

    /// A statement with no parameters, sent as it is (BEGIN, COMMIT, SAVEPOINT…), and waited for.
    func command(_ sql: String) throws {
        let future = sent(PostgresQuery(unsafeSQL: sql), sql: sql)
        try settlePipelined()
        _ = try wait(future, sql: sql)
    }

    /// Sends a statement with no parameters without waiting for it: the connection runs
    /// statements in the order they are sent, so the next statement waited for comes after it,
    /// and a failure of this one is thrown there (`settlePipelined`). A transaction's BEGIN and
    /// its lock go out with its first statement: one round trip, not three.
    func pipeline(_ sql: String) {
        pipelined.append((sent(PostgresQuery(unsafeSQL: sql), sql: sql), sql))
    }

    private var pipelined: [(future: EventLoopFuture<PostgresQueryResult>, sql: String)] = []

    /// As `pipeline`, giving the statement's answer to be told when it comes (a lock asked for).
    func pipelineWatching(_ sql: String) -> EventLoopFuture<PostgresQueryResult> {
        let future = sent(PostgresQuery(unsafeSQL: sql), sql: sql)
        pipelined.append((future, sql))
        return future
    }

    /// The first column of the first row of a statement sent ahead, once answered.
    final class Kept: Sendable {
        private let box = NIOLockedValueBox<Int64?>(nil)
        var value: Int64? { box.withLockedValue { $0 } }
        fileprivate func set(_ n: Int64) { box.withLockedValue { $0 = n } }
    }

    /// As `pipeline`, keeping the integer it answers (nil until answered, or if NULL).
    func pipelineKeepingInteger(_ sql: String) -> Kept {
        let kept = Kept()
        let future = sent(PostgresQuery(unsafeSQL: sql), sql: sql)
        future.whenSuccess { result in
            if let row = result.rows.first, let cell = row.first, case .int64(let n)? = (try? PostgresSession.value(cell))?.storage {
                kept.set(n)
            }
        }
        pipelined.append((future, sql))
        return kept
    }

    /// For tests: the next COMMIT is carried out but its answer dropped, as a connection
    /// lost at that moment would (`PostgresStoreTests`).
    nonisolated(unsafe) static var dropNextCommitAnswer = false

    /// COMMIT, waited for.
    func commit() throws {
        try command("COMMIT")
        if PostgresSession.dropNextCommitAnswer {
            PostgresSession.dropNextCommitAnswer = false
            let closing: EventLoopFuture<Void> = connection.close()
            _ = closing
            throw PostgresFailure(unansweredAfter: answerWithin, sql: "COMMIT")
        }
    }

    /// Waits for the statements sent ahead (done already when a later one is), throwing the
    /// first failure.
    private func settlePipelined() throws {
        guard !pipelined.isEmpty else { return }
        let ahead = pipelined
        pipelined.removeAll()
        var failure: Error?
        for (future, sql) in ahead {
            do { _ = try wait(future, sql: sql) } catch { if failure == nil { failure = error } }
        }
        if let failure { throw failure }
    }

    /// Sends `text` (translated already) unnamed, and waits for it.
    private func send(_ text: String, _ values: [DatabaseValue]) throws -> PostgresQueryResult {
        let future = sent(PostgresQuery(unsafeSQL: text, binds: PostgresSession.bindings(values)), sql: text)
        let result = Result { try wait(future, sql: text) }
        // Those sent ahead ran first: their failure (a BEGIN refused) is the one to report.
        try settlePipelined()
        return try result.get()
    }

    /// `query` sent, or failed at once on a closed connection: postgres-nio drops a statement
    /// written to a closed channel without ever answering it.
    private func sent(_ query: PostgresQuery, sql: String) -> EventLoopFuture<PostgresQueryResult> {
        guard !connection.isClosed else { return connection.eventLoop.makeFailedFuture(PostgresFailure(closedFor: sql)) }
        return connection.query(query, logger: logger)
    }

    private func wait<T: Sendable>(_ future: EventLoopFuture<T>, sql: String) throws -> T {
        let answer: EventLoopFuture<T>
        var timer: Scheduled<Void>?
        if answerLimited {
            // A second promise, failed by a timer if the first has not answered: a promise
            // completed twice keeps its first result.
            let limited = future.eventLoop.makePromise(of: T.self)
            future.cascade(to: limited)
            let connection = self.connection
            let limit = answerWithin
            timer = future.eventLoop.scheduleTask(in: limit) {
                limited.fail(PostgresFailure(unansweredAfter: limit, sql: sql))
                // Nothing more can be trusted on it: the next use opens a new one.
                let closing: EventLoopFuture<Void> = connection.close()
                _ = closing
            }
            answer = limited.futureResult
        } else {
            answer = future
        }
        defer { timer?.cancel() }
        do {
            return try answer.wait()
        } catch let error as PSQLError {
            throw PostgresFailure(error, sql: sql)
        }
    }

    private static func changes(_ metadata: PostgresQueryMetadata) -> Int {
        switch metadata.command {
        case "INSERT", "UPDATE", "DELETE", "MERGE": return metadata.rows ?? 0
        default: return 0
        }
    }

    /// A cell as SQLite's storage classes: integers (and booleans, as 0 and 1), reals, text,
    /// bytes; a number PostgreSQL sums as NUMERIC is an integer where it is whole.
    static func value(_ cell: PostgresCell) throws -> DatabaseValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int8, .int4, .int2: return try cell.decode(Int64.self).databaseValue
        case .bool: return (try cell.decode(Bool.self) ? 1 : 0).databaseValue
        case .float8, .float4: return try cell.decode(Double.self).databaseValue
        case .bytea: return Data(try cell.decode([UInt8].self)).databaseValue
        case .numeric:
            let text = try cell.decode(String.self)
            if let n = Int64(text) { return n.databaseValue }
            return (Double(text) ?? .nan).databaseValue
        default: return try cell.decode(String.self).databaseValue
        }
    }
}

/// A PostgreSQL failure as the store reports it (`PostgresStore.shareFlowError`).
struct PostgresFailure: Error, CustomStringConvertible {
    /// postgres-nio's error; nil when the connection was lost on this side (`lost`).
    let error: PSQLError?
    let sql: String
    /// How the connection was found lost, when postgres-nio did not say.
    let lost: Lost?

    enum Lost {
        /// No answer came within this long; the connection was closed.
        case unanswered(TimeAmount)
        /// The connection had closed before the statement was sent.
        case closed
    }

    init(_ error: PSQLError, sql: String) {
        self.error = error
        self.sql = sql
        lost = nil
    }

    init(unansweredAfter wait: TimeAmount, sql: String) {
        error = nil
        self.sql = sql
        lost = .unanswered(wait)
    }

    init(closedFor sql: String) {
        error = nil
        self.sql = sql
        lost = .closed
    }

    /// SQLSTATE, for a failure the server reported.
    var sqlState: String? { error?.serverInfo?[.sqlState] }

    /// postgres-nio's name for the failure, or how the connection was lost.
    var code: String {
        switch lost {
        case .unanswered(let wait): return "no answer within \(wait.nanoseconds / 1_000_000) ms"
        case .closed: return "connection closed"
        case nil: return error.map { "\($0.code)" } ?? "unknown"
        }
    }

    /// Whether the connection is gone (the server stopped, the network dropped, no answer came).
    var isConnectionLost: Bool {
        guard let error else { return true }
        switch error.code {
        case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown: return true
        default: return sqlState.map { $0.hasPrefix("08") || $0 == "57P01" || $0 == "57P02" || $0 == "57P03" } ?? false
        }
    }

    var description: String {
        if let info = error?.serverInfo {
            let message = info[.message] ?? "?"
            // The statement only when asked for (SHAREFLOW_DEBUG_SQL=1): it names tables and
            // columns, nothing a caller can act on.
            let statement = ProcessInfo.processInfo.environment["SHAREFLOW_DEBUG_SQL"] == "1" ? " in: \(sql)" : ""
            return "\(message) (SQLSTATE \(info[.sqlState] ?? "?"))\(statement)"
        }
        return code
    }
}
