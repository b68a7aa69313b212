import Foundation
import ShareFlow
import ShareFlowPostgres
import XCTest

/// The store an engine test runs on: a new in-memory SQLite store, or, in the PostgreSQL pass
/// (a test case's twin in `Tests/ShareFlowTests/OnPostgreSQL.swift`, SPEC §16 M6: every store
/// test on both drivers in one `swift test`), a new database made from the cluster's.
public enum TestStore {
    private static let passLock = NSLock()
    nonisolated(unsafe) private static var onPostgres = false

    /// The PostgreSQL database scratch stores are made from, when a cluster is at hand
    /// (SHAREFLOW_TEST_POSTGRES, or SHAREFLOW_TEST_CLUSTER, which `make test` sets).
    public static let clusterTemplate: String? = EachDriver.postgresTemplate

    /// The template in the PostgreSQL pass; nil in the SQLite pass.
    public static var postgresTemplate: String? {
        passLock.withLock { onPostgres } ? clusterTemplate : nil
    }

    public static var isPostgres: Bool { postgresTemplate != nil }

    /// Begins a test's PostgreSQL pass (a twin's `setUp`); skips the test with no cluster.
    public static func enterPostgresPass() throws {
        guard clusterTemplate != nil else { throw XCTSkip("the PostgreSQL pass needs a cluster (SHAREFLOW_TEST_CLUSTER or SHAREFLOW_TEST_POSTGRES)") }
        passLock.withLock { onPostgres = true }
    }

    /// Ends it (a twin's `tearDown`).
    public static func leavePostgresPass() {
        passLock.withLock { onPostgres = false }
    }

    public static func make() throws -> Store {
        guard let template = postgresTemplate else { return try Store(path: ":memory:") }
        return try Store.open(PostgresStore.makeScratch(template: template))
    }

    /// The seeds a property test runs: all of them on SQLite; on PostgreSQL the first, since
    /// each of the suite's many statements is a round trip there and the debug build's
    /// networking is slow (the same steps, fewer random runs; SQLite's pass runs them all).
    public static func seeds<T>(_ all: [T]) -> [T] {
        isPostgres ? Array(all.prefix(1)) : all
    }

    /// A property test's number of steps per seed: a third on PostgreSQL (see `seeds`).
    public static func steps(_ n: Int) -> Int {
        isPostgres ? max(1, n / 3) : n
    }
}
