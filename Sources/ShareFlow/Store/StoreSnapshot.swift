import Foundation
import GRDB

/// The store's content as a person reads it — accounts, zones, records, shares, participants —
/// to show what a dry run would have changed.
public struct StoreSnapshot: Equatable {
    public struct Item: Equatable {
        /// Where a report lists it: "accounts", a zone, or a share with its participants.
        public var group: String
        public var text: String
    }

    /// Kind → item key → the item.
    public var items: [String: [String: Item]] = [:]

    public static let kinds = ["accounts", "zones", "records", "shares", "participants"]

    /// What changed from this snapshot to `after`, grouped and sorted.
    public func changes(to after: StoreSnapshot) -> ChangeReport {
        var report = ChangeReport()
        var groups: [String: [ChangeReport.Change]] = [:]
        for kind in StoreSnapshot.kinds {
            let old = items[kind] ?? [:], new = after.items[kind] ?? [:]
            for key in Set(old.keys).union(new.keys) {
                let change: ChangeReport.Change
                switch (old[key], new[key]) {
                case (nil, let n?): change = .init(kind: kind, sign: "+", text: n.text)
                case (let o?, nil): change = .init(kind: kind, sign: "-", text: o.text)
                // Only what an item says counts: a participant whose share was renamed is in a
                // group of another title, not changed.
                case (let o?, let n?) where o.text != n.text: change = .init(kind: kind, sign: "~", text: "\(o.text)  →  \(n.text)")
                default: continue
                }
                report.counts[kind, default: [:]][change.sign, default: 0] += 1
                groups[(new[key] ?? old[key])!.group, default: []].append(change)
            }
        }
        let order = { (g: String) -> (Int, String) in (g == "accounts" ? 0 : g.hasPrefix("zone ") ? 1 : 2, g) }
        report.groups = groups.keys.sorted { order($0) < order($1) }.map { title in
            let kindRank = { (k: String) in StoreSnapshot.kinds.firstIndex(of: k) ?? 9 }
            return (title, groups[title]!.sorted { (kindRank($0.kind), $0.text, $0.sign) < (kindRank($1.kind), $1.text, $1.sign) })
        }
        return report
    }
}

/// What a dry run would have changed: counts by kind and sign, and the changes grouped (the
/// accounts, each zone's records, each share with its participants), each group sorted.
public struct ChangeReport {
    public struct Change: Equatable {
        public var kind: String
        /// `+` added, `~` changed, `-` removed.
        public var sign: String
        public var text: String
    }

    public var counts: [String: [String: Int]] = [:]
    public var groups: [(title: String, changes: [Change])] = []

    public var total: Int { counts.values.reduce(0) { $0 + $1.values.reduce(0, +) } }

    /// "+4 accounts, +1 zone, ~1 share, -2 participants", in kind order.
    public var summary: String {
        var parts: [String] = []
        for kind in StoreSnapshot.kinds {
            for sign in ["+", "~", "-"] {
                guard let n = counts[kind]?[sign], n > 0 else { continue }
                parts.append("\(sign)\(n) \(n == 1 ? String(kind.dropLast()) : kind)")
            }
        }
        return parts.joined(separator: ", ")
    }

    /// The report as text, one line per change under its group's title.
    public var lines: [String] {
        groups.flatMap { group in
            ["\(group.title):"] + group.changes.map { "  \($0.sign) \(String($0.kind.dropLast())) \($0.text)" }
        }
    }

    /// The report as JSON-ready values.
    public var json: [String: Any] {
        ["changes": total, "counts": counts,
         "groups": groups.map { g in
             ["title": g.title, "changes": g.changes.map { ["kind": $0.kind, "change": $0.sign, "item": $0.text] }] as [String: Any]
         }]
    }
}

