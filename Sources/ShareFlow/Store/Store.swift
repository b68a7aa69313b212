import Foundation
import GRDB
import GRDBSQLite

/// The database behind an engine: its own SQLite file (WAL journal, schema managed by
/// migrations), or a driver's database (`StoreDriver`: PostgreSQL, SPEC §16).
///
/// ```swift
/// let store = try Store(path: ".shareflow/store.sqlite")   // or ":memory:"
/// let cluster = Store(driver: try PostgresStore(PostgresLocation(url)))
/// ```
///
/// A file that is not a ShareFlow store, or was written by a newer ShareFlow, is refused
/// before anything is written to it.
public final class Store: @unchecked Sendable {
    /// How long a write waits for another process's write lock by default (SPEC §16 M5:
    /// `store.busyTimeoutMs`, 5,000).
    public static let defaultBusyTimeout: TimeInterval = 5

    /// The schema this binary writes (`StoreCatalogue.current`'s version, on both drivers).
    public static let schemaVersion = StoreCatalogue.current.version
    package static let formatName = "shareflow"

    /// The SQLite file, `:memory:`, or the driver's label (a URL without its password).
    public let path: String
    /// Opened read-only: the file or its folder is not writable (SPEC §11).
    public let isReadOnly: Bool
    /// The SQLite store's connection; nil on a driver's.
    let sqliteQueue: DatabaseQueue?
    /// The `StoreStatement`s compiled on `sqliteQueue`'s connection.
    let shelf = StatementShelf()
    /// The driver's database (SPEC §16 M6); nil on SQLite.
    package let driver: (any StoreDriver)?
    /// Where an SQLite store keeps assets' bytes (SPEC §19 A4): `<store>.assets/` beside its
    /// file, a folder of the process's own for a store in memory (removed with the store); nil
    /// on a driver's, which keeps them in its database (`Engine.assets`).
    package let fileAssets: AssetBlobs?
    /// The folder of a store in memory's assets, removed when the store is.
    private let privateAssetFolder: URL?
    /// The schema the store was brought to: `StoreCatalogue.current`, or a test's.
    package let catalogue: StoreCatalogue
    /// What a reader of an SQLite file opens (`makeReader`); nil in memory or on a driver.
    private let readerPath: String?
    /// The decision log in an SQLite file's table `decision`; nil in memory, read-only or on
    /// a driver (`decisionLog`).
    private let sqliteDecisions: StoreDecisionLog?
    /// The policy decision log every process on the store shares (SPEC §18 P3): the table
    /// `decision`, through a connection of the log's own; nil where each process keeps its own
    /// (a store in memory, or one opened read-only).
    package var decisionLog: (any SharedDecisionLog)? { driver?.decisionLog ?? sqliteDecisions }
    /// The driver's transaction in progress (as `current` is SQLite's).
    private var currentConnection: (any StoreConnection)?
    /// Called on the writing thread after a write transaction that changed rows has committed
    /// (`serve` wakes its change streams; a driver's other processes hear of it through
    /// `StoreDriver.listenForCommits`).
    package var committed: (() -> Void)?
    /// The SQLite connection, for what only an SQLite store has (its file, its pages); every
    /// public entry point reaching it checks `requireSQLite` first.
    var queue: DatabaseQueue {
        guard let sqliteQueue else { preconditionFailure("store \(path) is not an SQLite file: this needs an SQLite store") }
        return sqliteQueue
    }
    /// Whether the store is a driver's (PostgreSQL) rather than an SQLite file.
    public var isPostgres: Bool { driver != nil }
    /// The database's name in metrics' labels: `sqlite`, or the driver's.
    package var kind: String { driver?.name ?? "sqlite" }
    /// Whether writers of several processes run at once, each holding what it writes (a
    /// driver's store): only then is a write's scope worth finding out before it begins
    /// (`StoreWriteScope`). SQLite runs one writer at a time.
    package var writersRunAtOnce: Bool { driver != nil }

