import Foundation
import NIOConcurrencyHelpers
import ShareFlow

/// The console's signed-in browsers (SPEC §21 C4), in this process's memory, by the hash of
/// their cookie: a session is made only by a sign-in with an admin token, always with a fresh
/// token (a cookie a browser already had is never adopted: no fixation), and ends when idle
/// too long, when too old, at sign-out, when its admin token is revoked, or when the server
/// stops. Sessions do not move between nodes: a console behind a balancer needs sticky routing.
final class ConsoleSessions: Sendable {
    /// One signed-in browser.
    struct Session: Sendable {
        /// The admin token it signed in with, by hash: looked up again when credentials change.
        let adminTokenHash: String
        /// The token every form of the session carries (CSRF).
        let csrf: String
        let createdAt: Double
        var lastSeenAt: Double
        /// The credentials epoch (`ChangeSignal.credentialsEpoch`) its admin token was last found at.
        var epoch: Int
        /// A message for the next page (what the last action did, or why it was refused).
        var flash: Flash?
        /// Live feeds open now.
        var feeds = 0
    }

    /// What the last action did, shown once on the next page.
    struct Flash: Sendable {
        let ok: Bool
        let text: String
        /// A policy's denial: its decision, shown beside the message.
        var denial: Denial?
    }

    /// The decision that refused an action (SPEC §18 P3): which policy, why, and where its code is.
    struct Denial: Sendable {
        let decision: Int
        let point: String
        let policy: String
        let reason: String
        let location: String
    }

    private struct State {
        var sessions: [String: Session] = [:]
    }

    private let state = NIOLockedValueBox(State())
    let options: WebConsoleOptions
    /// The monotonic clock in seconds; tests move it.
    let now: @Sendable () -> Double

    /// Failed sign-ins with an admin token, per address.
    let signIns: SignInAttempts

    init(options: WebConsoleOptions, now: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        self.options = options
        self.now = now
        self.signIns = SignInAttempts(perMinute: options.failedSignInsPerMinute, now: now)
    }

    /// A new session for an admin token: its cookie token (only the browser keeps it).
    func open(adminTokenHash: String, epoch: Int) -> String {
        let token = ConsoleSessions.randomHex()
        let t = now()
        let session = Session(adminTokenHash: adminTokenHash, csrf: ConsoleSessions.randomHex(), createdAt: t, lastSeenAt: t, epoch: epoch)
        state.withLockedValue { state in
            if state.sessions.count >= options.maxSessions,
                let oldest = state.sessions.min(by: { $0.value.lastSeenAt < $1.value.lastSeenAt })?.key
            {
                state.sessions.removeValue(forKey: oldest)
            }
            state.sessions[Credentials.hash(token)] = session
        }
        return token
    }

    /// The session of a cookie token, seen now; nil (and forgotten) when it has expired.
    func find(_ token: String) -> (key: String, session: Session)? {
        guard token.utf8.count == 64 else { return nil }
        let key = Credentials.hash(token)
        let t = now()
        return state.withLockedValue { state in
            guard var session = state.sessions[key] else { return nil }
            if t - session.lastSeenAt > options.idleSeconds || t - session.createdAt > options.lifetimeSeconds {
                state.sessions.removeValue(forKey: key)
                return nil
            }
            session.lastSeenAt = t
            state.sessions[key] = session
            return (key, session)
        }
    }

    /// Whether the session is still open (a live feed asks between its reads).
    func isOpen(_ key: String) -> Bool {
        let t = now()
        return state.withLockedValue { state in
            guard let s = state.sessions[key] else { return false }
            return t - s.lastSeenAt <= options.idleSeconds && t - s.createdAt <= options.lifetimeSeconds
        }
    }

    /// Notes that the session's admin token was found again at `epoch`.
    func confirm(_ key: String, epoch: Int) {
        state.withLockedValue { $0.sessions[key]?.epoch = epoch }
    }

    /// Ends one session.
    func end(_ key: String) {
        _ = state.withLockedValue { $0.sessions.removeValue(forKey: key) }
    }

    /// Ends every session signed in with this admin token (it was revoked).
    func endAll(adminTokenHash: String) {
        state.withLockedValue { $0.sessions = $0.sessions.filter { $0.value.adminTokenHash != adminTokenHash } }
    }

    /// Leaves a message for the session's next page.
    func flash(_ key: String, _ flash: Flash) {
        state.withLockedValue { $0.sessions[key]?.flash = flash }
    }

    /// Takes the session's message, if any.
    func takeFlash(_ key: String) -> Flash? {
        state.withLockedValue { state in
            defer { state.sessions[key]?.flash = nil }
            return state.sessions[key]?.flash
        }
    }

    /// Takes a live feed's place; false when the session has all it may hold.
    func openFeed(_ key: String) -> Bool {
        state.withLockedValue { state in
            guard let s = state.sessions[key], s.feeds < options.feedsPerSession else { return false }
            state.sessions[key]?.feeds = s.feeds + 1
            return true
        }
    }

    /// Gives a live feed's place back.
    func closeFeed(_ key: String) {
        state.withLockedValue { state in
            if let n = state.sessions[key]?.feeds { state.sessions[key]?.feeds = max(0, n - 1) }
        }
    }

    /// Sessions open now.
    var count: Int { state.withLockedValue { $0.sessions.count } }

    /// 32 random bytes as 64 hex digits.
    static func randomHex() -> String {
        RandomIdentifier.bytes(32).map { String(format: "%02x", $0) }.joined()
    }

    /// Whether two secrets are equal, in a time that does not depend on where they differ.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        guard x.count == y.count, !x.isEmpty else { return false }
        var diff: UInt8 = 0
        for i in 0..<x.count { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}
