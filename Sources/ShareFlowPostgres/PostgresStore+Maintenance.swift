import Foundation
import GRDB
import ShareFlow

/// What `store info`, `store check` and `store copy` ask of a PostgreSQL store.
extension PostgresStore {
    package func info(_ tx: StoreTransaction) throws -> (schemaVersion: Int, bytes: Int64) {
        let version = try tx.fetchInteger("SELECT CAST(value AS BIGINT) FROM shareflow_meta WHERE key = 'schemaVersion'") ?? 0
        let bytes =
            try tx.fetchInteger(
                """
                SELECT CAST(COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS BIGINT) FROM pg_class c
                JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '\(PostgresSchema.name)' AND c.relkind = 'r'
                """
            ) ?? 0
        return (Int(version), bytes)
    }

    /// PostgreSQL keeps its own pages and foreign keys whole; what is checked here is that the
    /// schema has every table and column ShareFlow reads, and nothing ShareFlow did not make.
    package func schemaProblems(
        _ tx: StoreTransaction,
        reads: [(table: String, columns: [String])]
    ) throws -> (tables: Set<String>, problems: [String]) {
        var columns: [String: Set<String>] = [:]
        for row in try tx.rows("SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = ?", [PostgresSchema.name]) {
            if case .string(let t) = row[0].storage, case .string(let c) = row[1].storage { columns[t, default: []].insert(c) }
        }
        var problems = try PostgresSchema.foreignObjects(tx, catalogue) + PostgresSchema.missingObjects(tx, catalogue)
        for (table, wanted) in reads {
            guard let have = columns[table] else {
                problems.append("table \(table) is missing")
                continue
            }
            for column in wanted where !have.contains(column.lowercased()) {
                problems.append("table \(table) lacks column \(column)")
            }
        }
        return (Set(columns.keys), problems)
    }

    package func foreignObjects(_ tx: StoreTransaction) throws -> [String] {
        try PostgresSchema.foreignObjects(tx, catalogue)
    }

    /// The planner's statistics of tables just filled (without them it takes a large table for
    /// an empty one and scans it whole: a copy's first requests ran at a tenth of their speed
    /// until autovacuum came by), and identities that go on after the highest copied ID.
    package func finishCopy(_ tx: StoreTransaction, madeIDs tables: [String]) throws {
        _ = try tx.rows("ANALYZE")
        for table in tables {
            _ = try tx.rows(
                """
                SELECT setval(pg_get_serial_sequence('\(PostgresSchema.name).\(table)', 'id'),
                              COALESCE((SELECT MAX(id) FROM \(table)), 1), (SELECT MAX(id) FROM \(table)) IS NOT NULL)
                """
            )
        }
    }
}

extension Store {
    /// Opens the store at `location`: a `postgres://USER[:PASSWORD]@HOST[:PORT]/DB` URL opens a
    /// PostgreSQL store (SPEC §16) with `settings`; anything else is an SQLite file (or
    /// `:memory:`), waiting `busyTimeout` for another process's write lock.
    ///
    /// ```swift
    /// let store = try Store.open("postgres://shareflow@db.internal/shareflow")
    /// ```
    package static func open(
        _ location: String,
        busyTimeout: TimeInterval = Store.defaultBusyTimeout,
        postgres settings: PostgresSettings = PostgresSettings(),
        catalogue: StoreCatalogue = .current
    ) throws -> Store {
        guard PostgresLocation.isURL(location) else { return try Store(path: location, busyTimeout: busyTimeout, catalogue: catalogue) }
        return Store(driver: try PostgresStore(PostgresLocation(location), settings: settings, catalogue: catalogue), busyTimeout: busyTimeout)
    }
}
