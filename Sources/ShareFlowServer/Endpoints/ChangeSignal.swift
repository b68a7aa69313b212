import Foundation
import NIOConcurrencyHelpers

/// Wakes the change streams of this node when the store changed (on PostgreSQL, a notice from
/// any node: `PostgresChangeNotices`), so a stream looks at its feed then rather than at its
/// next poll. A stream notes the generation before it reads its feed and waits only if
/// nothing was signalled since: a poke between the read and the wait is not missed.
final class ChangeSignal: Sendable {
    private struct State {
        var generation = 0
        var credentialsEpoch = 0
        var closing = false
        var waiters: [Int: FirstAnswer<Void>] = [:]
        var nextWaiter = 0
    }
    private let state = NIOLockedValueBox(State())

    /// The generation now: what a stream passes to `wait` after reading its feed.
    var generation: Int { state.withLockedValue { $0.generation } }

    /// How many streams wait now.
    var waiting: Int { state.withLockedValue { $0.waiters.count } }

    /// Moves each time the store's credentials changed (a token revoked anywhere: `StoreWatch`).
    var credentialsEpoch: Int { state.withLockedValue { $0.credentialsEpoch } }

    /// Whether the server is shutting down: a stream ends at once rather than holding the
    /// shutdown for `shutdownSeconds` (its client resumes on another node, or on this one
    /// restarted, with `Last-Event-ID`: nothing is lost).
    var isClosing: Bool { state.withLockedValue { $0.closing } }

    /// The server shuts down (SIGTERM): every stream ends.
    func close() {
        state.withLockedValue { $0.closing = true }
        poke()
    }

    /// A credential was revoked: every stream ends (its client resumes with `Last-Event-ID`,
    /// authenticated again), so a revoked token's stream does not go on.
    func credentialsChanged() {
        state.withLockedValue { $0.credentialsEpoch &+= 1 }
        poke()
    }

    /// Wakes every waiting stream.
    func poke() {
        let waiting = state.withLockedValue { state -> [FirstAnswer<Void>] in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiting { waiter.finish(()) }
    }

    /// Returns when poked after `generation`, or after `timeout` (the poll that covers a lost
    /// notice, and a store with no notices: SQLite).
    func wait(after generation: Int, upTo timeout: Duration) async {
        let id = state.withLockedValue { state in
            state.nextWaiter &+= 1
            return state.nextWaiter
        }
        _ = await FirstAnswer<Void>.within(
            timeout,
            onTimeout: { [state] in
                _ = state.withLockedValue { $0.waiters.removeValue(forKey: id) }
            },
            { waiter in
                let waiting = state.withLockedValue { state in
                    guard state.generation == generation else { return false }
                    state.waiters[id] = waiter
                    return true
                }
                if !waiting { waiter.finish(()) }
            }
        )
    }
}