    /// Fails, naming what, where only an SQLite store can do it.
    func requireSQLite(_ what: String) throws {
        guard driver == nil else {
            throw ShareFlowError(.invalidArguments, "\(what) works on an SQLite store; \(path) is on PostgreSQL")
        }
    }
    /// The connection of the write in progress, so nested engine calls (an observer or
    /// policy that reads the directory) join it instead of deadlocking. Guarded by the
    /// engine's lock.
    private var current: Database?
    /// The open write transaction's moved feeds (`FeedBumps`).
    private var feedBumps = FeedBumps()
    /// A write noted changes for subscriptions (`takeOutboxWritten`).
    private var outboxWritten = false
    /// Whether `current` is a write transaction.
    private var writing = false
    /// How long a write waits for another process's write lock (`store.busyTimeoutMs`).
    public let busyTimeout: TimeInterval
    /// How the outermost write of the work in progress waits for another process's write lock
    /// (SPEC §16 M5). A server sets `deferFirst` for each request it runs: the request's first
    /// write, finding the lock held past `lockGrace`, fails with `StoreBusy` instead of waiting
    /// on the engine's thread (every other caller behind it), and the server runs the whole
    /// request again later. Nothing was written (the lock is taken before a transaction's first
    /// statement), no event sent, no policy asked (they are asked inside the write). From then
    /// on (`deferred`) every write of that attempt fails at once too, so the attempt writes
    /// nothing at all. A write that committed ends deferring: the request's later writes wait
    /// in place, as every write of a command or script does (`inPlace`).
    /// How long a request's first write waits in place for the lock before it is deferred:
    /// another process's short write passes within it, and the request goes on without being
    /// run again (the usual case under contention). Not given again while writes are being
    /// deferred (`lastDeferral`), so a lock held long costs the engine's thread nothing more.
    package static let lockGrace: TimeInterval = 0.05
    /// When a write was last deferred (the monotonic clock, seconds).
    private var lastDeferral: TimeInterval?

    /// The grace a deferrable write gets now.
    private var grace: TimeInterval {
        guard let lastDeferral else { return Store.lockGrace }
        return ProcessInfo.processInfo.systemUptime - lastDeferral < max(busyTimeout, 1) ? 0 : Store.lockGrace
    }

    /// Each thread's own: a server's engine thread defers its requests' writes while its
    /// reading threads' writes (an observer's) wait in place.
    package var writeWait: WriteWait {
        get { threadWait?.wait ?? .inPlace }
        set {
            if newValue == .inPlace {
                Thread.current.threadDictionary.removeObject(forKey: waitKey)
                return
            }
            let state = threadWait ?? ThreadWait()
            state.wait = newValue
            if newValue != .deferred { state.deferredBy = nil }
            Thread.current.threadDictionary[waitKey] = state
        }
    }
    /// Why the work in progress was deferred: its write's `StoreBusy`.
    package var deferredBy: StoreBusy? { threadWait?.deferredBy }

    private func deferred(by busy: StoreBusy) {
        writeWait = .deferred
        threadWait?.deferredBy = busy
        lastDeferral = ProcessInfo.processInfo.systemUptime
    }

    /// One thread's `writeWait` and `deferredBy`.
    private final class ThreadWait {
        var wait = WriteWait.inPlace
        var deferredBy: StoreBusy?
    }
    private var threadWait: ThreadWait? { Thread.current.threadDictionary[waitKey] as? ThreadWait }
    /// The key of this store's `ThreadWait` in each thread's dictionary.
    private let waitKey = "shareflow.store.wait.\(UUID().uuidString)"

    /// Lets go of a write lock a driver was granted for a deferred write no one claimed.
    package func releaseUnclaimedLock() {
        driver?.releaseUnclaimedLock()
    }

    package enum WriteWait: Sendable {
        case inPlace
        case deferFirst
        case deferred
    }

    /// False only in `shareflow bench`'s baseline stores: saves and accepts there log no
    /// change, so the same workload on a store that logs tells what the log costs (SPEC
    /// §14). A store that does not log has feeds that are wrong: never a user's.
    package var logsChanges = true

    /// `busyTimeout`: how long a write waits for another process's write lock before failing
    /// with `serviceUnavailable`.
    ///
    /// A database URL (`postgres://…`) is refused here: it opens through its driver
    /// (`Store(driver:)`; ShareFlowPostgres' `Store.open` takes either).
    public convenience init(path: String, busyTimeout: TimeInterval = Store.defaultBusyTimeout) throws {
        try self.init(path: path, busyTimeout: busyTimeout, catalogue: .current)
    }

