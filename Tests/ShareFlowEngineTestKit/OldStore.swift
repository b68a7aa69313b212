import Foundation
import GRDB
import ShareFlowTestKit

/// A store file as an older ShareFlow left it: `migrator` (`Store.migrator()`) run up to
/// `version`, then `sql` (its rows), in a fresh folder the caller removes.
public func makeOldStore(upTo version: String, migrator: DatabaseMigrator, sql: String) throws -> (dir: URL, path: String) {
    let dir = try makeTemporaryFolder("sf-store")
    let path = dir.appendingPathComponent("old.sqlite").path
    let queue = try DatabaseQueue(path: path)
    try migrator.migrate(queue, upTo: version)
    try queue.write { db in try db.execute(sql: sql) }
    try queue.close()
    return (dir, path)
}
