import Foundation
import Logging

/// The sharing engine: the account directory, containers and their databases, shares and
/// participants, the operations, the events and the policies — over one `Store`.
///
/// ```swift
/// let engine = try Engine(store: Store(path: ":memory:"))
/// try engine.accounts.create(emails: ["alice@example.com"])
/// let container = try engine.session(for: "alice@example.com").container("iCloud.com.example.app")
/// ```
///
/// The engine is synchronous and serialised by one recursive lock: calls made from Lua run
/// on the Lua thread with no hop, and observers run on the caller's thread after commit. A
/// server's reading threads read beside it, each on a connection of its own (`ReadsBeside`).
public final class Engine: @unchecked Sendable {
    /// The store every read and write of the engine goes to.
    public let store: Store
    /// Read by reading threads beside the lock: kept under a lock of its own.
    public var options: Options {
        get { optionsLock.withLock { storedOptions } }
        set { optionsLock.withLock { storedOptions = newValue } }
    }
    private var storedOptions: Options
    private let optionsLock = NSLock()
    let lock = NSRecursiveLock()
    /// Whether threads with a reader of their own read without `lock` (`allowReadsBeside`).
    var readsBeside = false
    /// The key of this engine's per-thread state (`threadCalls`).
    let threadKey: String
    /// Threads holding read events now (`holdReadEvents`): none, and no thread's state is
    /// looked up at a commit.
    private var holdingThreads = 0
    /// The engine's log: an observer's failure goes here (read when one fails), and a server or script
    /// host made on the engine takes it. The store's decision log keeps the one given to `init`.
    public var logger: Logger
    /// A constant, not lazy: read on every event.
    public let events = EventBus()
    /// The policies asked at each decision point before a change (SPEC §6): a denial fails the item
    /// with `permissionFailure`.
    public let policies = PolicySet()
    /// How a server maps a deployment's own credentials to accounts (SPEC §13).
    public let authenticators = Authenticators()
    /// The armed fault rules (SPEC §15): asked where requests enter the engine.
    public let faults = FaultInjector()
    /// Events of the transaction in progress, delivered when it commits.
    private var pendingEvents: [Event] = []
    /// What the new assets of the modify call under way became in the store (`ingestAssets`).
    var ingestedAssets: [Asset.Content: AssetBlobs.Saved] = [:]
    /// Where assets' bytes are kept (SPEC §19 A4): the SQLite store's folder, or its driver's
    /// database.
    package var assets: any AssetStorage { store.fileAssets ?? databaseAssets! }
    /// Set once, in `init` (read from reading threads: never made lazily).
    private var databaseAssets: DatabaseAssets?
    /// The key download URLs are sealed with, once read (`assetURLKey`).
    let assetKeys = AssetURLKeys()
    private var transactionDepth = 0

    /// An engine's settings, read and changed through `options` at any time.
    public struct Options: Sendable {
        /// R8: most participants per share, owner included.
        public var maxParticipants = 100
        /// R42: most open access requests per share (`sharing.maxRequesters`); past it a
        /// request is dropped with the same answer.
        public var maxRequesters = 100
        /// SPEC §17: asking again within this many seconds changes nothing (the same success):
        /// one account asking in a loop cannot keep renewing the share's tag (R43).
        public var requestRefreshSeconds: Double = 60
        /// DiscoverAll reports progress every this many contacts.
        public var discoveryProgressInterval = 1000
        /// Share URLs are `<publicURL>/share/<token>` (`shareflow serve --public-url`); no
        /// trailing slash.
        public var publicURL = Engine.defaultPublicURL
        /// Seconds one query may read records without filling its page (nil: no bound). A
        /// server sets one, so no request holds one of its engine's threads for long: past it the
        /// query is `limitExceeded`, naming what to change (SPEC §13, wave 3).
        public var queryTimeLimit: Double?
        /// SPEC §19 A2: the most bytes one asset holds (`assets.maxBytes`; Apple's per-upload
        /// limit): past it a save is `limitExceeded`, an upload 413.
        public var assetMaxBytes: Int64 = 15 << 20
        /// SPEC §19 A3: the most bytes one account may have uploaded and not yet saved
        /// (`assets.maxPendingBytes`): past it an upload is 413 before its body is read.
        public var assetMaxPendingBytes: Int64 = 1 << 30
        /// SPEC §19 A3: seconds a download URL stays good (`assets.urlSeconds`).
        public var assetURLSeconds: Double = 3600
        /// SPEC §19 A3: seconds a blob nobody refers to is kept before it is collected
        /// (`assets.graceSeconds`); also how long an upload's receipt may wait for its save.
        public var assetGraceSeconds: Double = 3600
        /// SPEC §20: subscriptions and the notifications they queue (`notifications.*`).
        public var notifications = NotificationOptions()
        /// The defaults: 100 participants a share, progress every 1000 contacts, `Engine.defaultPublicURL`,
        /// no query time limit.
        public init() {}
    }

