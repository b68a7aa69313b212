import Foundation

/// Acting as one account: the caller of everything done through its containers (O1).
public final class Session {
    public let engine: Engine
    let accountID: Int64

    init(engine: Engine, account: Account) {
        self.engine = engine
        self.accountID = account.id
    }

    /// The account as stored now.
    public var account: Account {
        get throws { try engine.reading { try engine.loadAccount(id: accountID, db: $0) } }
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
