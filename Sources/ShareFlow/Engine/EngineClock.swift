import Foundation
import Synchronization

/// "Now" as the engine and plugins read it (SPEC §18 P5): the system's clock, or a time a test
/// set (`test.clock.set(t)`, `test.clock.advance(s)` in `shareflow test`), so an expiry policy is
/// tested without sleeping. Process-wide: `shareflow test` runs one test at a time and puts the
/// clock back after each; nothing else sets it.
///
/// ```swift
/// EngineClock.set(Date(timeIntervalSince1970: 1_800_000_000))
/// EngineClock.set(EngineClock.now().addingTimeInterval(3600))   // an hour later, at once
/// EngineClock.reset()                                            // the system's clock again
/// ```
public enum EngineClock {
    /// Microseconds since 1970 of the set time, or `Int64.min`: the system's clock.
    private static let setTo = Atomic<Int64>(.min)

    /// The current time: the set one, or the system's.
    @inline(__always)
    public static func now() -> Date {
        let set = setTo.load(ordering: .relaxed)
        return set == .min ? Date() : Date(timeIntervalSince1970: Double(set) / 1e6)
    }

    /// Seconds since 1970 of `now()`.
    @inline(__always)
    public static var seconds: Double { now().timeIntervalSince1970 }

    /// The farthest from 1970 the clock may be set, in seconds: 10,000 years.
    public static let limit = 315_576_000_000.0

    /// Whether `date` is a time the clock can be set to: finite, within `limit` of 1970.
    public static func accepts(_ date: Date) -> Bool {
        date.timeIntervalSince1970.isFinite && abs(date.timeIntervalSince1970) <= limit
    }

    /// Stops the clock at `date`, held within `limit` of 1970 (callers check with `accepts`).
    public static func set(_ date: Date) {
        let seconds = date.timeIntervalSince1970.isFinite ? min(max(date.timeIntervalSince1970, -limit), limit) : 0
        setTo.store(Int64((seconds * 1e6).rounded()), ordering: .relaxed)
    }

    /// The system's clock again.
    public static func reset() { setTo.store(.min, ordering: .relaxed) }
}
