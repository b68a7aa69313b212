import Foundation

extension Directory {
    /// The first `limit` accounts, oldest first (a directory of a million is not read whole).
    ///
    /// ```swift
    /// for account in try engine.accounts.list(limit: 200) { print(account.userRecordID) }
    /// ```
    public func list(limit: Int) throws -> [Account] {
        try engine.reading { db in
            try db.accountIDs(limit: max(0, limit)).map { try engine.loadAccount(id: $0, db: db) }
        }
    }

    /// The containers and environments `account` has a part in (its zones, the shares it is
    /// on and not removed from, its web tokens and keys), at most `limit`, by identifier. An
    /// operator's index of where to look; what the account sees there is read through its
    /// own session.
    ///
    /// ```swift
    /// for c in try engine.accounts.containers(of: bob) { print(c.identifier, c.environment) }
    /// ```
    public func containers(of account: Account, limit: Int = 200) throws -> [ContainerID] {
        try engine.reading { try $0.containers(ofAccount: account.id, limit: max(0, limit)) }
    }
}
