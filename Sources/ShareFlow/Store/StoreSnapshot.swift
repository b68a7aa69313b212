import Foundation
import GRDB

/// The store's content as a person reads it — accounts, zones, records, shares, participants —
/// to show what a dry run would have changed.
public struct StoreSnapshot: Equatable {
    /// Kind → item key → its description.
    public var items: [String: [String: String]] = [:]

    public static let kinds = ["accounts", "zones", "records", "shares", "participants"]

    /// One line per added (+), changed (~) or removed (-) item, grouped by kind.
    public func changes(to after: StoreSnapshot) -> [String] {
        var lines: [String] = []
        for kind in StoreSnapshot.kinds {
            let old = items[kind] ?? [:], new = after.items[kind] ?? [:]
            for key in Set(old.keys).union(new.keys).sorted() {
                switch (old[key], new[key]) {
                case (nil, let n?): lines.append("\(kind): + \(n)")
                case (let o?, nil): lines.append("\(kind): - \(o)")
                case (let o?, let n?) where o != n: lines.append("\(kind): ~ \(o)  →  \(n)")
                default: break
                }
            }
        }
        return lines
    }
}

extension Engine {
    public func snapshot() throws -> StoreSnapshot {
        try reading { db in
            var s = StoreSnapshot()
            var accounts: [Int64: String] = [:]
            for row in try Row.fetchAll(db.db, sql: "SELECT id, userRecordID, discoverability FROM account") {
                let id: Int64 = row[0]
                let a = try loadAccount(id: id, db: db)
                let who = a.email ?? a.phones.first ?? a.userRecordID
                accounts[id] = who
                let addresses = (a.emails + a.phones).joined(separator: ", ")
                s.items["accounts", default: [:]][a.userRecordID] =
                    "\(who) [\(addresses)\(a.name.isEmpty ? "" : "; \(a.name.formatted)"); \(a.discoverability.rawValue); \(a.contacts.count) contacts]"
            }
            for row in try Row.fetchAll(db.db, sql: "SELECT id, container, scope, ownerID, name FROM zone") {
                let owner = accounts[row[3]] ?? "public"
                s.items["zones", default: [:]]["\(row[0] as Int64)"] = "\(row[4] as String) of \(owner) in \(row[1] as String)"
            }
            for row in try Row.fetchAll(db.db, sql: """
                SELECT r.id, r.name, r.type, r.fields, r.parentName, z.name, z.ownerID FROM record r JOIN zone z ON z.id = r.zoneID
                WHERE r.type != 'cloudkit.share'
                """) {
                let owner = accounts[row[6]] ?? "public"
                let parent = (row[4] as String?).map { " parent \($0)" } ?? ""
                let fields = (try? JSONDecoder().decode([String: FieldValue].self, from: Data((row[3] as String).utf8))) ?? [:]
                let shown = fields.keys.sorted().map { "\($0)=\(fields[$0]!)" }.joined(separator: ", ")
                s.items["records", default: [:]]["\(row[0] as Int64)"] =
                    "\(row[2] as String) \(row[1] as String) in \(row[5] as String) of \(owner)\(parent) {\(shown)}"
            }
            var shares: [Int64: String] = [:]
            for row in try Row.fetchAll(db.db, sql: """
                SELECT s.id, s.url, s.rootName, s.publicPermission, r.fields FROM share s JOIN record r ON r.id = s.recordID
                """) {
                let fields = (try? JSONDecoder().decode([String: FieldValue].self, from: Data((row[4] as String).utf8))) ?? [:]
                var title = "(untitled)"
                if case .string(let t) = fields["cloudkit.title"] { title = "\"\(t)\"" }
                shares[row[0]] = title
                let root = (row[2] as String?).map { "root \($0)" } ?? "zone share"
                s.items["shares", default: [:]][row[1]] = "\(title) \(root), publicPermission \(row[3] as String), \(row[1] as String)"
            }
            for row in try Row.fetchAll(db.db, sql: "SELECT participantID, shareID, lookupValue, role, permission, status FROM participant") {
                s.items["participants", default: [:]][row[0]] =
                    "\(row[2] as String) on \(shares[row[1]] ?? "?"): \(row[3] as String) \(row[4] as String) \(row[5] as String)"
            }
            return s
        }
    }
}
