import CoreMetrics
import Foundation
import ShareFlow

/// Requests per identity over a window (SPEC §13, config `server.rateLimit`): a token bucket
/// that holds `requests` and refills over `perSeconds`, checked before a request reaches the
/// engine, so a client over its share costs the engine nothing.
///
/// Buckets are keyed on who a request is, never on the text of its credentials: a credential
/// the engine has accepted is remembered with the identity it resolved to (an account, or an
/// API token's container for anonymous reads), and its requests take from that identity's
/// bucket. A request whose credential is not (yet) known — a first request, a guessed token, a
/// case variant of a key ID — takes from its client address's bucket, so guessing, refused and
/// unauthenticated requests never use up a signed-in user's requests. Buckets and remembered
/// credentials are bounded; past the bound the least recently used go first.
///
/// On a PostgreSQL store the buckets are shared by every node (SPEC §16, `SharedRateBuckets`):
/// a request this node's own bucket grants is then taken from the shared one too, which decides.
/// This node's bucket goes first, so a client over its share is refused without a round trip
/// (what one node granted, the shared bucket granted too, so it is never fuller). A request
/// the shared bucket does not answer for within `sharedWait` is refused as unavailable (503):
/// a node deciding alone would let the nodes together grant a bucket each.
final class RateLimiter: @unchecked Sendable {  // state guarded by `lock`
    let requests: Int
    let perSeconds: Double
    private let lock = NSLock()
    private var buckets = RecentlyUsed<String, (tokens: Double, at: Double)>(capacity: 100_000)
    private var identities = RecentlyUsed<String, String>(capacity: 100_000)
    private let shared: (any SharedRateBuckets)?
    /// How long a request waits for the shared bucket's answer.
    static let sharedWait = 0.5

    init(requests: Int, perSeconds: Double, capacity: Int = 100_000, shared: (any SharedRateBuckets)? = nil) {
        self.requests = requests
        self.perSeconds = perSeconds
        self.shared = shared
        buckets = RecentlyUsed(capacity: capacity)
        identities = RecentlyUsed(capacity: capacity)
    }

    private var refill: Double { Double(requests) / perSeconds }

    /// The identity `credential` was accepted as, if it was.
    func identity(of credential: String) -> String? {
        lock.lock()
        defer { lock.unlock() }
        return identities[credential]
    }

    /// Remembers that `credential` was accepted as `identity`: its next requests are the
    /// identity's to count, after authentication (`IdentityRateLimitMiddleware`).
    func remember(credential: String, identity: String) {
        lock.lock()
        defer { lock.unlock() }
        if identities[credential] == nil { identities[credential] = identity }
    }

    /// What a request's take from its buckets decided.
    enum Verdict: Equatable {
        case granted
        /// Over its share: the seconds until a request is granted.
        case throttled(Double)
        /// The shared bucket (PostgreSQL) did not answer within `sharedWait`: the request is
        /// refused as the server's failure (503), never granted unchecked — nodes deciding alone
        /// would grant a bucket each.
        case unchecked
    }

    /// Takes one request from `key`'s bucket, and from the shared one where there is one.
    func take(_ key: String) async -> Verdict {
        if let wait = take(key, now: ProcessInfo.processInfo.systemUptime) { return .throttled(wait) }
        guard let shared else { return .granted }
        let (requests, perSeconds) = (self.requests, self.perSeconds)
        let answer = await RateLimiter.first(within: RateLimiter.sharedWait) {
            try await shared.take(key, requests: requests, perSeconds: perSeconds)
        }
        switch answer {
        case .some(.none):
            return .granted
        case .some(.some(let wait)):
            giveBack(key)
            return .throttled(wait)
        case .none:
            // Not taken from the shared bucket: this node's own is given its request back too.
            giveBack(key)
            Counter(label: "shareflow_rate_limit_unchecked_total").increment()
            return .unchecked
        }
    }

    /// Gives `key`'s request back to this node's bucket (the shared bucket refused it, or was
    /// not asked): this node's bucket then holds no less than the shared one.
    private func giveBack(_ key: String) {
        lock.withLock {
            if var bucket = buckets[key] {
                bucket.tokens = min(Double(requests), bucket.tokens + 1)
                buckets[key] = bucket
            }
        }
    }

    /// The answer of `body`, or nil when it failed or took longer than `seconds` (left to end
    /// on its own: a query in flight is not cancelled).
    static func first<T: Sendable>(within seconds: Double, _ body: @escaping @Sendable () async throws -> T) async -> T? {
        await FirstAnswer<T>.within(.nanoseconds(Int64(seconds * 1e9))) { answer in
            Task { answer.finish(try? await body()) }
        }
    }

    /// Whether `key`'s bucket (this node's) holds a request, without taking it: nil when it
    /// does, else the seconds until it will.
    func peek(_ key: String, now: Double = ProcessInfo.processInfo.systemUptime) -> Double? {
        lock.lock()
        defer { lock.unlock() }
        guard let bucket = buckets[key] else { return nil }
        let tokens = min(Double(requests), bucket.tokens + (now - bucket.at) * refill)
        return tokens >= 1 ? nil : (1 - tokens) / refill
    }

    /// Takes one request from this node's bucket for `key`: nil when allowed, else the seconds
    /// until one is.
    func take(_ key: String, now: Double) -> Double? {
        lock.lock()
        defer { lock.unlock() }
        var bucket = buckets[key] ?? (Double(requests), now)
        bucket.tokens = min(Double(requests), bucket.tokens + (now - bucket.at) * refill)
        bucket.at = now
        defer { buckets[key] = bucket }
        guard bucket.tokens >= 1 else { return (1 - bucket.tokens) / refill }
        bucket.tokens -= 1
        return nil
    }
}

/// A map of at most `capacity` entries that forgets the least recently used one to make room:
/// a hash map for the entries and a doubly linked list (through indices) for their order.
struct RecentlyUsed<Key: Hashable, Value> {
    private struct Node {
        var key: Key
        var value: Value
        var newer: Int?
        var older: Int?
    }
    let capacity: Int
    private var index: [Key: Int] = [:]
    private var nodes: [Node] = []
    private var newest: Int?
    private var oldest: Int?

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { index.count }

    subscript(key: Key) -> Value? {
        mutating get {
            guard let i = index[key] else { return nil }
            touch(i)
            return nodes[i].value
        }
        set {
            if let i = index[key] {
                guard let newValue else { return }  // entries are forgotten by age only
                nodes[i].value = newValue
                touch(i)
                return
            }
            guard let newValue else { return }
            let slot: Int
            if index.count >= capacity, let last = oldest {
                // Reuse the oldest entry's slot.
                unlink(last)
                index[nodes[last].key] = nil
                nodes[last] = Node(key: key, value: newValue)
                slot = last
            } else {
                nodes.append(Node(key: key, value: newValue))
                slot = nodes.count - 1
            }
            index[key] = slot
            pushNewest(slot)
        }
    }

    private mutating func touch(_ i: Int) {
        guard newest != i else { return }
        unlink(i)
        pushNewest(i)
    }

    private mutating func unlink(_ i: Int) {
        let (newer, older) = (nodes[i].newer, nodes[i].older)
        if let newer { nodes[newer].older = older } else { newest = older }
        if let older { nodes[older].newer = newer } else { oldest = newer }
        nodes[i].newer = nil
        nodes[i].older = nil
    }

    private mutating func pushNewest(_ i: Int) {
        nodes[i].older = newest
        nodes[i].newer = nil
        if let n = newest { nodes[n].newer = i }
        newest = i
        if oldest == nil { oldest = i }
    }
}
