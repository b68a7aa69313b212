import Foundation

/// How the web console's sessions live (`serve --console`, SPEC §21 C4).
///
/// ```swift
/// var server = CloudKitServer(engine: engine, host: "127.0.0.1", port: 8080, logger: logger)
/// server.console = WebConsoleOptions()
/// ```
public struct WebConsoleOptions: Sendable {
    /// A session not used for this long ends (seconds).
    public var idleSeconds: Double = 30 * 60
    /// A session ends this long after sign-in however much it is used (seconds).
    public var lifetimeSeconds: Double = 8 * 3600
    /// Sessions kept at once; a sign-in past it ends the least recently used.
    public var maxSessions = 64
    /// How long a zone's live feed lasts before the page reconnects (seconds).
    public var feedSeconds: Double = 300
    /// Live feeds one session may hold at once.
    public var feedsPerSession = 4
    /// Failed sign-ins one address may make per minute (the admin token is 256 bits: this
    /// keeps a guesser from using the server's time, not from guessing).
    public var failedSignInsPerMinute = 10

    public init() {}
}
