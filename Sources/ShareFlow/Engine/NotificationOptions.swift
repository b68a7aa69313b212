/// SPEC §20's bounds and settings (`notifications.*` in the config file).
///
/// ```swift
/// var options = Engine.Options()
/// options.notifications.queueMax = 50
/// options.notifications.dispatch = .deferred   // a server's own dispatcher runs it
/// ```
public struct NotificationOptions: Sendable {
    /// When the subscriptions of a committed change are evaluated.
    public enum Dispatch: Sendable {
        /// At once, after the commit, on the caller's thread (scripts, the REPL, tests): a
        /// `subscription.fired` observer has run when the write returns.
        case afterCommit
        /// Later, by whoever `Engine.notificationsPending` wakes (a server's dispatcher), so a
        /// write costs the same however many subscriptions its zone has.
        case deferred
    }

    /// When subscriptions are evaluated; `.afterCommit` by default.
    public var dispatch = Dispatch.afterCommit
    /// The most notifications an account's inbox keeps per container (`queueMax`): past it the
    /// oldest are dropped and counted.
    public var queueMax = 200
    /// The most subscriptions one user has in a container (every database).
    public var maxSubscriptionsPerUser = 1000
    /// The most of them naming no zone (database and zone-wide subscriptions).
    public var maxZonelessPerUser = 100
    /// The most subscriptions, everyone's, naming one zone.
    public var maxSubscriptionsPerZone = 10000
    /// What the subscriptions naming one zone may cost together, each change there (1 each,
    /// plus its predicate's parts and values: `Predicate.cost`).
    public var maxCostPerZone = 100_000
    /// What one user's zone-less subscriptions may cost together, each change in their reach.
    public var maxZonelessCostPerUser = 20_000
    /// The most device tokens one user has in a container: past it the least recently polled goes.
    public var maxTokensPerUser = 64
    /// Days a device token nobody polls is kept.
    public var tokenIdleDays: Double = 30
    /// Seconds another process's changes wait in the outbox before this one dispatches them
    /// (that process may be gone).
    public var takeoverSeconds: Double = 2
    /// How much one dispatch job evaluates before it lets other work run: changes, and
    /// predicate parts times subscriptions.
    public var changesPerJob = 256
    /// See `changesPerJob`.
    public var evaluationsPerJob = 50000

    /// The defaults.
    public init() {}
}
