import Foundation
import GRDB
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// One connection to PostgreSQL, driven from the engine's thread: each statement is sent and
/// waited for there (never on one of NIO's threads), so the engine stays synchronous and its
/// SQL is the same on both stores (`StoreTransaction`). Values cross as SQLite's storage
/// classes (`DatabaseValue`): integers, reals, text, blobs, NULL.
final class PostgresSession: @unchecked Sendable {
    let connection: PostgresConnection
    /// The store's URL without its password, as errors name it.
    let label: String
    private let logger: Logger
    /// Rows changed by this session's statements (`StoreTransaction.changeCount`).
    private(set) var totalChanges = 0
    /// Each statement text as PostgreSQL reads it (`PostgresDialect`), rewritten once.
    private var translated: [String: String] = [:]

    init(connection: PostgresConnection, label: String, logger: Logger) {
        self.connection = connection
        self.label = label
        self.logger = logger
    }

    /// The rows `sql` gives, each as its values.
    func query(_ sql: String, _ values: [DatabaseValue]) throws -> [[DatabaseValue]] {
        let result = try send(sql, values)
        totalChanges += PostgresSession.changes(result.metadata)
        return try result.rows.map { row in try row.map(PostgresSession.value) }
    }

    /// Runs `sql` and says how many rows it changed.
    @discardableResult
    func execute(_ sql: String, _ values: [DatabaseValue] = []) throws -> Int {
        let changed = PostgresSession.changes(try send(sql, values).metadata)
        totalChanges += changed
        return changed
    }

    /// A statement with no parameters, sent as it is (BEGIN, COMMIT, SAVEPOINT…), and waited for.
    func command(_ sql: String) throws {
        let future = connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        try settlePipelined()
        _ = try wait(future, sql: sql)
    }

    /// Sends a statement with no parameters without waiting for it: the connection runs
    /// statements in the order they are sent, so the next statement waited for comes after it,
    /// and a failure of this one is thrown there (`settlePipelined`). A transaction's BEGIN and
    /// its lock go out with its first statement: one round trip, not three.
    func pipeline(_ sql: String) {
        pipelined.append((connection.query(PostgresQuery(unsafeSQL: sql), logger: logger), sql))
    }

    private var pipelined: [(future: EventLoopFuture<PostgresQueryResult>, sql: String)] = []

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

    private func send(_ sql: String, _ values: [DatabaseValue]) throws -> PostgresQueryResult {
        let text: String
        if let known = translated[sql] {
            text = known
        } else {
            text = PostgresDialect.translate(sql)
            translated[sql] = text
        }
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
        let future = connection.query(PostgresQuery(unsafeSQL: text, binds: binds), logger: logger)
        let result = Result { try wait(future, sql: text) }
        // Those sent ahead ran first: their failure (a BEGIN refused) is the one to report.
        try settlePipelined()
        return try result.get()
    }

    private func wait<T: Sendable>(_ future: EventLoopFuture<T>, sql: String) throws -> T {
        do {
            return try future.wait()
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
    let error: PSQLError
    let sql: String

    init(_ error: PSQLError, sql: String) {
        self.error = error
        self.sql = sql
    }

    /// SQLSTATE, for a failure the server reported.
    var sqlState: String? { error.serverInfo?[.sqlState] }

    /// Whether the connection is gone (the server stopped, the network dropped).
    var isConnectionLost: Bool {
        switch error.code {
        case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown: return true
        default: return sqlState.map { $0.hasPrefix("08") || $0 == "57P01" || $0 == "57P02" || $0 == "57P03" } ?? false
        }
    }

    var description: String {
        if let info = error.serverInfo {
            let message = info[.message] ?? "?"
            // The statement only when asked for (SHAREFLOW_DEBUG_SQL=1): it names tables and
            // columns, nothing a caller can act on.
            let statement = ProcessInfo.processInfo.environment["SHAREFLOW_DEBUG_SQL"] == "1" ? " in: \(sql)" : ""
            return "\(message) (SQLSTATE \(info[.sqlState] ?? "?"))\(statement)"
        }
        return "\(error.code)"
    }
}
