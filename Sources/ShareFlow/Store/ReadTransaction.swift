import GRDB
import GRDBSQLite

/// A read's BEGIN, COMMIT and ROLLBACK on SQLite (`Store.read`): the connection's cached
/// statements, stepped as SQLite's own. GRDB's `inTransaction` parsed both on every read and ran
/// them through its observation and transaction-date bookkeeping, together a sixth of a
/// one-record read (issue 48, callgrind); nothing in ShareFlow observes transactions or asks
/// their date, and whether a transaction is open is SQLite's own answer
/// (`Database.isInsideTransaction`), which GRDB's precondition checks when the access ends.
enum ReadTransaction {
    /// Runs `body` in one read transaction on `db`, committed when it returns and rolled back
    /// when it throws. A read that changed rows is undone and is an error (what GRDB's
    /// `PRAGMA query_only` guarded, whose toggles expired every cached statement); so is a read
    /// whose transaction SQLite ended before it did (`commit`).
    static func run<T>(_ db: Database, path: String, _ body: () throws -> T) throws -> T {
        let changes = db.totalChangesCount
        let result: T
        try begin(db)
        do {
            result = try body()
        } catch {
            rollback(db)
            throw error
        }
        guard db.totalChangesCount == changes else {
            rollback(db)
            throw ShareFlowError(.serviceUnavailable, "store \(path): a read changed rows; it was undone (a ShareFlow bug: please report it)")
                .forOperator()
        }
        let committed: Bool
        do { committed = try commit(db) } catch {
            rollback(db)
            throw error
        }
        guard committed else {
            throw ShareFlowError(
                .serviceUnavailable,
                "store \(path): a read's transaction ended before the read did (SQLite rolled it back after an error); it was not answered: retry",
                retryAfter: StoreFailure.busyRetryAfter
            ).forOperator()
        }
        return result
    }

    static func begin(_ db: Database) throws { try step(db, "BEGIN DEFERRED TRANSACTION") }

    /// Commits the read; false when SQLite had ended its transaction before the read did (some
    /// errors roll one back, and a caller may have caught the error and read on): what was read
    /// after it came from other moments, and the read must not be answered.
    static func commit(_ db: Database) throws -> Bool {
        guard db.isInsideTransaction else { return false }
        try step(db, "COMMIT TRANSACTION")
        return true
    }

    /// Ends the read's transaction, if SQLite has not already.
    static func rollback(_ db: Database) {
        guard db.isInsideTransaction else { return }
        try? step(db, "ROLLBACK TRANSACTION")
    }

    private static func step(_ db: Database, _ sql: String) throws {
        let statement = try db.cachedStatement(sql: sql).sqliteStatement
        sqlite3_reset(statement)
        let code = sqlite3_step(statement)
        let message = code == SQLITE_DONE ? nil : String(cString: sqlite3_errmsg(db.sqliteConnection))
        sqlite3_reset(statement)
        guard code == SQLITE_DONE else { throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql) }
    }
}
