import Foundation
import GRDB

/// One thread's own connection to the store, for reads beside the write (SPEC §16 M5;
/// `Store.makeReader`, `Engine.attachReader`). Used by that thread only.
package final class StoreReader: @unchecked Sendable {  // handed to one thread, used by it only
    /// SQLite: the file opened again, read-only.
    let sqlite: DatabaseQueue?
    /// A driver's connection.
    let driver: (any StoreDriverReader)?
    /// The snapshot open on it, which nested reads join.
    var open: StoreTransaction?
    /// The `StoreStatement`s compiled on its SQLite connection.
    let shelf = StatementShelf()

    init(sqlite: DatabaseQueue) {
        self.sqlite = sqlite
        driver = nil
    }

    init(driver: any StoreDriverReader) {
        self.driver = driver
        sqlite = nil
    }

    /// Closes the connection; the reader may not be used after.
    package func close() {
        sqlite?.inDatabase { _ in shelf.empty() }
        try? sqlite?.close()
        driver?.close()
    }
}

/// A driver's connection kept for one reading thread (`StoreDriver.makeReader`).
package protocol StoreDriverReader: AnyObject {
    /// Runs `body` in one read-only snapshot on this connection (opened again if it was lost).
    func read<T>(_ body: (any StoreConnection) throws -> T) throws -> T
    func close()
}
