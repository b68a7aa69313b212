import Foundation

/// Requests per token over a window (SPEC §13, config `server.rateLimit`): a token bucket per
/// user token (or API token, without one) that holds `requests` and refills over `perSeconds`.
/// Checked before a request reaches the engine, so a client over its share costs the engine
/// nothing, and before authentication, so guessing tokens is throttled too.
final class RateLimiter: @unchecked Sendable {  // state guarded by `lock`
    let requests: Int
    let perSeconds: Double
    private let lock = NSLock()
    private var buckets: [String: (tokens: Double, at: Double)] = [:]
    /// The most buckets kept: beyond, full ones are forgotten (a client sending made-up tokens
    /// cannot grow the table without bound).
    private let maxBuckets = 100_000

    init(requests: Int, perSeconds: Double) {
        self.requests = requests
        self.perSeconds = perSeconds
    }

    private var refill: Double { Double(requests) / perSeconds }

    /// Takes one request from `key`'s bucket: nil when allowed, else the seconds until one is.
    func take(_ key: String, now: Double = ProcessInfo.processInfo.systemUptime) -> Double? {
        lock.lock()
        defer { lock.unlock() }
        var bucket = buckets[key] ?? (Double(requests), now)
        bucket.tokens = min(Double(requests), bucket.tokens + (now - bucket.at) * refill)
        bucket.at = now
        guard bucket.tokens >= 1 else {
            buckets[key] = bucket
            return (1 - bucket.tokens) / refill
        }
        bucket.tokens -= 1
        buckets[key] = bucket
        if buckets.count > maxBuckets { forgetFull(now: now) }
        return nil
    }

    private func forgetFull(now: Double) {
        let capacity = Double(requests)
        buckets = buckets.filter { $0.value.tokens + (now - $0.value.at) * refill < capacity }
        if buckets.count > maxBuckets { buckets.removeAll() }
    }
}
