import Foundation
import NIOConcurrencyHelpers

/// The webcourier polls this node holds (SPEC §20 N3), each waiting on its account's inbox: a
/// local dispatch wakes the inboxes it wrote (`wake(_:)`); another node's dispatch is seen by
/// one batched read of the held inboxes' positions each time the store signals a commit
/// (`wake(positions:)`), whatever the number of polls held. Bounded: `maxHeld` in all, 16 per
/// account.
final class NotificationWaiters: Sendable {
    /// How a wait ended.
    enum End: Sendable {
        /// Something may be due: look again.
        case woken
        /// The poll period passed.
        case timedOut
        /// The server shuts down (SIGTERM): answer at once, the client polls again elsewhere.
        case closing
        /// Too many polls held (in all, or by this account): answer after a short hold.
        case full
    }

    private struct Waiter {
        let inbox: Int64
        let account: Int64
        let seq: Int64
        let answer: FirstAnswer<End>
    }
    private struct State {
        var waiters: [Int: Waiter] = [:]
        var perAccount: [Int64: Int] = [:]
        /// Moves each time an inbox is woken: a poll that read its inbox before a wake and
        /// registers after it is woken at once (the wake is not missed).
        var wakes: [Int64: Int] = [:]
        var next = 0
        var closing = false
        /// Polls of URLs that lead nowhere, held by address (`holdUnknown`).
        var unknown: [String: Int] = [:]
        var unknownHeld = 0
    }
    private let state = NIOLockedValueBox(State())
    let maxHeld: Int
    static let perAccount = 16

    init(maxHeld: Int) { self.maxHeld = max(1, maxHeld) }

    /// The most polls of unknown URLs (a guessed secret, a revoked token's) held a whole
    /// period at once, in all and per address: past it they are answered sooner, so no one
    /// holds the node's connections with URLs that lead nowhere.
    var maxUnknown: Int { max(8, maxHeld / 8) }
    static let unknownPerAddress = 4

    /// Whether a poll of an unknown URL from `address` may be held a whole period; if so it
    /// counts until `releaseUnknown`.
    func holdUnknown(_ address: String) -> Bool {
        state.withLockedValue { state in
            guard state.unknownHeld < maxUnknown, (state.unknown[address] ?? 0) < Self.unknownPerAddress else { return false }
            state.unknownHeld += 1
            state.unknown[address, default: 0] += 1
            return true
        }
    }

    func releaseUnknown(_ address: String) {
        state.withLockedValue { state in
            state.unknownHeld -= 1
            state.unknown[address, default: 1] -= 1
            if state.unknown[address] == 0 { state.unknown[address] = nil }
        }
    }

    /// How many polls are held now.
    var held: Int { state.withLockedValue { $0.waiters.count } }

    /// The inbox's wake count now: read before the inbox is, passed to `wait`.
    func wakeCount(_ inbox: Int64) -> Int { state.withLockedValue { $0.wakes[inbox] ?? 0 } }

    /// Waits until inbox `inbox` moves past `seq`, `timeout` passes or the server closes.
    /// `gone`: set going with a function that ends the wait when the client goes away.
    func wait(
        inbox: Int64,
        account: Int64,
        after seq: Int64,
        wakes: Int,
        upTo timeout: Duration,
        gone: (@escaping @Sendable () -> Void) -> Void
    ) async -> End {
        let id = state.withLockedValue { state -> Int in
            state.next &+= 1
            return state.next
        }
        let end = await FirstAnswer<End>.within(
            timeout,
            onTimeout: { [self] in forget(id) },
            { answer in
                let at = state.withLockedValue { state -> End? in
                    if state.closing { return .closing }
                    if (state.wakes[inbox] ?? 0) != wakes { return .woken }
                    guard state.waiters.count < maxHeld, (state.perAccount[account] ?? 0) < Self.perAccount else { return .full }
                    state.waiters[id] = Waiter(inbox: inbox, account: account, seq: seq, answer: answer)
                    state.perAccount[account, default: 0] += 1
                    return nil
                }
                if let at {
                    answer.finish(at)
                } else {
                    gone { [self] in
                        forget(id)
                        answer.finish(.timedOut)
                    }
                }
            }
        )
        forget(id)
        return end ?? .timedOut
    }

    private func forget(_ id: Int) {
        state.withLockedValue { state in
            guard let w = state.waiters.removeValue(forKey: id) else { return }
            state.perAccount[w.account]! -= 1
            if state.perAccount[w.account] == 0 { state.perAccount[w.account] = nil }
        }
    }

    /// Wakes the polls waiting on `inboxes` (a dispatch on this node wrote to them).
    func wake(_ inboxes: Set<Int64>) {
        let woken = state.withLockedValue { state -> [FirstAnswer<End>] in
            for inbox in inboxes { state.wakes[inbox, default: 0] &+= 1 }
            if state.wakes.count > 100_000 { state.wakes.removeAll() }
            return state.waiters.values.filter { inboxes.contains($0.inbox) }.map(\.answer)
        }
        for answer in woken { answer.finish(.woken) }
    }

    /// Wakes the polls whose inbox is now past where they started waiting.
    func wake(positions: [Int64: Int64]) {
        let woken = state.withLockedValue { state in
            state.waiters.values.filter { w in (positions[w.inbox] ?? 0) > w.seq }.map(\.answer)
        }
        for answer in woken { answer.finish(.woken) }
    }

    /// The inboxes held polls wait on.
    var heldInboxes: [Int64] { state.withLockedValue { Array(Set($0.waiters.values.map(\.inbox))) } }

    /// SIGTERM: every held poll is answered at once, and new ones too.
    func close() {
        let all = state.withLockedValue { state -> [FirstAnswer<End>] in
            state.closing = true
            return state.waiters.values.map(\.answer)
        }
        for answer in all { answer.finish(.closing) }
    }
}