    /// What closures that may outlive the engine hold (a policy may keep its request).
    let link = EngineLink()

    /// SPEC §20, `notifications.dispatch = .deferred`: called on the committing thread when a
    /// commit left changes in the outbox (a server wakes its dispatcher). Set before serving.
    package var notificationsPending: (@Sendable () -> Void)?
    /// SPEC §20: called after a dispatch queued notifications, with the inboxes that got them
    /// (a server wakes the polls waiting on them). Set before serving.
    package var notified: (@Sendable (Set<Int64>) -> Void)?
    /// Whether a dispatch after commit is running (its observers' writes join its loop).
    var dispatchingNotifications = false
    /// A commit inside that dispatch (an observer's write) left changes in the outbox.
    var outboxRefilled = false
    /// The zone the last dispatch job took last: the next starts after it (zones in turn).
    var dispatchCursor = Int64.min

    /// An engine over `store`. Its policies record their decisions in the store's decision log, when it
    /// has one, shared by every process on the store (SPEC §18 P3).
    public init(store: Store, options: Options = Options(), logger: Logger = Logger(label: "shareflow")) {
        self.store = store
        storedOptions = options
        self.logger = logger
        threadKey = "shareflow.engine.calls.\(UUID().uuidString)"
        events.logger = { [unowned self] in self.logger }
        link.target = .passUnretained(self)
        if store.fileAssets == nil { databaseAssets = DatabaseAssets(engine: self) }
        // Every process on the store shares one decision log (SPEC §18 P3, §16).
        if let shared = store.decisionLog {
            policies.sharedLog = shared
            shared.setLogger(logger)
        }
    }

    deinit { link.target = nil }

    /// The account directory.
    public var accounts: Directory { Directory(engine: self) }

    /// Acts as the account found by email, phone or user record ID.
    public func session(for who: String) throws -> Session {
        guard let account = try accounts.find(who) else {
            throw ShareFlowError.unknown("no account for '\(who)'")
        }
        return Session(engine: self, account: account)
    }

    /// Acts as `account`, read again from the store each time the session needs it (`Session.account`).
    public func session(for account: Account) -> Session { Session(engine: self, account: account) }

    /// Acts as `account`, read when the directory was at `generation` (`accountsGeneration`,
    /// noted before the read): its operations use it as read until the directory changes,
    /// rather than read it again each (a server's request, whose caller is current already).
    ///
    /// ```swift
    /// let generation = engine.accountsGeneration
    /// let bob = try engine.accounts.find("bob@example.com")!
    /// let session = engine.session(for: bob, currentAt: generation)
    /// ```
    public func session(for account: Account, currentAt generation: Int) -> Session {
        Session(engine: self, account: account, currentAt: generation)
    }

    /// Bumped by every change to the directory, so cached accounts know when to reload.
    /// Read from any thread (a server checks its cached callers against it without a hop
    /// to the engine's thread), so it is kept under a lock of its own.
    public var accountsGeneration: Int { generationLock.withLock { generation } }
    private let generationLock = NSLock()
    private var generation = 0

    /// Also called when another process changed the directory (`StoreWatch`).
    package func accountsChanged() { generationLock.withLock { generation += 1 } }

    // MARK: Transactions

