import Foundation

/// Who may write at all (R30): the public reader never; in the public database, a record's
/// creator only.
extension Engine {
    /// R30: the public reader (a visitor not signed in) reads the public database and writes
    /// nothing.
    static func requireSignedIn(_ database: CloudDatabase) throws {
        guard database.container.session.accountID != Account.publicReader.id else {
            throw ShareFlowError.denied("a visitor who is not signed in reads the public database only; writes need a user (R30)")
        }
    }

    /// R30: the public database is world readable and creator writable (CloudKit's default
    /// security role): only the account that created a record changes or deletes it.
    static func requireCreator(_ row: RecordRow, caller: Account, item: String) throws {
        guard row.createdBy == caller.id else {
            throw ShareFlowError.denied("\(item) was created by another user; in the public database only its creator may change or delete it (R30)")
        }
    }
}
