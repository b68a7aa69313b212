import NIOConcurrencyHelpers

/// Waits for whichever comes first, an answer or a timer: the rate limiter's shared bucket
/// (answer within 0.5 s, or the request is refused) and a change stream's wait (a poke, or
/// the next poll). The loser is cleaned up: an answer cancels the timer, so a wait ended
/// early leaves no sleeping task behind.
///
/// ```swift
/// let tokens = await FirstAnswer<Int>.within(.milliseconds(500)) { answer in
///     Task { answer.finish(try? await bucket.take()) }
/// }   // nil after 500 ms
/// ```
final class FirstAnswer<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T?, Never>?
        var timer: Task<Void, Never>?
        var finished = false
    }
    private let state = NIOLockedValueBox(State())

    private init() {}

    /// Ends the wait with `value` (nil: no answer) unless it already ended; later calls do
    /// nothing.
    func finish(_ value: T?) {
        let (continuation, timer) = state.withLockedValue { state in
            defer {
                state.continuation = nil
                state.timer = nil
                state.finished = true
            }
            return (state.continuation, state.timer)
        }
        timer?.cancel()
        continuation?.resume(returning: value)
    }

    /// The first value given to `finish` by whatever `start` set going, or nil after
    /// `timeout` (then `onTimeout` runs, to forget the waiter).
    static func within(
        _ timeout: Duration,
        onTimeout: @escaping @Sendable () -> Void = {},
        _ start: (FirstAnswer<T>) -> Void
    ) async -> T? {
        let answer = FirstAnswer<T>()
        return await withCheckedContinuation { continuation in
            answer.state.withLockedValue { $0.continuation = continuation }
            let timer = Task { [answer] in
                guard (try? await Task.sleep(for: timeout)) != nil else { return }
                let won = answer.state.withLockedValue { !$0.finished }
                if won { onTimeout() }
                answer.finish(nil)
            }
            let late = answer.state.withLockedValue { state in
                if !state.finished { state.timer = timer }
                return state.finished
            }
            if late { timer.cancel() }
            start(answer)
        }
    }
}
