import Foundation
import GRDB
import ShareFlow

/// The decision log's own PostgreSQL session (`StoreDecisionLog`, the same log as on SQLite):
/// its statements give up after `StoreDecisionLog.timeoutMs`, and its answer is waited for
/// half a second more (a frozen server).
final class PostgresDecisionConnection: DecisionLogConnection {
    /// How much longer than its timeout a statement's answer is waited for.
    static let answerMarginMs = 500
    private let session: PostgresSession
    private var lost = false

    init(_ connector: PostgresConnector) throws {
        session = try connector.openSession(statementTimeoutMs: StoreDecisionLog.timeoutMs, answerMarginMs: PostgresDecisionConnection.answerMarginMs)
    }

    /// A row insert never waits on the engine's write lock (an advisory lock): `waiting` is
    /// the same either way (the statement timeout bounds a locked table).
    func write<T>(waiting: Bool, _ body: () throws -> T) throws -> T {
        try noting { try session.command("BEGIN") }
        do {
            let result = try body()
            try noting { try session.command("COMMIT") }
            return result
        } catch {
            if !isLost { try? session.command("ROLLBACK") }
            throw error
        }
    }

    func query(_ sql: String, _ values: [DatabaseValue]) throws -> [[DatabaseValue]] {
        try noting { try session.query(sql, values) }
    }

    /// The log's own session: a read is a query like any other.
    func read(_ sql: String, _ values: [DatabaseValue]) throws -> [[DatabaseValue]] {
        try query(sql, values)
    }

    /// Nodes write without a counter PostgreSQL keeps: every read reads.
    func version() throws -> Int64? { nil }

    func execute(_ sql: String, _ values: [DatabaseValue]) throws -> Int {
        try noting { try session.execute(sql, values) }
    }

    var isLost: Bool { lost || session.connection.isClosed }

    func close() { try? session.connection.close().wait() }

    private func noting<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as PostgresFailure {
            if failure.isConnectionLost { lost = true }
            throw failure
        }
    }
}
