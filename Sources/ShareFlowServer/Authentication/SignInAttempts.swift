import Foundation
import NIOConcurrencyHelpers

/// Failed sign-ins per address, in this process's memory: the sign-in page's codes and the
/// console's admin tokens each keep one. Past `perMinute` in a minute an address is answered
/// 429 before its form is read (60 bits are not guessed at 10 a minute, and a guesser does
/// not get to use the server's time).
final class SignInAttempts: Sendable {
    private let failures = NIOLockedValueBox([String: (count: Int, since: Double)]())
    let perMinute: Int
    /// The monotonic clock in seconds.
    let now: @Sendable () -> Double

    init(perMinute: Int, now: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        self.perMinute = perMinute
        self.now = now
    }

    /// Takes a try for `address`: false once it has had `perMinute` codes that did not sign in
    /// this minute, counting the tries still being answered (each is counted before its form is
    /// read, so many sent at once are held to the same number). A try that was not a wrong code
    /// is given back (`giveBack`).
    func take(from address: String) -> Bool {
        let t = now()
        return failures.withLockedValue { failures in
            if failures.count > 4096 { failures = failures.filter { t - $0.value.since < 60 } }
            if let f = failures[address], t - f.since < 60 {
                guard f.count < perMinute else { return false }
                failures[address] = (f.count + 1, f.since)
            } else {
                failures[address] = (1, t)
            }
            return true
        }
    }

    /// Gives back a try `take` counted that was not a wrong code (it signed in, or its form was
    /// refused before a code was looked at).
    func giveBack(from address: String) {
        failures.withLockedValue { failures in
            if let f = failures[address], f.count > 0 { failures[address] = (f.count - 1, f.since) }
        }
    }
}
