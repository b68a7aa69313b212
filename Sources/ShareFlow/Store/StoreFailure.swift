import Foundation
import GRDB
import GRDBSQLite

/// A failure of the SQLite store, said as an operator needs it: which store, what happened,
/// whether to retry. Never the SQL (it names tables and columns, nothing a caller can act on).
struct StoreFailure {
    let error: Error
    let path: String?

    init(_ error: Error, path: String?) {
        self.error = error
        self.path = path
    }

    /// What cannot be written, named: the store's file, its folder, or a `-wal`/`-shm` file
    /// beside it. SQLite makes those with the store file's mode, so a read while the file was
    /// read-only leaves them read-only after the file is made writable again, and every write
    /// then fails until they are removed.
    static func readOnlyCause(_ path: String?) -> String {
        guard let path, path != ":memory:" else { return "its file or folder cannot be written" }
        let files = FileManager.default
        if files.fileExists(atPath: path), !files.isWritableFile(atPath: path) { return "its file cannot be written" }
        let folder = PathName.folder(of: path)
        if !files.isWritableFile(atPath: folder.isEmpty ? "." : folder) { return "its folder \(folder.isEmpty ? "." : folder) cannot be written" }
        for suffix in ["-shm", "-wal"] where files.fileExists(atPath: path + suffix) && !files.isWritableFile(atPath: path + suffix) {
            return
                "\(path + suffix) cannot be written: a read made it while the store's file was read-only; remove \(path)-shm and \(path)-wal when no process has the store open"
        }
        return "its file or folder cannot be written"
    }

    /// Seconds a caller should wait before retrying a busy or locked store.
    static let busyRetryAfter = 1.0

    var shareFlowError: ShareFlowError { cause.forOperator() }

    private var cause: ShareFlowError {
        let store = path.map { "store \($0)" } ?? "the store"
        guard let db = error as? DatabaseError else {
            Counted.storeError("sqlite", cause: "other")
            return ShareFlowError(.serviceUnavailable, "\(store) failed: \(error)")
        }
        Counted.storeError("sqlite", cause: String(cString: sqlite3_errstr(db.resultCode.rawValue)))
        switch db.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return ShareFlowError(
                .serviceUnavailable,
                "\(store) is busy (another process holds its write lock); retry after \(Int(StoreFailure.busyRetryAfter)) s",
                retryAfter: StoreFailure.busyRetryAfter
            ).asLockWait()
        case .SQLITE_FULL:
            return ShareFlowError(
                .serviceUnavailable,
                "\(store) is full (no space left on its disk); free space, then retry",
                retryAfter: 30
            )
        case .SQLITE_READONLY:
            return ShareFlowError(.serviceUnavailable, "\(store) is read-only (\(StoreFailure.readOnlyCause(path)))")
        case .SQLITE_IOERR:
            return ShareFlowError(
                .serviceUnavailable,
                "\(store) could not be read or written (I/O error \(db.extendedResultCode.rawValue)); retry",
                retryAfter: 5
            )
        case .SQLITE_CONSTRAINT:
            // The engine checks its rules before it writes: the store refuses a change only when
            // what the change stands on moved meanwhile (a policy calling back into the engine
            // deleted it). Said in ShareFlow's words: SQLite's names tables and columns.
            switch db.extendedResultCode {
            case .SQLITE_CONSTRAINT_FOREIGNKEY:
                return ShareFlowError(
                    .unknownItem,
                    "\(store) refused a change: an item it refers to no longer exists (it was deleted while the change was being made)"
                )
            case .SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT_PRIMARYKEY:
                return ShareFlowError(
                    .serviceUnavailable,
                    "\(store) refused a change: an item of the same name was made while the change was being made; retry to be told why",
                    retryAfter: StoreFailure.busyRetryAfter
                )
            default:
                return ShareFlowError(
                    .serviceUnavailable,
                    "\(store) refused a change: a stored value breaks its schema (check it with `shareflow store check`)"
                )
            }
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return ShareFlowError(
                .serviceUnavailable,
                "\(store) is damaged (SQLite finds its file or schema malformed); check it with `shareflow store check` or restore it from a backup"
            )
        case .SQLITE_ERROR:
            // SQLite's own message names tables and columns ("no such column: p.addedAt").
            return ShareFlowError(
                .serviceUnavailable,
                "\(store) does not have the schema this shareflow expects (a table or column is missing or changed); check it with `shareflow store check`"
            )
        default:
            return ShareFlowError(.serviceUnavailable, "\(store) failed (SQLite error \(db.extendedResultCode.rawValue))")
        }
    }
}

extension ShareFlowError {
    /// Any error as a ShareFlow error: a store failure is `serviceUnavailable`, naming the
    /// store and the cause but never the SQL.
    static func wrap(_ error: Error, store: Store? = nil) -> ShareFlowError {
        if let e = error as? ShareFlowError { return e }
        return StoreFailure(error, path: store?.path).shareFlowError
    }
}
