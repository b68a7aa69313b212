import Foundation
import ShareFlow

/// The thread the engine's writes run on while serving: requests arrive on many threads, and
/// each writing request hands its engine work here, in order. Reading requests run on the
/// reading threads beside it (`read`); every Lua state runs under the engine's lock, on
/// whichever of these threads holds it.
///
/// A request waits here for another process's write lock at most `Store.lockGrace` (SPEC §16
/// M5): then its first write fails (`Store.writeWait`), having written nothing, and the request
/// is queued again from off the thread (SQLite: a few ms later, doubling to 50 ms; PostgreSQL:
/// when the lock asked for on the driver's spare connection comes, one request of `lockLine`
/// at a time), while every other request runs. Past `store.busyTimeoutMs` it is answered
/// `serviceUnavailable` with `retryAfter`, and the node reads unready (`writesStalled`) for that
/// long after.
final class EngineThread: @unchecked Sendable {  // jobs, lastGaveUp, lastProgress and lockLine guarded by `condition`
    private let condition = NSCondition()
    private var jobs: [() -> Void] = []
    /// Jobs queued and not yet done (the one running included): `GET /metrics`' queue depth.
    private var pending = 0
    /// The engine whose writes wait off the thread; nil: writes wait in place (tests of routes).
    private let engine: Engine?
    private var store: Store? { engine?.store }
    /// When a write last gave up waiting for the lock (the monotonic clock, seconds).
    private var lastGaveUp: Double?
    /// When a request of `lockLine` last went through: waiting writes are moving.
    private var lastProgress: Double?

    var depth: Int { condition.withLock { pending } }

    /// Whether a write gave up waiting for another process's write lock within the last
    /// `store.busyTimeoutMs` (at least a second): `/readyz` says unready then.
    var writesStalled: Bool {
        guard let store else { return false }
        // A write that waited in place (a script's, an observer's) and gave up counts too.
        let inPlace = store.lastLockWaitGaveUp
        return condition.withLock {
            guard let last = [lastGaveUp, inPlace].compactMap({ $0 }).max() else { return false }
            return EngineThread.now() - last < max(store.busyTimeout, 1)
        }
    }

    /// `readers`: how many reading threads to start beside the engine's (SPEC §16 M5), each
    /// with a store connection of its own (fewer when the store has no more to give).
    init(engine: Engine? = nil, readers: Int = 0) {
        self.engine = engine
        // The thread holds its EngineThread, which lives as long as the process (a server has
        // one). `unowned` crashed when an EngineThread was dropped before its new thread first
        // ran (in-process tests make one per router): the thread then read a freed object.
        let thread = Thread { [self] in self.loop() }
        thread.name = "shareflow.engine"
        thread.start()
        guard let engine, readers > 0 else { return }
        engine.allowReadsBeside()
        for index in 0..<readers {
            // Opened here, not on the thread: a store with no more to give starts fewer.
            let reader: StoreReader?
            do {
                reader = try engine.store.makeReader()
            } catch {
                engine.logger.warning("reads beside the write: reader \(index + 1) could not be opened (\(error)); \(index) run")
                break
            }
            guard let reader else { break }
            readerCount += 1
            readersRunning += 1
            // Held until `stopReading` ends the loop, as the engine's thread holds it.
            let thread = Thread { [self] in
                engine.attachReader(reader)
                self.readLoop()
                // Stopped (`stopReading`): the connection goes with the thread.
                engine.attachReader(nil)
                reader.close()
                self.readCondition.withLock {
                    self.readersRunning -= 1
                    self.readCondition.broadcast()
                }
            }
            thread.name = "shareflow.reader.\(index + 1)"
            thread.start()
        }
    }

    /// Reading threads started (`read`); 0: reads run on the engine's thread.
    private(set) var readerCount = 0
    /// Reading requests not yet taken by a reading thread, guarded by `readCondition`.
    private var readJobs: [() -> Void] = []
    private var readAt = 0
    private let readCondition = NSCondition()

    /// Reading threads not yet stopped, guarded by `readCondition`.
    private var readersRunning = 0
    private var stopping = false

    /// Stops the reading threads once the reads queued are done, each closing its connection
    /// (an SQLite reader's leaves the file whole; a PostgreSQL one goes back to the pool), and
    /// waits for them. Reads asked for after it run on the engine's thread.
    func stopReading() {
        readCondition.lock()
        stopping = true
        readCondition.broadcast()
        while readersRunning > 0 { readCondition.wait() }
        readCondition.unlock()
    }

