import Foundation

/// Acting as one account: the caller of everything done through its containers (O1).
///
/// ```swift
/// let alice = try engine.session(for: "alice@example.com")
/// let db = try alice.container("iCloud.com.example.app").privateCloudDatabase
/// print(try alice.account.userRecordID)
/// ```
public final class Session {
    /// The engine the session acts on.
    public let engine: Engine
    let accountID: Int64
    /// The account as read at this directory generation (`Engine.accountsGeneration`), when
    /// the session was made with it: `account` answers with it until the directory changes,
    /// without reading the store again (a server's request reads its caller once).
    private let known: (account: Account, generation: Int)?

    init(engine: Engine, account: Account, currentAt generation: Int? = nil) {
        self.engine = engine
        self.accountID = account.id
        self.known = generation.map { (account, $0) }
    }

    /// The account as stored now: the one the session was made with while the directory has
    /// not changed since it was read (`Engine.session(for:currentAt:)`), else read again.
    public var account: Account {
        get throws {
            if let known, known.generation == engine.accountsGeneration { return known.account }
            return try engine.reading { try engine.loadAccount(id: accountID, db: $0) }
        }
    }

    /// The container with this identifier (`iCloud.com.example.app`) in `environment`, acting
    /// as this session. Development and production are separate data sets (R32).
    ///
    /// ```swift
    /// let live = try session.container("iCloud.com.example.app", environment: .production)
    /// ```
    public func container(_ identifier: String, environment: CloudEnvironment = .default) throws -> Container {
        guard !identifier.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ShareFlowError.invalid("a container identifier must not be empty")
        }
        try Naming.check(text: identifier, "container identifier")
        return Container(session: self, identifier: identifier, environment: environment)
    }
}