extension Engine {
    public func snapshot() throws -> StoreSnapshot {
        try reading { db in
            var s = StoreSnapshot()
            var accounts: [Int64: String] = [:]
            for id in try db.accountIDs() {
                let a = try loadAccount(id: id, db: db)
                let who = a.email ?? a.phones.first ?? a.userRecordID
                accounts[id] = who
                let addresses = (a.emails + a.phones).joined(separator: ", ")
                s.items["accounts", default: [:]][a.userRecordID] = .init(group: "accounts",
                    text: "\(who) [\(addresses)\(a.name.isEmpty ? "" : "; \(a.name.formatted)"); \(a.discoverability.rawValue); \(a.contacts.count) contacts]")
            }
            // Zones and records are keyed by what they are (container, owner, name), never by row
            // IDs, which SQLite reuses: deleting zone A and making zone B is not a rename.
            var zones: [Int64: String] = [:]
            var zoneKeys: [Int64: String] = [:]
            for (id, container, ownerID, name) in try db.fetchAll("SELECT id, container, ownerID, name, environment FROM zone", table: "zone", keyAt: 0, {
                (try $0.integer(0, "id"), ContainerID(try $0.text(1, "container"), try $0.word(4, "environment")),
                 try $0.integer(2, "ownerID"), try $0.text(3, "name"))
            }) {
                // Development is where everything was before environments (R32): named only for production.
                let title = "zone \(name) of \(accounts[ownerID] ?? "public") in \(container.environment == .default ? container.identifier : "\(container)")"
                zones[id] = title
                let key = "\(container)\u{0}\(ownerID)\u{0}\(name)"
                zoneKeys[id] = key
                s.items["zones", default: [:]][key] = .init(group: title, text: title.dropFirst(5).description)
            }
            for (record, zoneID) in try db.fetchAll("""
                SELECT \(StoreTransaction.recordColumns), r.zoneID FROM \(StoreTransaction.recordSource) WHERE r.type != 'cloudkit.share'
                """, table: "record", keyAt: 0, { (try StoreTransaction.recordRow($0), try $0.integer(StoreTransaction.recordColumnCount, "zoneID")) }) {
                let parent = record.parentName.map { " parent \($0)" } ?? ""
                let shown = record.fields.keys.sorted().map { "\($0)=\(record.fields[$0]!)" }.joined(separator: ", ")
                s.items["records", default: [:]][(zoneKeys[zoneID] ?? "\(zoneID)") + "\u{0}" + record.name] = .init(group: zones[zoneID] ?? "zone ?",
                    text: "\(record.type) \(record.name)\(parent) {\(shown)}")
            }
            var shares: [Int64: String] = [:]
            for (share, fields) in try db.fetchAll("""
                SELECT s.id, s.recordID, s.zoneID, s.token, s.rootName, s.publicPermission, r.name, r.fields FROM share s JOIN record r ON r.id = s.recordID
                """, table: "share", keyAt: 0, { (try StoreTransaction.shareRow($0), try $0.of("record", keyAt: 1).fields(7, "fields")) }) {
                var title = "(untitled)"
                if case .string(let t) = fields["cloudkit.title"] { title = "\"\(t)\"" }
                let group = "share \(title) …/share/\(share.token)"
                shares[share.id] = group
                let root = share.rootName.map { "root \($0)" } ?? "zone share"
                s.items["shares", default: [:]][share.token] = .init(group: group, text: "\(title) \(root), publicPermission \(share.publicPermission.rawValue)")
            }
            for (p, shareID) in try db.fetchAll("""
                SELECT id, participantID, accountID, lookupKind, lookupValue, role, permission, status, shareID FROM participant
                """, table: "participant", keyAt: 0, { (try StoreTransaction.participantRow($0), try $0.integer(8, "shareID")) }) {
                s.items["participants", default: [:]][p.participantID] = .init(group: shares[shareID] ?? "share ?",
                    text: "\(p.lookup.value): \(p.role.rawValue) \(p.permission.rawValue) \(p.status.rawValue)")
            }
            return s
        }
    }
}
