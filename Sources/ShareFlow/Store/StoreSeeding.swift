import Foundation
import GRDB

/// Bulk data for benchmarks and load tests: rows as the engine would have made them, inserted
/// with prepared statements in one transaction (setup, never measured). Not for users: it
/// skips the rules and emits no events.
extension Store {
    /// `count` accounts, account `i` with email `email(i)`, discoverable when `discoverable(i)`.
    /// Returns their row IDs.
    package func seedAccounts(
        count: Int,
        email: (Int) -> String,
        name: (Int) -> NameComponents = { _ in NameComponents() },
        discoverable: (Int) -> Bool = { _ in false }
    ) throws -> [Int64] {
        try queue.write { db in
            let account = try db.makeStatement(sql: "INSERT INTO account (userRecordID, name, discoverability, createdAt) VALUES (?, ?, ?, 0)")
            let address = try db.makeStatement(sql: "INSERT INTO account_email (email, accountID, position) VALUES (?, ?, 0)")
            let encoder = JSONEncoder()
            return try (0..<count).map { i in
                let json = String(decoding: try encoder.encode(name(i)), as: UTF8.self)
                try account.execute(arguments: [
                    Account.newUserRecordID(), json,
                    (discoverable(i) ? Discoverability.granted : .initialState).rawValue,
                ])
                let id = db.lastInsertedRowID
                try address.execute(arguments: [email(i), id])
                return id
            }
        }
    }

    /// `count` hierarchy shares in `owner`'s existing zone `zoneName` of `container`, share `i`
    /// rooted at record `doc<i>`, each with `guests` as pending readOnly participants (by
    /// account row ID and email). Returns the shares' URL tokens in order (`Engine.shareURL(token:)`).
    package func seedShares(
        owner: Account,
        container: ContainerID,
        zoneName: String,
        count: Int,
        guests: [(id: Int64, email: String)]
    ) throws -> [String] {
        try queue.write { db in
            let tx = StoreTransaction(db, path: path)
            guard let zone = try tx.zoneRowID(container: container, isPublic: false, ownerID: owner.id, name: zoneName) else {
                throw ShareFlowError(.zoneNotFound, "zone \(zoneName) of \(owner.userRecordID) in \(container) does not exist")
            }
            let now = Date().timeIntervalSince1970
            var tokens: [String] = []
            for i in 0..<count {
                _ = try tx.insertRecord(
                    zone: zone,
                    name: "doc\(i)",
                    type: "Doc",
                    fields: try StoredFields(["title": .string("Doc \(i)")]),
                    parentName: nil,
                    tag: RandomIdentifier.changeTag(),
                    by: owner.id,
                    at: now
                )
                let record = try tx.insertRecord(
                    zone: zone,
                    name: "share\(i)",
                    type: Share.recordType,
                    fields: try StoredFields(["cloudkit.title": .string("Share \(i)")]),
                    parentName: nil,
                    tag: RandomIdentifier.changeTag(),
                    by: owner.id,
                    at: now
                )
                let token = "bench\(i)-\(RandomIdentifier.uuidString())"
                let share = try tx.insertShare(record: record, zone: zone, token: token, rootName: "doc\(i)")
                try tx.insertParticipant(
                    share: share,
                    participantID: RandomIdentifier.uuidString(),
                    account: owner.id,
                    lookup: .emailAddress(owner.email ?? ""),
                    role: .owner,
                    permission: .readWrite,
                    status: .accepted,
                    at: now
                )
                for g in guests {
                    try tx.insertParticipant(
                        share: share,
                        participantID: RandomIdentifier.uuidString(),
                        account: g.id,
                        lookup: .emailAddress(g.email),
                        role: .privateUser,
                        permission: .readOnly,
                        status: .pending,
                        at: now
                    )
                }
                tokens.append(token)
            }
            return tokens
        }
    }

    /// Participants other than owners who have accepted, across the store.
    package func acceptedParticipantCount() throws -> Int {
        try queue.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM participant WHERE status = 'accepted' AND role != 'owner'") ?? 0 }
    }

    /// `count` records of type `Item` (`item<i>`, a title and a number) in `owner`'s existing
    /// zone `zoneName`, modified one second apart in a shuffled order, so that no order of the
    /// rows by ID is the order by modification date.
    package func seedRecords(owner: Account, container: ContainerID, zoneName: String, count: Int) throws {
        try queue.write { db in
            let tx = StoreTransaction(db, path: path)
            guard let zone = try tx.zoneRowID(container: container, isPublic: false, ownerID: owner.id, name: zoneName) else {
                throw ShareFlowError(.zoneNotFound, "zone \(zoneName) of \(owner.userRecordID) in \(container) does not exist")
            }
            let base = Date().timeIntervalSince1970 - Double(count)
            var generator = SystemRandomNumberGenerator()
            for (i, at) in (0..<count).shuffled(using: &generator).enumerated() {
                _ = try tx.insertRecord(
                    zone: zone,
                    name: "item\(i)",
                    type: "Item",
                    fields: try StoredFields(["title": .string("Item \(i)"), "n": .integer(Int64(i))]),
                    parentName: nil,
                    tag: RandomIdentifier.changeTag(),
                    by: owner.id,
                    at: base + Double(at)
                )
            }
        }
    }
}
