import Foundation
import ShareFlow
import ShareFlowPostgres
import ShareFlowTestKit

/// One test body run on each store driver in one `swift test` (GRDB's `Test(test).run { … }`):
/// a new SQLite file, then, when a PostgreSQL cluster is at hand (SHAREFLOW_TEST_POSTGRES, or
/// SHAREFLOW_TEST_CLUSTER, which `make test` sets for the whole suite), a new PostgreSQL
/// database. The body gets the store's location (open it as often as it likes: each opening
/// stands for a process or a node) and the driver's name for its messages.
///
/// ```swift
/// try EachDriver.run { location, driver in
///     let one = try Store.open(location), other = try Store.open(location)
///     …
/// }
/// ```
public enum EachDriver {
    /// The PostgreSQL database new ones are made from, if any.
    public static let postgresTemplate: String? = {
        let environment = ProcessInfo.processInfo.environment
        for key in ["SHAREFLOW_TEST_POSTGRES", "SHAREFLOW_TEST_CLUSTER"] {
            if let url = environment[key], !url.isEmpty { return url }
        }
        return nil
    }()

    public static func run(_ body: (_ location: String, _ driver: String) throws -> Void) throws {
        let dir = try makeTemporaryFolder("sf-each-driver")
        defer { try? FileManager.default.removeItem(at: dir) }
        try body(dir.appendingPathComponent("store.sqlite").path, "sqlite")
        guard let template = postgresTemplate else { return }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        try body(url, "postgres")
    }
}
