import Foundation

/// The one thread the engine (and every Lua state behind it) runs on while serving: requests
/// arrive on many threads, and each hands its engine work here, in order.
final class EngineThread: @unchecked Sendable {  // jobs guarded by `condition`
    private let condition = NSCondition()
    private var jobs: [() -> Void] = []
    /// Jobs queued and not yet done (the one running included): `GET /metrics`' queue depth.
    private var pending = 0

    var depth: Int { condition.withLock { pending } }

    init() {
        let thread = Thread { [unowned self] in self.loop() }
        thread.name = "shareflow.engine"
        thread.start()
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
                enqueue {
                    guard let continuation = ticket.start() else { return }
                    continuation.resume(with: Result { try body() })
                }
            }
        } onCancel: {
            ticket.cancel()
        }
    }

    /// One job's place in the queue: waiting (with its continuation once it has one), running,
    /// or cancelled. Whichever of the engine's thread and the cancellation comes first wins.
    private final class Ticket<T: Sendable>: @unchecked Sendable {  // state guarded by `lock`
        private let lock = NSLock()
        private var continuation: CheckedContinuation<T, Error>?
        private var cancelled = false
        private var started = false

        /// Keeps the continuation; false (after resuming it) when cancelled already.
        func wait(_ c: CheckedContinuation<T, Error>) -> Bool {
            lock.lock()
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
