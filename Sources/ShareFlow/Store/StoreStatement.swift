import GRDB

/// A statement the store runs on every operation of its kind (a one-record read, a share's
/// metadata), made once as a `static let`: on SQLite it is found on its connection by its
/// identity, where GRDB's statement cache hashes the whole text on every call — about 4,400
/// instructions for a one-record read's 700 characters, a sixteenth of the read (issue 48,
/// callgrind). On a driver's store it is its text.
///
/// ```swift
/// static let recordByName = StoreStatement("SELECT … FROM record r WHERE r.zoneID = ? AND r.name = ?")
/// let row = try fetchOne(StoreTransaction.recordByName, [zone, name], table: "record", keyAt: 0, decode)
/// ```
package final class StoreStatement: Sendable {
    package let sql: String

    init(_ sql: String) { self.sql = sql }
}

/// The `StoreStatement`s compiled on one SQLite connection, by identity. Each connection has
/// its own (a statement belongs to the connection that compiled it), kept by what owns the
/// connection (`Store`, `StoreReader`) and touched only inside that connection's serialized
/// access (GRDB's queue), as the connection itself is.
///
/// Emptied before the connection closes: a statement still compiled keeps `sqlite3_close`
/// from closing it (the store's `-wal` and `-shm` would stay behind). A statement whose step
/// failed is dropped, as GRDB drops its own (it may not be reset to its first state).
final class StatementShelf: @unchecked Sendable {  // used inside its connection's serialized access only
    private var statements: [ObjectIdentifier: Statement] = [:]

    /// `statement` compiled on `db`: the one kept, or a new one kept from now on.
    func statement(_ statement: StoreStatement, on db: Database) throws -> Statement {
        let key = ObjectIdentifier(statement)
        if let compiled = statements[key] { return compiled }
        let compiled = try db.makeStatement(sql: statement.sql)
        statements[key] = compiled
        return compiled
    }

    /// Forgets `statement` (its step failed): the next use compiles it again.
    func drop(_ statement: StoreStatement) {
        statements[ObjectIdentifier(statement)] = nil
    }

    /// Finalizes every statement kept: before the connection closes.
    func empty() {
        statements.removeAll()
    }
}
