import Foundation
import GRDB
import Logging

/// The sharing engine: the account directory, containers and their databases, shares and
/// participants, the operations, the events and the policies — over one `Store`.
///
/// ```swift
/// let engine = try Engine(store: Store(path: ":memory:"))
/// let alice = try engine.accounts.create(email: "alice@example.com")
/// let container = try engine.session(for: "alice@example.com").container("iCloud.com.example.app")
/// ```
///
/// The engine is synchronous and serialised by one recursive lock: calls made from Lua run
/// on the Lua thread with no hop, and observers run on the caller's thread after commit.
public final class Engine: @unchecked Sendable {
    public let store: Store
    public let options: Options
    let lock = NSRecursiveLock()
    public var logger: Logger

    public struct Options: Sendable {
        /// R8: most participants per share, owner included.
        public var maxParticipants = 100
        public init() {}
    }

    public init(store: Store, options: Options = Options(), logger: Logger = Logger(label: "shareflow")) {
        self.store = store
        self.options = options
        self.logger = logger
    }

    /// Runs `body` under the engine lock.
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