    /// Runs `body` under the lock in one transaction (a savepoint when nested); its events are
    /// delivered after the outermost commit, and dropped on rollback. `scope`: what the
    /// transaction writes, when it is the outermost (`StoreWriteScope`): a zone-scoped write
    /// runs beside other nodes' writes to other zones.
    func transaction<T>(scope: StoreWriteScope = .wholeStore, _ body: (StoreTransaction) throws -> T) throws -> T {
        // A write asked for inside a read beside the lock (a read's callback, or a policy it
        // asked) is refused, as inside any read (`Store.write`): committed on the engine's
        // connection, it would be invisible to the read's own snapshot going on around it.
        if readsBeside, threadCalls.besideDepth > 0 {
            throw ShareFlowError(
                .serviceUnavailable,
                "store \(store.path) is being read: a callback of a read (discovery's progress) cannot save or delete; do it once the read returns"
            ).forOperator()
        }
        return try locked { try transactionLocked(scope, body) }
    }

    private func transactionLocked<T>(_ scope: StoreWriteScope, _ body: (StoreTransaction) throws -> T) throws -> T {
        transactionDepth += 1
        let mark = pendingEvents.count
        let result: T
        do {
            result = try store.write(scope: scope, body)
        } catch {
            pendingEvents.removeSubrange(mark...)
            transactionDepth -= 1
            // A denial rolls its item back; its decision is logged all the same (SPEC §18 P3).
            if transactionDepth == 0 { policies.publish() }
            throw error
        }
        transactionDepth -= 1
        if transactionDepth == 0 {
            // The decisions' inputs become JSON now, after the write (SPEC §12, §18 P3).
            policies.publish()
            // Written: the work is not run again, so what its reads sent goes first.
            if holdingThreads > 0, case let calls = threadCalls, let held = calls.heldReadEvents {
                calls.heldReadEvents = nil
                holdingThreads -= 1
                pendingEvents.insert(contentsOf: held.map(\.event), at: 0)
            }
            flushEvents()
            // SPEC §20: the subscriptions of what it committed.
            if store.takeOutboxWritten() { outboxFilled() }
        }
        return result
    }

    /// Runs `body` in one store transaction that the engine's calls inside it join: a write
    /// (`writing`: saves in it are savepoints, committed together at its end) or one read
    /// snapshot. For answers whose parts must agree (records and the token after them, SPEC
    /// §14): read in separate transactions, another process's commit between them is in the
    /// token but not in the records, and a client following from that token never gets it.
    package func inOneTransaction<T>(writing: Bool, _ body: () throws -> T) throws -> T {
        writing ? try transaction { _ in try body() } : try reading { _ in try body() }
    }

    /// Reads under the lock, or beside it on the thread's own reader (`ReadsBeside`).
    func reading<T>(_ body: (StoreTransaction) throws -> T) throws -> T {
        if let calls = besideCalls { return try readBeside(calls, body) }
        return try locked { try store.read(body) }
    }

    /// Runs `statement` (one reading statement) alone, without a transaction
    /// (`Store.readAlone`), under the lock or beside it as `reading` reads; nil where a read does
    /// not go that way, and the caller reads through `reading`.
    func readingAlone<T>(_ statement: (StoreTransaction) throws -> T) throws -> T? {
        if let calls = besideCalls {
            guard let reader = calls.reader else { preconditionFailure("a read beside the lock on a thread with no reader") }
            return try store.readAlone(on: reader, statement)
        }
        return try locked { try store.readAlone(statement) }
    }

    /// Queues an event for delivery after commit (at once when no transaction is open). A read
    /// beside the lock keeps it until the read is over.
    func emit(_ event: Event) {
        guard events.hasObservers(event.kind) else { return }
        if readsBeside {
            let calls = threadCalls
            if calls.lockDepth == 0 {
                if calls.besideDepth > 0 {
                    calls.besideEvents.append((event, FaultScope.current))
                    return
                }
                return locked { emitLocked(event) }
            }
        }
        emitLocked(event)
    }

    /// `emit`, the lock held (or no reads beside it).
    func emitLocked(_ event: Event) {
        // `fault.injected` is not held: it is delivered inside the scope that keeps its
        // observers' engine calls from being injected again (`announce`), and a run again
        // meets its decisions without announcing them again (`FaultScope.decisions`).
        if transactionDepth == 0, holdingThreads > 0, event.kind != .faultInjected {
            let calls = threadCalls
            if calls.heldReadEvents != nil {
                calls.heldReadEvents?.append((event, FaultScope.current))
                return
            }
        }
        pendingEvents.append(event)
        if transactionDepth == 0 { flushEvents() }
    }