    /// A store of `catalogue`'s schema (a test's own, with a column added).
    package init(path: String, busyTimeout: TimeInterval = Store.defaultBusyTimeout, catalogue: StoreCatalogue) throws {
        SQLiteConfiguration.setBeforeFirstUse()
        guard !Store.isDatabaseURL(path) else {
            let scheme = path.prefix { $0 != ":" }
            throw StoreError.cannotOpen(
                path: Store.redactedURL(path),
                reason: "it is a database URL (\(scheme)://), and this program has no driver for \(scheme)"
            )
        }
        driver = nil
        self.catalogue = catalogue
        self.path = path
        self.busyTimeout = busyTimeout
        if path != ":memory:" {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch {
                throw StoreError.cannotOpen(path: path, reason: "its folder \(folder.path) cannot be made (\(Store.reason(error)))")
            }
        }
        // A store in a read-only place (the file or its folder not writable) opens read-only:
        // reads work, a write fails as serviceUnavailable naming the store.
        let folderPath = path == ":memory:" ? "" : URL(fileURLWithPath: path).deletingLastPathComponent().path
        isReadOnly =
            path != ":memory:" && FileManager.default.fileExists(atPath: path)
            && (!FileManager.default.isWritableFile(atPath: path) || !FileManager.default.isWritableFile(atPath: folderPath))
        // SQLite reads a WAL store through its -shm file; where that cannot be made (a
        // read-only folder) the store is opened as immutable: the file as it is, which a clean
        // exit leaves whole.
        let sqlitePath =
            isReadOnly && !FileManager.default.isWritableFile(atPath: folderPath)
                && !FileManager.default.fileExists(atPath: path + "-shm")
            ? Store.immutableURI(path) : path
        readerPath = path == ":memory:" ? nil : sqlitePath
        // The folder's path joined as text: URL.appendingPathComponent's first use in a process
        // instantiates a Set<UInt8> (its path-character set), whose conformance look-up scans
        // every conformance of the binary: 0.6M instructions, 2% of a cold start (issue 48).
        privateAssetFolder =
            path == ":memory:"
            ? URL(fileURLWithPath: PathName.temporaryFolder + "shareflow-memory-assets-\(UUID().uuidString)", isDirectory: true) : nil
        fileAssets = AssetBlobs(folder: privateAssetFolder ?? URL(fileURLWithPath: path + ".assets"))
        sqliteDecisions =
            path == ":memory:" || isReadOnly
            ? nil
            : StoreDecisionLog(label: path) { try SQLiteDecisionConnection(path: sqlitePath) }
        var config = Configuration()
        config.readonly = isReadOnly
        // WAL, set here rather than by GRDB's `.wal`, whose set-up writes to the store at every
        // open (it makes and drops a table when the -wal file is empty, as after a clean exit):
        // a reader must not need the write lock, nor change the file, to start.
        config.journalMode = .default
        config.busyMode = .timeout(busyTimeout)
        config.foreignKeysEnabled = true
        config.label = "shareflow.store"
        let inMemory = path == ":memory:" || isReadOnly
        config.prepareDatabase { db in
            // In WAL mode, NORMAL survives a killed process (only power loss can drop the last
            // commits), and spares an fsync per item.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // Savepoint journals in memory: a policy's nested saves (a savepoint each) write the
            // same few pages at every level (a zone's change counter, a feed's), and a journal
            // spilled to a temporary file made each level a file write.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            if !inMemory, try String.fetchOne(db, sql: "PRAGMA journal_mode") != "wal" {
                guard try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") == "wal" else {
                    throw DatabaseError(resultCode: .SQLITE_ERROR, message: "its journal cannot be switched to write-ahead logging")
                }
            }
        }
        // Several processes may open one new store at once: one makes it (the schema is
        // created in one migration transaction) while the others see it half-made — busy, a
        // table that already exists, the migrations table alone. Those pass within a moment;
        // retry until the store is whole or the busy timeout is spent.
        let deadline = Date().addingTimeInterval(max(busyTimeout, 1))
        var attempt = 0
        while true {
            attempt += 1
            do {
                if path != ":memory:" { try Store.checkForeignFile(at: path, sqlitePath: sqlitePath, catalogue: catalogue) }
                let migrator = Store.migrator(catalogue)
                if path == ":memory:" {
                    // A new in-memory store: the schema the migrations leave, made at once
                    // (another catalogue's, migrated).
                    let queue = try DatabaseQueue(configuration: config)
                    if catalogue.version == StoreCatalogue.current.version {
                        try queue.writeWithoutTransaction { try Store.loadFreshImage(into: $0) }
                    } else {
                        try migrator.migrate(queue)
                    }
                    self.sqliteQueue = queue
                    return
                }
                let queue = try DatabaseQueue(path: sqlitePath, configuration: config)
                // Migrating takes the write lock: only when the schema is behind.
                if try !queue.read({ try migrator.hasCompletedMigrations($0) }) {
                    guard !isReadOnly else {
                        throw StoreError.cannotOpen(path: path, reason: "it is read-only and its schema needs upgrading by this shareflow")
                    }
                    try migrator.migrate(queue)
                }
                self.sqliteQueue = queue
                return
            } catch let error as DatabaseError where Store.isTransientOpenFailure(error) && Date() < deadline {
                Counted.storeRetry("sqlite", reason: "open")
                usleep(UInt32(min(5_000 * attempt, 50_000)))
            } catch let error as DatabaseError {
                throw StoreError.cannotOpen(path: path, reason: Store.reason(error))
            }
        }
    }

    /// A store in a driver's database: nothing is opened here (the driver did).
    package init(driver: any StoreDriver, busyTimeout: TimeInterval = Store.defaultBusyTimeout) {
        self.driver = driver
        self.busyTimeout = busyTimeout
        catalogue = driver.catalogue
        path = driver.label
        isReadOnly = false
        sqliteQueue = nil
        readerPath = nil
        sqliteDecisions = nil
        privateAssetFolder = nil
        fileAssets = nil
    }

    deinit {
        if let privateAssetFolder { try? FileManager.default.removeItem(at: privateAssetFolder) }
    }

    /// Whether `location` is a database URL (`scheme://…`) rather than an SQLite file.
    package static func isDatabaseURL(_ location: String) -> Bool {
        guard let colon = location.range(of: "://") else { return false }
        let scheme = location[..<colon.lowerBound]
        return !scheme.isEmpty && scheme.allSatisfy { $0.isLetter || $0 == "+" || $0 == "-" || $0 == "." }
    }

    /// A database URL as messages show it: never its password.
    package static func redactedURL(_ url: String) -> String {
        guard var parts = URLComponents(string: url) else { return "a database URL" }
        if parts.password != nil { parts.password = "***" }
        return parts.string ?? "a database URL"
    }

    /// `path` as an SQLite URI opening it immutable (SQLite here takes `file:` names as URIs).
    static func immutableURI(_ path: String) -> String { sqliteURI(path, "immutable=1") }

    /// `path` as an SQLite URI with `query` (`mode=rw`: opened, never made).
    static func sqliteURI(_ path: String, _ query: String) -> String {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        return "file:" + (absolute.addingPercentEncoding(withAllowedCharacters: allowed) ?? absolute) + "?" + query
    }

    /// Failures another process opening or migrating the same store causes for a moment: the
    /// lock, or a migration step it applied between our check and ours ("already exists",
    /// "duplicate column"). Each migration commits whole, so a retry finds it applied.
    private static func isTransientOpenFailure(_ error: DatabaseError) -> Bool {
        switch error.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_ERROR: return true
        default: return false
        }
    }

    /// What went wrong, in words, without SQL.
    static func reason(_ error: Error) -> String {
        if let db = error as? DatabaseError {
            switch db.resultCode {
            case .SQLITE_CANTOPEN: return "it cannot be opened: the file or its folder is missing or not accessible"
            case .SQLITE_READONLY: return "it is read-only"
            case .SQLITE_PERM: return "permission denied"
            case .SQLITE_BUSY, .SQLITE_LOCKED: return "another process holds it locked"
            case .SQLITE_FULL: return "the disk is full"
            case .SQLITE_CORRUPT, .SQLITE_NOTADB:
                return "it is damaged (SQLite finds its file or schema malformed); check it with `shareflow store check` or restore it from a backup"
            case .SQLITE_ERROR:
                return
                    "its schema is not the one this shareflow expects (a table or column is missing or changed); check it with `shareflow store check`"
            default: return "SQLite error \(db.resultCode.rawValue)"
            }
        }
        if let cocoa = error as? CocoaError, let underlying = cocoa.userInfo[NSUnderlyingErrorKey] as? NSError,
            underlying.domain == NSPOSIXErrorDomain
        {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return "\(error)"
    }

    /// What a process does with its store as it ends, however it ends (an error, SIGTERM):
    /// the decision log writes what it still holds and closes (SPEC §18 P3: a `run` whose
    /// script fails keeps the denial that failed it), then the WAL's content moves into the
    /// database file and the WAL empties, so the file alone is the whole store (copy it, back
    /// it up).
    ///
    /// The checkpoint never waits: while another process writes, it is left to whoever exits
    /// last (a truncating checkpoint would otherwise wait out the busy timeout).
    public func checkpoint() {
        decisionLog?.close()
        guard path != ":memory:", !isReadOnly, let queue = sqliteQueue else { return }
        try? queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA busy_timeout = 0")
            _ = try? db.checkpoint(.truncate)
        }
    }

    /// Closes the connection now rather than when the store is released: a command that ends
    /// the process without releasing its engine (see `RunInvocation`) still leaves a file
    /// store whole, its `-wal` and `-shm` removed by SQLite. Nothing may use the store after.
    public func close() {
        decisionLog?.close()
        sqliteQueue?.inDatabase { _ in shelf.empty() }
        try? sqliteQueue?.close()
        driver?.close()
    }

    /// Runs `body` in a transaction, or in a savepoint when a transaction is already open.
    /// A failure of the store itself is thrown as `serviceUnavailable` naming the store and the
    /// cause (never the SQL); any other error rolls back and passes through.
    ///
    /// `scope`: what the transaction may write (`StoreWriteScope`), declared by the outermost
    /// write; a savepoint is held to its transaction's.
    package func write<T>(scope: StoreWriteScope = .wholeStore, _ body: (StoreTransaction) throws -> T) throws -> T {
        if let driver { return try writeThrough(driver, scope: scope, body) }
        do {
            if let db = current {
                // A write asked for inside a read (a read operation's callback, such as
                // discovery's progress, calling a save) is refused before anything is written:
                // no row changes, so no event is sent for a change that never was.
                guard writing else {
                    throw ShareFlowError(
                        .serviceUnavailable,
                        "store \(path) is being read: a callback of a read (discovery's progress) cannot save or delete; do it once the read returns"
                    ).forOperator()
                }
                var result: T?
                let start = feedBumps.savepoint()
                do {
                    try db.inSavepoint {
                        result = try body(StoreTransaction(db, writable: true, path: path, feedBumps: feedBumps, shelf: shelf))
                        return .commit
                    }
                } catch {
                    // Rolled back: the feed moves it made are undone.
                    feedBumps.rollBack(to: start)
                    throw error
                }
                return result!
            }
            guard writeWait != .deferred else { throw deferredBy ?? StoreBusy(path: path) }
            let deferring = writeWait == .deferFirst
            var changed = false
            let result = try queue.writeWithoutTransaction { db -> T in
                // Deferring: BEGIN IMMEDIATE does not wait for the lock; once it is held, the
                // transaction's statements wait as usual.
                var began = !deferring
                let busyMs = Int32(clamping: Int(busyTimeout * 1000))
                if deferring { sqlite3_busy_timeout(db.sqliteConnection, Int32(grace * 1000)) }
                defer { if !began { sqlite3_busy_timeout(db.sqliteConnection, busyMs) } }
                var result: T?
                do {
                    try db.inTransaction(.immediate) {
                        if !began {
                            began = true
                            sqlite3_busy_timeout(db.sqliteConnection, busyMs)
                        }
                        current = db
                        defer { current = nil }
                        (result, changed) = try outermost(
                            scope,
                            { StoreTransaction(db, writable: true, path: path, feedBumps: $0, shelf: shelf) },
                            body
                        )
                        return .commit
                    }
                } catch let error as DatabaseError where !began && (error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED) {
                    let busy = StoreBusy(path: path)
                    deferred(by: busy)
                    throw busy
                }
                return result!
            }
            if deferring { writeWait = .inPlace }
            if changed { committed?() }
            return result
        } catch let error as DatabaseError {
            throw noted(StoreFailure(error, path: path).shareFlowError)
        }
    }

    /// Runs `body` with a connection: the open transaction's, or a fresh read.
    package func read<T>(_ body: (StoreTransaction) throws -> T) throws -> T {
        if let driver { return try readThrough(driver, body) }
        do {
            // Inside a write, a read sees the positions the write has taken and not yet stored.
            if let db = current {
                return try body(StoreTransaction(db, writable: writing, path: path, feedBumps: writing ? feedBumps : nil, shelf: shelf))
            }
            // A deferred transaction, not GRDB's `read`: its `PRAGMA query_only` toggles make
            // SQLite expire every prepared statement, so each cached statement was compiled
            // again on every read (its authorizer was ~45% of a fetchRecord's time). What
            // query_only guarded is checked instead: a read that changed a row is undone and
            // is an error.
            // BEGIN and COMMIT are cached statements stepped as SQLite's own (`ReadTransaction`):
            // GRDB's `inTransaction` parsed both again on every call, and its execution path
            // (observation, transaction date) was a tenth of a one-record read (issue 48,
            // callgrind). Nothing here observes transactions or asks their date.
            return try queue.inDatabase { db in
                current = db
                defer { current = nil }
                return try ReadTransaction.run(db, path: path) { try body(StoreTransaction(db, writable: false, path: path, shelf: shelf)) }
            }
        } catch let error as DatabaseError {
            throw StoreFailure(error, path: path).shareFlowError
        }
    }

    /// The body of an outermost write, on the transaction `open` makes: its feed moves noted
    /// (`feedBumps`), its log positions written last, and whether it changed rows.
    private func outermost<T>(
        _ scope: StoreWriteScope,
        _ open: (FeedBumps) -> StoreTransaction,
        _ body: (StoreTransaction) throws -> T
    ) throws -> (T, Bool) {
        writing = true
        feedBumps = FeedBumps(logging: logsChanges, scope: scope)
        defer {
            writing = false
            feedBumps = FeedBumps()
        }
        let transaction = open(feedBumps)
        let before = transaction.changeCount
        let result = try body(transaction)
        try transaction.writeLogPositions()
        if feedBumps.outboxWritten { outboxWritten = true }
        return (result, transaction.changeCount != before)
    }

    /// Whether a write since the last call noted changes for subscriptions (SPEC §20); reset.
    package func takeOutboxWritten() -> Bool {
        defer { outboxWritten = false }
        return outboxWritten
    }

    /// `write` on a driver's store: the same nesting (a savepoint inside the open write,
    /// refused inside a read).
    private func writeThrough<T>(_ driver: any StoreDriver, scope: StoreWriteScope, _ body: (StoreTransaction) throws -> T) throws -> T {
        do {
            if let connection = currentConnection {
                guard writing else {
                    throw ShareFlowError(
                        .serviceUnavailable,
                        "store \(path) is being read: a callback of a read (discovery's progress) cannot save or delete; do it once the read returns"
                    ).forOperator()
                }
                let start = feedBumps.savepoint()
                do {
                    return try driver.savepoint(connection) {
                        try body(StoreTransaction(connection, writable: true, path: path, feedBumps: feedBumps))
                    }
                } catch {
                    feedBumps.rollBack(to: start)
                    throw error
                }
            }
            guard writeWait != .deferred else { throw deferredBy ?? StoreBusy(path: path) }
            let deferring = writeWait == .deferFirst
            var changed = false
            let result = try driver.transaction(
                deferring ? .writeIfFree(grace: grace, within: busyTimeout) : .write(within: busyTimeout),
                scope: scope
            ) { connection in
                currentConnection = connection
                defer { currentConnection = nil }
                let (result, wrote) = try outermost(scope, { StoreTransaction(connection, writable: true, path: path, feedBumps: $0) }, body)
                changed = wrote
                return result
            }
            if deferring { writeWait = .inPlace }
            if changed { committed?() }
            return result
        } catch let busy as StoreBusy {
            deferred(by: busy)
            throw busy
        } catch {
            throw noted(driver.shareFlowError(error) ?? error)
        }
    }

    /// When a write last gave up waiting for a lock in place (`ShareFlowError.isLockWait`;
    /// the monotonic clock, seconds), which a server's readiness reads from another thread.
    package var lastLockWaitGaveUp: Double? { lockWaitLock.withLock { lockWaitGaveUp } }
    private let lockWaitLock = NSLock()
    private var lockWaitGaveUp: Double?

    /// `error`, noted in `lastLockWaitGaveUp` when it is a lock wait that ran out.
    private func noted(_ error: Error) -> Error {
        if let e = error as? ShareFlowError, e.isLockWait {
            lockWaitLock.withLock { lockWaitGaveUp = ProcessInfo.processInfo.systemUptime }
        }
        return error
    }

    /// `read` on a driver's store: one snapshot, read-only.
    private func readThrough<T>(_ driver: any StoreDriver, _ body: (StoreTransaction) throws -> T) throws -> T {
        do {
            if let connection = currentConnection {
                return try body(StoreTransaction(connection, writable: writing, path: path, feedBumps: writing ? feedBumps : nil))
            }
            return try driver.transaction(.read, scope: .wholeStore) { connection in
                currentConnection = connection
                defer { currentConnection = nil }
                return try body(StoreTransaction(connection, writable: false, path: path))
            }
        } catch {
            throw driver.shareFlowError(error) ?? error
        }
    }

    // MARK: Reads beside the write (SPEC §16 M5)

    /// A connection of the calling thread's own, for reads beside the write (`read(on:)`):
    /// SQLite opens the file again, read-only (in WAL mode a reader sees the last commit and
    /// never waits for the writer); a driver opens one of its connections. Nil where the store
    /// has no second connection (`:memory:`).
    package func makeReader() throws -> StoreReader? {
        if let driver {
            return try driver.makeReader().map { StoreReader(driver: $0) }
        }
        guard let readerPath else { return nil }
        var config = Configuration()
        config.readonly = true
        config.journalMode = .default
        config.busyMode = .timeout(busyTimeout)
        config.label = "shareflow.store.reader"
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA temp_store = MEMORY") }
        do {
            return StoreReader(sqlite: try DatabaseQueue(path: readerPath, configuration: config))
        } catch let error as DatabaseError {
            throw StoreFailure(error, path: path).shareFlowError
        }
    }

    /// Runs `statement`, a body that runs one reading statement, in the snapshot SQLite gives a
    /// statement alone, without BEGIN and COMMIT: one statement is atomic by itself, and the
    /// pair was a tenth of a one-record read (issue 48, callgrind). On `reader` (the thread's
    /// own, `ReadsBeside`) when one is given. Nil where a read does not go this way — a
    /// driver's store, or a transaction already open (a write's reads see its own positions) —
    /// and the caller reads as it always does (`read`). A second statement in `statement` would
    /// read another moment: a body that may need one reads through `read`.
    package func readAlone<T>(on reader: StoreReader? = nil, _ statement: (StoreTransaction) throws -> T) throws -> T? {
        guard driver == nil else { return nil }
        let connection: (queue: DatabaseQueue, shelf: StatementShelf)
        if let reader {
            guard reader.open == nil, let queue = reader.sqlite else { return nil }
            connection = (queue, reader.shelf)
        } else {
            guard current == nil else { return nil }
            connection = (queue, shelf)
        }
        do {
            return try connection.queue.inDatabase { db in
                try statement(StoreTransaction(db, writable: false, path: path, shelf: connection.shelf))
            }
        } catch let error as DatabaseError {
            throw StoreFailure(error, path: path).shareFlowError
        }
    }

    /// Runs `body` in one snapshot on `reader` (the thread's own): joined by the engine calls
    /// inside it. Touches nothing of the store's own connection or its open write.
    package func read<T>(on reader: StoreReader, _ body: (StoreTransaction) throws -> T) throws -> T {
        if let open = reader.open { return try body(open) }
        if let driverReader = reader.driver {
            do {
                return try driverReader.read { connection in
                    let transaction = StoreTransaction(connection, writable: false, path: path)
                    reader.open = transaction
                    defer { reader.open = nil }
                    return try body(transaction)
                }
            } catch {
                throw driver?.shareFlowError(error) ?? error
            }
        }
        guard let queue = reader.sqlite else { preconditionFailure("a store reader with no connection") }
        do {
            // Deferred, not GRDB's `read`, and through `ReadTransaction` (see `read`).
            return try queue.inDatabase { db in
                try ReadTransaction.run(db, path: path) {
                    let transaction = StoreTransaction(db, writable: false, path: path, shelf: reader.shelf)
                    reader.open = transaction
                    defer { reader.open = nil }
                    return try body(transaction)
                }
            }
        } catch let error as DatabaseError {
            throw StoreFailure(error, path: path).shareFlowError
        }
    }

    /// Runs a raw integrity check (used by the crash tests).
    public func integrityCheck() throws -> String {
        try queue.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") ?? "?" }
    }

    // MARK: Refusing what is not ours

    /// Throws, touching nothing, when `path` holds something other than a ShareFlow store
    /// this binary can open.
    static func checkForeignFile(at path: String, sqlitePath: String? = nil, catalogue: StoreCatalogue = .current) throws {
        let supported = catalogue.version
        // Only a regular file (or none yet) is a store: opening a FIFO waits for a writer for
        // ever (`store info` and `serve` hung), and a device or socket is no file.
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            let kind =
                switch info.st_mode & S_IFMT {
                case S_IFIFO: "a FIFO (named pipe)"
                case S_IFDIR: "a folder"
                case S_IFSOCK: "a socket"
                case S_IFCHR, S_IFBLK: "a device"
                default: "not a regular file"
                }
            throw StoreError.cannotOpen(path: path, reason: "it is \(kind), not a store file")
        }
        let header: Data
        do {
            header = try BoundedFile.read16(path)
        } catch {
            throw StoreError.cannotOpen(path: path, reason: "it cannot be read (\(error))")
        }
        if header.isEmpty { return }  // an empty file: a new store
        guard header == Data("SQLite format 3\0".utf8) else {
            throw StoreError.notAStore(path: path, reason: "it is not an SQLite database")
        }
        var config = Configuration()
        config.readonly = true
        let probe = try DatabaseQueue(path: sqlitePath ?? path, configuration: config)
        defer { try? probe.close() }
        try probe.read { db in
            let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
            // Nothing yet, or GRDB's migrations table alone: a store another process is making.
            if tables.allSatisfy({ $0 == "grdb_migrations" }) { return }
            guard tables.contains("shareflow_meta") else {
                throw StoreError.notAStore(
                    path: path,
                    reason: "it is an SQLite database of another program (tables: \(tables.prefix(5).joined(separator: ", ")))"
                )
            }
            // Read as stored: a BLOB spelling the mark is no mark (nor is a NULL a crash).
            let format = try DatabaseValue.fetchOne(db, sql: "SELECT value FROM shareflow_meta WHERE key = 'format'")
            guard format == formatName.databaseValue else {
                throw StoreError.notAStore(path: path, reason: "its shareflow_meta has no ShareFlow format mark")
            }
            // Read as stored, strictly: garbage is damage, not version 0 (which would migrate it).
            let stored = try DatabaseValue.fetchOne(db, sql: "SELECT value FROM shareflow_meta WHERE key = 'schemaVersion'")
            var version: Int?
            switch stored?.storage {
            case .string(let s)?: version = Int(s)
            case .int64(let i)?: version = Int(exactly: i)
            default: version = nil
            }
            guard let version, version >= 1 else {
                throw StoreError.cannotOpen(
                    path: path,
                    reason:
                        "it is damaged (its schema version is missing or not a number: \(stored.map { "\($0)" } ?? "no row")); restore it from a backup (the file was not changed)"
                )
            }
            if version > supported {
                throw StoreError.newerSchema(path: path, found: version, supported: supported)
            }
            // Each migration commits with its record in grdb_migrations: a store whose record is
            // missing or behind its own version was changed by hand, and migrating it again would
            // fail half-way (and, taken for another process's migration, be retried for seconds).
            let applied =
                tables.contains("grdb_migrations")
                ? Set(try DatabaseValue.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations").compactMap { String.fromDatabaseValue($0) })
                : []
            let missing = (1...version).map { "v\($0)" }.filter { !applied.contains($0) }
            guard missing.isEmpty else {
                throw StoreError.cannotOpen(
                    path: path,
                    reason:
                        "it is damaged (schema version \(version), but its migration record lacks \(missing.joined(separator: ", "))); restore it from a backup (the file was not changed)"
                )
            }
            // What the upgrade would make, made already by someone else: refused now, not
            // half-way through the upgrade.
            let names = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master"))
            if let taken = catalogue.madeAfter(version, .sqlite).first(where: { names.contains($0.name) }) {
                throw StoreError.cannotOpen(
                    path: path,
                    reason:
                        "it holds a \(taken.kind) \(taken.name) ShareFlow did not make, and upgrading it from schema version \(version) makes one of that name; rename or drop it (the file was not changed)"
                )
            }
        }
    }
}

