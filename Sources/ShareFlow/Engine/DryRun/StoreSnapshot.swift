import Foundation

/// The store's content as a person reads it — accounts, zones, records, shares, participants —
/// to show what a dry run would have changed (`changes(to:)`, ChangeReport.swift). The rows are
/// the store's (`StoreTransaction.contents()`); the words are made here.
public struct StoreSnapshot: Equatable {
    /// One item as a person reads it, and where a report lists it.
    public struct Item: Equatable {
        /// Where a report lists it: "accounts", a zone, or a share with its participants.
        public var group: String
        /// What the item is and holds (an account's addresses, a record's type, name, parent and fields, …):
        /// two snapshots' items of one key that read differently are a change.
        public var text: String
    }

    /// Kind → item key → the item.
    public var items: [String: [String: Item]] = [:]

    /// The kinds of item, in the order a report counts and lists them.
    public static let kinds = ["accounts", "zones", "records", "shares", "participants", "requests", "blocks"]

    /// The items of the store's `contents`.
    init(_ contents: StoreContents) {
        var accounts: [Int64: String] = [:]
        for a in contents.accounts {
            let who = a.email ?? a.phones.first ?? a.userRecordID
            accounts[a.id] = who
            let addresses = (a.emails + a.phones).joined(separator: ", ")
            items["accounts", default: [:]][a.userRecordID] = .init(
                group: "accounts",
                text:
                    "\(who) [\(addresses)\(a.name.isEmpty ? "" : "; \(a.name.formatted)"); \(a.discoverability.rawValue); \(a.contacts.count) contacts]"
            )
        }
        // Zones and records are keyed by what they are (container, owner, name), never by row
        // IDs, which SQLite reuses: deleting zone A and making zone B is not a rename.
        var zones: [Int64: String] = [:]
        var zoneKeys: [Int64: String] = [:]
        for (id, container, ownerID, name) in contents.zones {
            // Development is where everything was before environments (R32): named only for production.
            let title =
                "zone \(name) of \(accounts[ownerID] ?? "public") in \(container.environment == .default ? container.identifier : "\(container)")"
            zones[id] = title
            let key = "\(container)\u{0}\(ownerID)\u{0}\(name)"
            zoneKeys[id] = key
            items["zones", default: [:]][key] = .init(group: title, text: title.dropFirst(5).description)
        }
        for (record, zoneID) in contents.records {
            let parent = record.parentName.map { " parent \($0)" } ?? ""
            let shown = record.fields.keys.sorted().map { "\($0)=\(record.fields[$0]!)" }.joined(separator: ", ")
            items["records", default: [:]][(zoneKeys[zoneID] ?? "\(zoneID)") + "\u{0}" + record.name] = .init(
                group: zones[zoneID] ?? "zone ?",
                text: "\(record.type) \(record.name)\(parent) {\(shown)}"
            )
        }
        var shares: [Int64: String] = [:]
        for (share, fields) in contents.shares {
            var title = "(untitled)"
            if case .string(let t) = fields["cloudkit.title"] { title = "\"\(t)\"" }
            let group = "share \(title) …/share/\(share.token)"
            shares[share.id] = group
            let root = share.rootName.map { "root \($0)" } ?? "zone share"
            let asks = share.allowsAccessRequests ? ", takes access requests" : ""
            items["shares", default: [:]][share.token] = .init(
                group: group,
                text: "\(title) \(root), publicPermission \(share.publicPermission.rawValue)\(asks)"
            )
        }
        for (p, shareID) in contents.participants {
            // A one-time link is nobody until claimed (R44); an approved requester says so (R41).
            let who = p.oneTimeToken != nil && p.accountID == nil ? "(one-time link)" : p.lookup.value
            items["participants", default: [:]][p.participantID] = .init(
                group: shares[shareID] ?? "share ?",
                text: "\(who): \(p.role.rawValue) \(p.permission.rawValue) \(p.status.rawValue)\(p.isApprovedRequester ? ", approved requester" : "")"
            )
        }
        for (id, lookup, shareID) in contents.requests {
            items["requests", default: [:]][id] = .init(group: shares[shareID] ?? "share ?", text: "from \(lookup.value)")
        }
        for (id, lookup, shareID) in contents.blocks {
            items["blocks", default: [:]][id] = .init(group: shares[shareID] ?? "share ?", text: lookup.value)
        }
    }
}

extension Engine {
    /// The store as it is now, for a dry run to compare with what it is after.
    public func snapshot() throws -> StoreSnapshot {
        StoreSnapshot(try reading { try $0.contents() })
    }
}