    /// Holds read events from now on, on the calling thread: events of reads (sent with no
    /// transaction open) held back while the work in progress may be run again from the start
    /// (a server's request whose first write may be deferred, `Store.writeWait`), so an
    /// observer never sees a share's metadata fetched twice for one request. Delivered before
    /// the events of the first write that commits, or when the work ends
    /// (`endHoldingReadEvents`); dropped if it is run again. Each keeps the fault scope it was
    /// sent in: its observers' engine calls are the request's, decided on the connection, as
    /// when it is delivered at once. Held per thread (`EngineThreadCalls.heldReadEvents`): a
    /// reading thread's events are its own.
    package func holdReadEvents() {
        locked {
            let calls = threadCalls
            if calls.heldReadEvents == nil { holdingThreads += 1 }
            calls.heldReadEvents = []
        }
    }

    /// Stops holding: the held events are delivered (`deliver`), or dropped with an attempt
    /// that is run again.
    package func endHoldingReadEvents(deliver: Bool) {
        let held = locked { () -> [(event: Event, scope: FaultScope?)]? in
            let calls = threadCalls
            guard let held = calls.heldReadEvents else { return nil }
            calls.heldReadEvents = nil
            holdingThreads -= 1
            return held
        }
        if deliver, let held { deliverKept(held) }
    }

    private func flushEvents() {
        while !pendingEvents.isEmpty {
            let batch = pendingEvents
            pendingEvents.removeAll()
            for event in batch { events.deliver(event) }
        }
    }

    /// Delivers an event to its observers now (tools and benchmarks; the engine's own events
    /// go through its transactions).
    package func publish(_ event: Event) {
        locked { events.deliver(event) }
    }

    /// Asks the policies at `request.point`, logging the decision; a denial throws
    /// `permissionFailure` (tools and benchmarks).
    package func decide(_ request: PolicyRequest, item: String) throws {
        try checkPolicy(request, item: item)
    }

    /// Hands `decide`'s decisions to the log (benchmarks: outside the timed decisions).
    package func publishDecisions() { locked { policies.publish() } }

    /// Asks the policies; a denial throws `permissionFailure`.
    func checkPolicy(_ request: PolicyRequest, item: String) throws {
        // Under the lock: policies are Lua, confined to the thread holding it (`ReadsBeside`).
        try locked {
            guard policies.hasPolicies(request.point) else { return }
            try policies.check(request, item: item)
        }
    }

    /// Asks the policies in the middle of the write `db`; a denial throws `permissionFailure`.
    /// Returns whether they changed the store: a policy may call back into the engine, and its
    /// writes join this transaction's connection. The caller then reads again what it stands
    /// on (the share, the participant, the zone, the root) before it writes, so a policy that
    /// deleted it gets ShareFlow's error, not a write the store refuses. Counting the
    /// connection's changes spares that second read to the policies that only decide.
    func askPolicies(_ request: PolicyRequest, item: String, db: StoreTransaction) throws -> Bool {
        try askPoliciesForApproval(request, item: item, db: db).changed
    }

    /// `askPolicies`, with the approval a `share.requestAccess` policy gave (SPEC §17).
    func askPoliciesForApproval(
        _ request: PolicyRequest,
        item: String,
        db: StoreTransaction
    ) throws -> (
        changed: Bool, approval: PolicySet.Approval?
    ) {
        guard policies.hasPolicies(request.point) else { return (false, nil) }
        let before = db.changeCount
        let approval = try policies.check(request, item: item)
        return (db.changeCount != before, approval)
    }
}

/// The engine, for a closure that may outlive it, or nil once it is gone. Not a weak
/// reference: those form a side table whose address Swift keeps encoded in the object's
/// reference count, which LeakSanitizer cannot follow, so an engine alive at exit (a server's)
/// reads as a leak. The engine clears it as it goes; like the engine, used on one executor.
final class EngineLink {
    var target: Unmanaged<Engine>?
    var engine: Engine? { target?.takeUnretainedValue() }
}
