import Foundation
import XCTest

@testable import ShareFlowServer

/// Whichever comes first, an answer or a timer: the shared rate limit's 0.5 s and a change
/// stream's wait both rest on it.
final class FirstAnswerTests: XCTestCase {
    private final class Count: @unchecked Sendable {  // guarded by lock
        let lock = NSLock()
        var value = 0
        func add() { lock.withLock { value += 1 } }
        var now: Int { lock.withLock { value } }
    }

    func testAnAnswerBeforeTheTimerIsReturnedAndTheTimerNeverFires() async {
        let timeouts = Count()
        let started = Date()
        let value = await FirstAnswer<Int>.within(.milliseconds(500), onTimeout: timeouts.add) { answer in
            Task {
                answer.finish(7)
                answer.finish(8)
            }
        }
        XCTAssertEqual(value, 7)
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.5)
        try? await Task.sleep(for: .milliseconds(700))
        XCTAssertEqual(timeouts.now, 0, "the timer of an answered wait ran")
    }

    func testTheTimerEndsAWaitWithNoAnswerOnce() async {
        let timeouts = Count()
        let late = Count()
        let value = await FirstAnswer<Int>.within(.milliseconds(30), onTimeout: timeouts.add) { answer in
            Task {
                try? await Task.sleep(for: .milliseconds(200))
                answer.finish(1)  // too late: nothing happens
                late.add()
            }
        }
        XCTAssertNil(value)
        XCTAssertEqual(timeouts.now, 1)
        try? await Task.sleep(for: .milliseconds(300))
        XCTAssertEqual(late.now, 1)
        XCTAssertEqual(timeouts.now, 1)
    }

    func testAnAnswerGivenWhileStartingIsReturned() async {
        let value = await FirstAnswer<String>.within(.seconds(5)) { $0.finish("at once") }
        XCTAssertEqual(value, "at once")
    }

    /// A change stream's wait: a poke ends it at once, a poke before it means it never waits,
    /// and one that times out is forgotten.
    func testAChangeSignalWaitEndsOnAPokeOrItsTimeout() async {
        let signal = ChangeSignal()
        let before = signal.generation
        signal.poke()
        var started = Date()
        await signal.wait(after: before, upTo: .seconds(5))
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.5, "a poke before the wait was missed")

        let now = signal.generation
        started = Date()
        async let waited: Void = signal.wait(after: now, upTo: .seconds(5))
        try? await Task.sleep(for: .milliseconds(50))
        signal.poke()
        await waited
        XCTAssertLessThan(Date().timeIntervalSince(started), 1)

        started = Date()
        await signal.wait(after: signal.generation, upTo: .milliseconds(40))
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.035)
        XCTAssertEqual(signal.waiting, 0, "a timed-out wait stayed registered")
    }
}
