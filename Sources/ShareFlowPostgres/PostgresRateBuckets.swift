import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import ShareFlow

/// The rate-limit buckets every node of a PostgreSQL store shares (SPEC §16: rate limits shared
/// by all nodes), one row per bucket in `rate_bucket`.
///
/// A take is one statement: the row is refilled by the time passed on PostgreSQL's clock (one
/// clock for every node) and a request taken from it if one is there, under the row's lock. So
/// the nodes together never grant more than one bucket allows: the overshoot SPEC §16 permits
/// (half a bucket) is not used. It runs on a connection of its own, asynchronously, never
/// on the engine's thread nor waiting for a write.
///
/// ```swift
/// let buckets = store.driver?.makeRateBuckets()
/// if let wait = try await buckets?.take("identity 7", requests: 600, perSeconds: 60) { … }  // nil: granted
/// ```
actor PostgresRateBuckets: SharedRateBuckets {
    private let connector: PostgresConnector
    private var connection: PostgresConnection?
    private var opening: Task<PostgresConnection, Error>?
    private var takes = 0
    private let logger: Logger

    init(_ connector: PostgresConnector) {
        self.connector = connector
        var logger = Logger(label: "shareflow.postgres.rate")
        logger.logLevel = .critical
        self.logger = logger
    }

    /// Takes one request from `key`'s shared bucket of `requests` refilled over `perSeconds`:
    /// nil when granted, else the seconds until one is. Throws when PostgreSQL cannot answer
    /// (the caller decides alone then).
    package func take(_ key: String, requests: Int, perSeconds: Double) async throws -> Double? {
        let refill = Double(requests) / perSeconds
        let capacity = Double(requests)
        let query: PostgresQuery = """
            INSERT INTO rate_bucket AS b (key, tokens, at, granted)
            VALUES (\(key), \(capacity) - 1, EXTRACT(EPOCH FROM clock_timestamp())::float8, 1)
            ON CONFLICT (key) DO UPDATE SET
                granted = CASE WHEN LEAST(\(capacity), b.tokens + (excluded.at - b.at) * \(refill)) >= 1 THEN 1 ELSE 0 END,
                tokens = LEAST(\(capacity), b.tokens + (excluded.at - b.at) * \(refill))
                         - CASE WHEN LEAST(\(capacity), b.tokens + (excluded.at - b.at) * \(refill)) >= 1 THEN 1 ELSE 0 END,
                at = excluded.at
            RETURNING tokens, granted
            """
        let rows = try await run(query)
        takes += 1
        if takes % 1000 == 0 { try? await prune(olderThan: perSeconds) }
        guard let (tokens, granted) = try rows.first?.decode((Double, Int64).self) else { return nil }
        return granted == 1 ? nil : max(0, (1 - tokens) / refill)
    }

    /// Forgets buckets untouched for `seconds`: full again, as a missing row reads.
    package func prune(olderThan seconds: Double) async throws {
        _ = try await run("DELETE FROM rate_bucket WHERE at < EXTRACT(EPOCH FROM clock_timestamp())::float8 - \(seconds)")
    }

    /// Runs `query`, once more on a new connection when the connection was lost under it (a
    /// backend ended by an operator, a restart): the caller's wait bounds both.
    private func run(_ query: PostgresQuery) async throws -> [PostgresRow] {
        do {
            return try await runOnce(query)
        } catch {
            guard connection == nil else { throw error }
            return try await runOnce(query)
        }
    }

    /// Runs `query` on this node's rate connection, opened (again) as needed. Takes arriving
    /// while it opens wait for that one opening (the actor lets them in at each `await`).
    private func runOnce(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let connection: PostgresConnection
        if let open = self.connection, !open.isClosed {
            connection = open
        } else {
            self.connection = nil
            let opening = self.opening ?? Task { [connector] in try await connector.connect(id: 2) }
            self.opening = opening
            defer { if self.opening == opening { self.opening = nil } }
            connection = try await opening.value
            self.connection = connection
        }
        do {
            var rows: [PostgresRow] = []
            for try await row in try await connection.query(query, logger: logger) { rows.append(row) }
            return rows
        } catch {
            if connection.isClosed { self.connection = nil }
            throw error
        }
    }

    deinit {
        // PostgresNIO requires a connection closed before it is released: it is kept by the
        // close's callback until the close is done.
        if let connection, !connection.isClosed {
            connection.close().whenComplete { _ in _ = connection }
        }
    }

    package func close() async {
        try? await connection?.close()
        connection = nil
    }
}
