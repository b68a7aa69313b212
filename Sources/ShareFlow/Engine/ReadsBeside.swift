import Foundation

/// Reads beside the write (SPEC §16 M5): a thread with a store reader of its own
/// (`Store.makeReader`) reads without the engine's lock, on its own connection, while another
/// thread holds the lock for a write, a policy or an observer.
///
/// ```swift
/// engine.allowReadsBeside()                       // once, before the readers start
/// let reader = try engine.store.makeReader()      // on each reading thread
/// engine.attachReader(reader)
/// let (metadata, _) = try session.container(id).fetchShareMetadataResults([url])   // no lock taken
/// ```
///
/// What keeps it free of deadlock: the lock is only ever waited for while holding a reader
/// (a read that asks a policy, or delivers its events), never the other way round. A thread
/// holding the lock reads through the store's own connection (or its own reader, already
/// open), so it never waits for another thread's reader; and every write, every policy, every
/// observer and so every Lua state is reached under the lock (plugins stay confined).
///
/// What a read beside the lock must not touch, and does not: the open transaction's state
/// (`pendingEvents`, the store's `current`), the event bus's lists (`EventBus.hasObservers`
/// reads an atomic mask), policies and Lua (asked under the lock). Its events wait in the
/// thread's own list and are delivered under the lock once the read is over, each in the
/// fault scope it was sent in.
final class EngineThreadCalls {
    /// How deep this thread is in the engine's lock.
    var lockDepth = 0
    /// This thread's own connection, for reads beside the lock.
    var reader: StoreReader?
    /// How deep this thread is in reads on `reader`.
    var besideDepth = 0
    /// Events sent by reads beside the lock, delivered when the outermost is over.
    var besideEvents: [(event: Event, scope: FaultScope?)] = []
    /// Read events held back while this thread's work may be run again
    /// (`Engine.holdReadEvents`); nil: not holding.
    var heldReadEvents: [(event: Event, scope: FaultScope?)]?
}

extension Engine {
    /// Lets threads that attach a reader (`attachReader`) read without the lock. Called once,
    /// before any such thread runs; until then every call takes the lock, as a script's do.
    package func allowReadsBeside() {
        lock.lock()
        readsBeside = true
        lock.unlock()
    }

    /// Gives the calling thread `reader` for its reads from now on (nil: reads take the lock).
    package func attachReader(_ reader: StoreReader?) {
        threadCalls.reader = reader
    }

    /// The account a plugin's authenticator names for `request` (`Authenticators`), asked
    /// under the lock: authenticators are Lua, confined with the rest of their plugin.
    package func authenticate(_ request: AuthenticationRequest) throws -> (account: Account, authenticator: String)? {
        try locked { try authenticators.authenticate(request) }
    }

    /// Lets go of a write lock the driver was granted that no write claimed
    /// (`Store.releaseUnclaimedLock`), under the engine's lock: a write on a reading thread
    /// (an observer's) may be claiming that same lock at the same moment.
    package func releaseUnclaimedLock() {
        locked { store.releaseUnclaimedLock() }
    }

    /// The calling thread's state in this engine, made on first use.
    var threadCalls: EngineThreadCalls {
        let dictionary = Thread.current.threadDictionary
        if let calls = dictionary[threadKey] as? EngineThreadCalls { return calls }
        let calls = EngineThreadCalls()
        dictionary[threadKey] = calls
        return calls
    }

    /// Runs `body` between the engine's calls, holding its lock: what a server's signal handler
    /// does to the engine's plugins (a reload, SPEC §18 P1) happens between two decisions,
    /// never in the middle of one.
    public func betweenCalls<T>(_ body: () throws -> T) rethrows -> T { try locked(body) }

    /// Runs `body` holding the engine's lock (re-entrant), noting it for this thread where
    /// reads beside it are allowed.
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        guard readsBeside else { return try body() }
        let calls = threadCalls
        calls.lockDepth += 1
        defer { calls.lockDepth -= 1 }
        return try body()
    }

    /// The calling thread's state when it may read beside the lock now: reads allowed, a
    /// reader attached, the lock not held.
    var besideCalls: EngineThreadCalls? {
        guard readsBeside else { return nil }
        let calls = threadCalls
        return calls.lockDepth == 0 && calls.reader != nil ? calls : nil
    }

    /// `body` on the thread's own reader, without the lock; its events delivered under the
    /// lock once the outermost such read is over.
    func readBeside<T>(_ calls: EngineThreadCalls, _ body: (StoreTransaction) throws -> T) throws -> T {
        guard let reader = calls.reader else { preconditionFailure("a read beside the lock on a thread with no reader") }
        calls.besideDepth += 1
        let result: T
        do {
            result = try store.read(on: reader, body)
        } catch {
            calls.besideDepth -= 1
            if calls.besideDepth == 0 { deliverBesideEvents(calls) }
            throw error
        }
        calls.besideDepth -= 1
        if calls.besideDepth == 0 { deliverBesideEvents(calls) }
        return result
    }

    /// Delivers what reads beside the lock sent, under the lock.
    private func deliverBesideEvents(_ calls: EngineThreadCalls) {
        guard !calls.besideEvents.isEmpty else { return }
        let sent = calls.besideEvents
        calls.besideEvents.removeAll()
        deliverKept(sent)
    }

    /// Delivers events kept back (by a read beside the lock, or held while work may run
    /// again), under the lock, each in the fault scope it was sent in: its observers' engine
    /// calls are the request's, as when it is delivered at once.
    func deliverKept(_ sent: [(event: Event, scope: FaultScope?)]) {
        locked {
            for (event, scope) in sent where events.hasObservers(event.kind) {
                if let scope {
                    FaultScope.run(scope) { emitLocked(event) }
                } else {
                    emitLocked(event)
                }
            }
        }
    }
}