    private func readLoop() {
        while true {
            readCondition.lock()
            while readAt == readJobs.count && !stopping { readCondition.wait() }
            if readAt == readJobs.count {
                readCondition.unlock()
                return
            }
            let job = readJobs[readAt]
            readAt += 1
            if readAt == readJobs.count {
                readJobs.removeAll(keepingCapacity: true)
                readAt = 0
            }
            readCondition.unlock()
            job()
            condition.withLock { pending -= 1 }
        }
    }

    /// Runs `body`, which only reads (it may not defer a write: one it makes waits in place),
    /// on a reading thread beside the engine's, or on the engine's thread when there is none.
    /// Cancelled while it waits its turn, it never runs and throws `CancellationError`.
    func read<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        guard readerCount > 0, !readCondition.withLock({ stopping }) else { return try await run(body) }
        let ticket = Ticket<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard ticket.wait(continuation) else { return }
                condition.withLock { pending += 1 }
                readCondition.withLock {
                    readJobs.append {
                        guard let continuation = ticket.start() else { return }
                        continuation.resume(with: Result { try body() })
                    }
                    readCondition.signal()
                }
            }
        } onCancel: {
            ticket.cancel()
        }
    }

    private func loop() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            // Every job queued so far, in order, for one lock: under load the thread runs
            // them back to back instead of taking the lock (and maybe sleeping) per job.
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch {
                job()
                condition.withLock { pending -= 1 }
            }
        }
    }

    /// Queues `job` for the engine's thread, ahead of every job queued after this returns.
    func enqueue(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        pending += 1
        condition.signal()
        condition.unlock()
    }

    /// Runs `body` on the engine's thread and returns its result. Cancelled while it waits its
    /// turn (its client gone, or the server shutting down), it never runs and throws
    /// `CancellationError` at once: a shutdown waits for the one job running, not the queue.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let ticket = Ticket<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard ticket.wait(continuation) else { return }
                attempt(ticket, body, since: EngineThread.now(), pause: EngineThread.firstPause)
            }
        } onCancel: {
            ticket.cancel()
        }
    }

    /// The first pause before a request whose write found the lock held runs again, and the
    /// longest (the pause doubles each time).
    static let firstPause = 0.002, longestPause = 0.05

    /// Runs `body` on the engine's thread; when its first write found another process's write
    /// lock held, queues it again (after `pause`, or when the driver holds the lock for it),
    /// until it has waited the busy timeout. `waiter`: its place in `lockLine`, once it has one.
    private func attempt<T: Sendable>(
        _ ticket: Ticket<T>,
        _ body: @escaping @Sendable () throws -> T,
        since: Double,
        pause: Double,
        waiter: LockWaiter? = nil
    ) {
        enqueue { [self] in
            guard let continuation = ticket.start() else { return leaveLine(waiter) }
            guard let engine else { return continuation.resume(with: Result { try body() }) }
            let store = engine.store
            store.writeWait = .deferFirst
            engine.holdReadEvents()
            let (result, incidents) = OperatorLog.Held.during { Result { try body() } }
            let deferred = store.writeWait == .deferred
            let onReady = store.deferredBy?.onReady
            store.writeWait = .inPlace
            // An attempt run again answered no one: what its reads sent observers, and its
            // incidents, are dropped with it. Otherwise they are delivered now, writes made by
            // observers then waiting in place, as after any commit.
            engine.endHoldingReadEvents(deliver: !deferred)
            if !deferred { incidents.write() }
            guard deferred else {
                if waiter != nil { condition.withLock { lastProgress = EngineThread.now() } }
                leaveLine(waiter)
                return continuation.resume(with: result)
            }
            // Nothing was written: whatever `body` made of the failure is dropped. In the lock
            // line (PostgreSQL: fair, first come first served) the bound is on the lock not
            // coming: a request behind this node's other waiting writes waits on while they go
            // through, as it waited in the engine's queue before. Polling (SQLite: no order
            // among the waiters) is bounded from the first attempt, as SQLite's busy timeout was.
            let now = EngineThread.now()
            let waited = now - since
            let stuck = onReady == nil ? waited : now - max(since, condition.withLock { lastProgress } ?? since)
            let kind = store.kind
            guard stuck + pause < store.busyTimeout else {
                Counted.storeRetry(kind, reason: "lock-timeout")
                condition.withLock { lastGaveUp = EngineThread.now() }
                leaveLine(waiter)
                // As any request's failure reaches its client: Apple's error body, the store's
                // path in the operator's log only.
                return continuation.resume(throwing: CloudKitError.from(StoreBusy(path: store.path).shareFlowError(waited: waited)))
            }
            Counted.storeRetry(kind, reason: "lock")
            guard ticket.requeue(continuation) else { return leaveLine(waiter) }
            guard let onReady else {
                // Tried again after a pause (SQLite: no one says when the lock is free).
                DispatchQueue.global().asyncAfter(deadline: .now() + pause) { [self] in
                    attempt(ticket, body, since: since, pause: min(pause * 2, EngineThread.longestPause))
                }
                return
            }
            // The driver asked for the lock (PostgreSQL queues the request fairly behind the
            // other nodes' writes). The request waits in this node's line; the first in line
            // runs again when the lock comes, the next when it is done; each runs again at its
            // deadline at the latest. A lock granted that no request claimed is let go after.
            let me = waiter ?? LockWaiter { [self] me in attempt(ticket, body, since: since, pause: pause, waiter: me) }
            let first = condition.withLock { () -> Bool in
                if waiter == nil { lockLine.append(me) }
                return lockLine.first === me
            }
            me.arm()
            if first {
                onReady { [self] in
                    _ = me.fire()
                    enqueue { [self] in self.engine?.releaseUnclaimedLock() }
                }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0.01, store.busyTimeout - stuck)) { _ = me.fire() }
        }
    }

    /// Requests whose first write waits for a lock the driver asked for, oldest first: only the
    /// first runs again when the lock comes. Waking them all would run every one's reads again
    /// for each lock granted (150 accepts waiting on one node: 150 runs a grant).
    private var lockLine: [LockWaiter] = []

    /// Takes `waiter` out of the line; when it was first, the next one runs again (it asks for
    /// the lock in turn).
    private func leaveLine(_ waiter: LockWaiter?) {
        guard let waiter else { return }
        let next = condition.withLock { () -> LockWaiter? in
            guard let index = lockLine.firstIndex(where: { $0 === waiter }) else { return nil }
            lockLine.remove(at: index)
            return index == 0 ? lockLine.first : nil
        }
        _ = next?.fire()
    }

    /// A request in the lock line, run again at most once each time it is armed.
    private final class LockWaiter: @unchecked Sendable {  // `armed` guarded by `lock`
        private let lock = NSLock()
        private var armed = false
        private let start: @Sendable (LockWaiter) -> Void

        init(_ start: @escaping @Sendable (LockWaiter) -> Void) { self.start = start }

        func arm() { lock.withLock { armed = true } }

        /// Runs the request again if it is armed; false when it is not (running, or done).
        func fire() -> Bool {
            let go = lock.withLock { () -> Bool in
                defer { armed = false }
                return armed
            }
            if go { start(self) }
            return go
        }
    }

    static func now() -> Double { ProcessInfo.processInfo.systemUptime }

    /// One job's place in the queue: waiting (with its continuation once it has one), running,
    /// or cancelled. Whichever of the engine's thread and the cancellation comes first wins.
    private final class Ticket<T: Sendable>: @unchecked Sendable {  // state guarded by `lock`
        private let lock = NSLock()
        private var continuation: CheckedContinuation<T, Error>?
        private var cancelled = false
        private var started = false

        /// Keeps the continuation; false (after resuming it) when cancelled already.
        func wait(_ c: CheckedContinuation<T, Error>, locked: Bool = false) -> Bool {
            if !locked { lock.lock() }
            if cancelled {
                lock.unlock()
                c.resume(throwing: CancellationError())
                return false
            }
            continuation = c
            lock.unlock()
            return true
        }

        /// The continuation to run the job for, or nil when it was cancelled.
        func start() -> CheckedContinuation<T, Error>? {
            lock.lock()
            defer { lock.unlock() }
            guard !cancelled, let c = continuation else { return nil }
            started = true
            continuation = nil
            return c
        }

        /// Puts the continuation back for another attempt; false (after resuming it) when the
        /// request was cancelled meanwhile.
        func requeue(_ c: CheckedContinuation<T, Error>) -> Bool {
            lock.lock()
            started = false
            return wait(c, locked: true)
        }

        func cancel() {
            lock.lock()
            cancelled = true
            let waiting = started ? nil : continuation
            continuation = nil
            lock.unlock()
            waiting?.resume(throwing: CancellationError())
        }
    }
}
