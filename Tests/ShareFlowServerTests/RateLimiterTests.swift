import ShareFlowTestKit
import XCTest

@testable import ShareFlowServer

/// The rate limiter's bookkeeping: a bounded least-recently-used map, and buckets keyed on the
/// identity a credential resolved to, never on its text.
final class RateLimiterTests: XCTestCase {
    /// Against a plain model (an array in recency order) over random operations.
    func testRecentlyUsedForgetsTheLeastRecentlyUsedFirst() {
        var random = SeededRandom(seed: 42)
        func next(_ n: Int) -> Int { random.next(n) }
        for capacity in [1, 2, 5, 17] {
            var map = RecentlyUsed<Int, Int>(capacity: capacity)
            var model: [(key: Int, value: Int)] = []  // most recent last
            for step in 0..<5_000 {
                let key = next(capacity * 3)
                if next(2) == 0 {
                    let value = step
                    map[key] = value
                    model.removeAll { $0.key == key }
                    model.append((key, value))
                    if model.count > capacity { model.removeFirst() }
                } else {
                    let expected = model.first { $0.key == key }?.value
                    XCTAssertEqual(map[key], expected, "capacity \(capacity) step \(step)")
                    if let i = model.firstIndex(where: { $0.key == key }) { model.append(model.remove(at: i)) }
                }
                XCTAssertEqual(map.count, model.count)
            }
        }
    }

    func testBucketsFollowTheIdentityNotTheCredentialText() {
        let limiter = RateLimiter(requests: 2, perSeconds: 100, capacity: 10)
        // Unknown credentials have no identity: their requests are their address's to count.
        XCTAssertNil(limiter.identity(of: "web guess1"))
        // Once accepted, two credentials of one account are the account's.
        limiter.remember(credential: "web alice-1", identity: "account 1")
        limiter.remember(credential: "web alice-2", identity: "account 1")
        XCTAssertEqual(limiter.identity(of: "web alice-2"), "account 1")
        // One bucket for the account, whichever credential its requests show.
        XCTAssertNil(limiter.take("identity account 1", now: 0))
        XCTAssertNil(limiter.take("identity account 1", now: 0))
        XCTAssertNotNil(limiter.take("identity account 1", now: 0), "the account's bucket is empty")
        XCTAssertNil(limiter.take("identity account 1", now: 60), "it refills: 2 per 100 s, one by 50 s")
        XCTAssertNil(limiter.take("client 10.0.0.1", now: 0), "the address's bucket is its own")
    }
}
