import Foundation
import ShareFlow
import ShareFlowPostgres

/// The store an engine test runs on: a new in-memory SQLite store, or, when
/// SHAREFLOW_TEST_POSTGRES names a PostgreSQL database, a new database made from it (SPEC §16:
/// the engine's whole suite runs on both stores; `make test` runs it twice).
public enum TestStore {
    /// The PostgreSQL database the scratch stores are made from, if the suite runs on PostgreSQL.
    public static let postgresTemplate: String? = {
        guard let url = ProcessInfo.processInfo.environment["SHAREFLOW_TEST_POSTGRES"], !url.isEmpty else { return nil }
        return url
    }()

    public static var isPostgres: Bool { postgresTemplate != nil }

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