/// A write found another process's write lock held and did not wait (`Store.writeWait`):
/// nothing was written. The caller runs its work again later, or, past the busy timeout, gives
/// `serviceUnavailable` (`shareFlowError(waited:)`).
package struct StoreBusy: Error, CustomStringConvertible {
    package let path: String
    /// Registers a call for when the lock has come, where the driver asked for it without
    /// waiting (PostgreSQL); nil: the caller tries again after a pause (SQLite).
    package let onReady: (@Sendable (@escaping @Sendable () -> Void) -> Void)?

    package init(path: String, onReady: (@Sendable (@escaping @Sendable () -> Void) -> Void)? = nil) {
        self.path = path
        self.onReady = onReady
    }

    package var description: String { "store \(path) is busy: another process holds its write lock" }

    /// What the caller gets once the write has waited `waited` seconds in all.
    package func shareFlowError(waited: TimeInterval) -> ShareFlowError {
        ShareFlowError(
            .serviceUnavailable,
            "store \(path) is busy: another process has held its write lock for \(Int(waited * 1000)) ms (store.busyTimeoutMs); retry",
            retryAfter: 1
        ).asLockWait().forOperator()
    }
}

/// Why a store could not be opened.
public enum StoreError: Error, CustomStringConvertible {
    /// What is at `path` is no ShareFlow store, for `reason`; it was not changed.
    case notAStore(path: String, reason: String)
    /// Written by a newer ShareFlow: schema version `found`, past the `supported` one; it was not changed.
    case newerSchema(path: String, found: Int, supported: Int)
    /// The store at `path` could not be opened, for `reason`.
    case cannotOpen(path: String, reason: String)
    /// A backup to `destination` failed, for `reason`.
    case cannotBackUp(destination: String, reason: String)

    /// The reason, naming the store, and what an operator can do about it.
    public var description: String {
        switch self {
        case let .notAStore(path, reason):
            return
                "\(path) is not a ShareFlow store: \(reason); refusing to open it (\(Store.isDatabaseURL(path) ? "the database" : "the file") was not changed)"
        case let .cannotOpen(path, reason):
            return "cannot open store \(path): \(reason)"
        case let .cannotBackUp(destination, reason):
            return "cannot back up to \(destination): \(reason)"
        case let .newerSchema(path, found, supported):
            return
                "\(path) has store schema version \(found), newer than this shareflow supports (\(supported)); upgrade shareflow (the file was not changed)"
        }
    }
}
