import Foundation
import ShareFlow

/// Subscriptions and notifications in CloudKit's JSON (SPEC §20, WEB-SERVICES §4).
enum SubscriptionWire {
    typealias Object = WireFormat.Object

    /// The `notificationInfo` keys CloudKit documents, each a string but for the flags and lists.
    static let infoKeys: Set<String> = [
        "alertBody", "alertLocalizationKey", "alertLocalizationArgs", "alertActionLocalizationKey", "alertLaunchImage", "soundName",
        "shouldBadge", "shouldSendContentAvailable", "additionalFields", "category",
    ]

    /// A subscription dictionary as a client sends it; its `query` as sent (kept, to be
    /// given back as it came).
    static func subscription(_ raw: Any, field: String, caller: String, scope: DatabaseScope) throws -> (Subscription, wire: String?) {
        guard let o = raw as? Object else { throw CloudKitError.badRequest("\(field) must be an object") }
        let id = try WireFormat.string(o["subscriptionID"], field: "\(field).subscriptionID")
        let zoneID = try WireFormat.zoneID(o["zoneID"], field: "\(field).zoneID", caller: caller)
        let zoneWide = try WireFormat.bool(o["zoneWide"], field: "\(field).zoneWide") ?? false
        let info = try notificationInfo(o["notificationInfo"], field: "\(field).notificationInfo")
        let query = try WireFormat.object(o["query"], field: "\(field).query")
        let type =
            try WireFormat.string(o["subscriptionType"], field: "\(field).subscriptionType")
            ?? (query != nil ? "query" : zoneID != nil ? "zone" : "database")
        switch type {
        case "query":
            guard let query, let recordType = try WireFormat.string(query["recordType"], field: "\(field).query.recordType") else {
                throw CloudKitError.badRequest("\(field).query.recordType is required for a query subscription")
            }
            var parts: [ShareFlow.Predicate] = []
            for (n, f) in (try WireFormat.items(query["filterBy"], field: "\(field).query.filterBy") ?? []).enumerated() {
                parts.append(try RecordsQuery.filter(f, field: "\(field).query.filterBy[\(n)]", zone: zoneID ?? .default))
            }
            var firesOn: Subscription.FiresOn = []
            for (n, word) in (try WireFormat.items(o["firesOn"], field: "\(field).firesOn") ?? ["create", "update", "delete"]).enumerated() {
                switch word as? String {
                case "create": firesOn.insert(.create)
                case "update": firesOn.insert(.update)
                case "delete": firesOn.insert(.delete)
                default: throw CloudKitError.badRequest("\(field).firesOn[\(n)] must be create, update or delete")
                }
            }
            let firesOnce = try WireFormat.bool(o["firesOnce"], field: "\(field).firesOnce") ?? false
            let predicate: ShareFlow.Predicate = parts.isEmpty ? .all : parts.count == 1 ? parts[0] : .and(parts)
            // Kept to be listed back as sent: only what CloudKit's query has (a client's other
            // keys would be stored for nothing).
            var sent: Object = ["recordType": recordType]
            if let filters = query["filterBy"] { sent["filterBy"] = filters }
            let kept = String(decoding: WireObject(sent).json, as: UTF8.self)
            return (
                .query(
                    recordType: recordType,
                    predicate: predicate,
                    in: zoneWide ? nil : zoneID ?? (scope == .public ? RecordZoneID.default : nil),
                    firesOn: firesOn,
                    firesOnce: firesOnce,
                    id: id,
                    info: info
                ),
                kept
            )
        case "zone":
            guard let zoneID else { throw CloudKitError.badRequest("\(field).zoneID is required for a zone subscription") }
            return (.zone(zoneID, id: id, info: info), nil)
        case "database":
            return (.database(id: id, info: info), nil)
        default:
            throw CloudKitError.badRequest("\(field).subscriptionType '\(Naming.printable(type))' is not query, zone or database")
        }
    }

    static func notificationInfo(_ raw: Any?, field: String) throws -> NotificationInfo {
        guard let o = try WireFormat.object(raw, field: field) else { return NotificationInfo() }
        if let unknown = o.keys.sorted().first(where: { !infoKeys.contains($0) }) {
            throw CloudKitError.badRequest("\(field).\(Naming.printable(unknown)) is not a notificationInfo key")
        }
        func text(_ key: String) throws -> String? { try WireFormat.string(o[key], field: "\(field).\(key)") }
        func list(_ key: String) throws -> [String]? {
            try WireFormat.items(o[key], field: "\(field).\(key)", limit: Subscription.maxAdditionalFields).map { items in
                try items.enumerated().map { n, item in
                    guard let s = item as? String else { throw CloudKitError.badRequest("\(field).\(key)[\(n)] must be a string") }
                    return s
                }
            }
        }
        return NotificationInfo(
            alertBody: try text("alertBody"),
            alertLocalizationKey: try text("alertLocalizationKey"),
            alertLocalizationArgs: try list("alertLocalizationArgs"),
            alertActionLocalizationKey: try text("alertActionLocalizationKey"),
            alertLaunchImage: try text("alertLaunchImage"),
            soundName: try text("soundName"),
            shouldBadge: try WireFormat.bool(o["shouldBadge"], field: "\(field).shouldBadge"),
            shouldSendContentAvailable: try WireFormat.bool(o["shouldSendContentAvailable"], field: "\(field).shouldSendContentAvailable"),
            additionalFields: try list("additionalFields"),
            category: try text("category")
        )
    }

    /// A saved subscription as CloudKit answers it: only Apple's keys.
    static func subscription(_ saved: SavedSubscription) -> Object {
        let s = saved.subscription
        var o: Object = ["subscriptionID": s.subscriptionID, "subscriptionType": s.kindName]
        switch s.kind {
        case .query(let type, let predicate, let zoneID, let firesOn, let firesOnce):
            if let wire = saved.wire, let query = try? JSONSerialization.jsonObject(with: Data(wire.utf8)) as? Object {
                o["query"] = query
            } else {
                var query: Object = ["recordType": type]
                if let filters = filterBy(predicate) { query["filterBy"] = filters }
                o["query"] = query
            }
            if let zoneID { o["zoneID"] = WireFormat.zoneID(zoneID) } else { o["zoneWide"] = true }
            o["firesOn"] = [(Subscription.FiresOn.create, "create"), (.update, "update"), (.delete, "delete")].filter { firesOn.contains($0.0) }.map(
                \.1
            )
            o["firesOnce"] = firesOnce
        case .zone(let zoneID):
            o["zoneID"] = WireFormat.zoneID(zoneID)
        case .database:
            break
        }
        let info = info(s.notificationInfo)
        if !info.isEmpty { o["notificationInfo"] = info }
        return o
    }

    static func info(_ i: NotificationInfo) -> Object {
        var o: Object = [:]
        o["alertBody"] = i.alertBody
        o["alertLocalizationKey"] = i.alertLocalizationKey
        o["alertLocalizationArgs"] = i.alertLocalizationArgs
        o["alertActionLocalizationKey"] = i.alertActionLocalizationKey
        o["alertLaunchImage"] = i.alertLaunchImage
        o["soundName"] = i.soundName
        o["shouldBadge"] = i.shouldBadge
        o["shouldSendContentAvailable"] = i.shouldSendContentAvailable
        o["additionalFields"] = i.additionalFields
        o["category"] = i.category
        return o
    }

    /// `filterBy` for a predicate made natively, when each part has a comparator; nil when
    /// one has none (the subscription is listed without its filters: SPEC §20).
    static func filterBy(_ p: ShareFlow.Predicate) -> [Object]? {
        let parts: [ShareFlow.Predicate]
        switch p {
        case .all: return []
        case .and(let all): parts = all
        default: parts = [p]
        }
        var out: [Object] = []
        for part in parts {
            func item(_ comparator: String, _ key: String, _ value: FieldValue) -> Object {
                let system = WireFormat.systemFieldKeys.first { $0.value == key }?.key
                var o: Object = ["comparator": comparator, "fieldValue": WireFormat.field(value)]
                if let system { o["systemFieldName"] = system } else { o["fieldName"] = key }
                return o
            }
            switch part {
            case .compare(let key, let op, let value):
                let names: [ShareFlow.Predicate.Comparison: String] = [
                    .equal: "EQUALS", .notEqual: "NOT_EQUALS", .less: "LESS_THAN", .lessOrEqual: "LESS_THAN_OR_EQUALS", .greater: "GREATER_THAN",
                    .greaterOrEqual: "GREATER_THAN_OR_EQUALS",
                ]
                out.append(item(names[op]!, key, value))
            case .beginsWith(let key, let prefix): out.append(item("BEGINS_WITH", key, .string(prefix)))
            case .isIn(let key, let values): out.append(item("IN", key, .list(values)))
            case .not(.isIn(let key, let values)): out.append(item("NOT_IN", key, .list(values)))
            default: return nil
            }
        }
        return out
    }

    // MARK: A notification

    /// One notification as CloudKit's push payload (WEB-SERVICES §4 item 5): `aps`, and `ck`
    /// with `fet` (zone and database subscriptions) or `qry` (query ones). Field values are as
    /// `records/lookup` gives them (`value` only), assets left out; fields are dropped from the
    /// end until the whole fits APNs' 4 KiB.
    static func notification(_ n: SubscriptionNotification) -> Object {
        var aps: Object = [:]
        var alert: Object = [:]
        alert["body"] = n.info.alertBody
        alert["loc-key"] = n.info.alertLocalizationKey
        if let args = n.alertArguments { alert["loc-args"] = args }
        alert["action-loc-key"] = n.info.alertActionLocalizationKey
        alert["launch-image"] = n.info.alertLaunchImage
        if !alert.isEmpty { aps["alert"] = alert }
        aps["sound"] = n.info.soundName
        if n.info.shouldBadge == true { aps["badge"] = 1 }
        if n.info.shouldSendContentAvailable == true { aps["content-available"] = 1 }
        aps["category"] = n.info.category
        var ck: Object = ["nid": n.notificationID, "cid": n.containerIdentifier]
        if let reason = n.reason, let name = n.recordName {
            let dbs = n.database == "public" ? 0 : n.database == "private" ? 1 : 2
            var qry: Object = ["sid": n.subscriptionID, "zid": n.zoneName, "zoid": n.zoneOwnerName, "dbs": dbs, "rid": name, "fo": reason.rawValue]
            var fields: [(String, Any)] = []
            for key in (n.info.additionalFields ?? []) {
                guard let v = n.additionalFields?[key], !v.holdsAsset, let value = WireFormat.field(v)["value"] else { continue }
                fields.append((key, value))
            }
            while true {
                qry["af"] = Dictionary(fields, uniquingKeysWith: { a, _ in a })
                ck["qry"] = qry
                let o: Object = ["aps": aps, "ck": ck]
                if fields.isEmpty || WireObject(o).json.count <= 4096 { return o }
                fields.removeLast()
            }
        }
        ck["fet"] = ["sid": n.subscriptionID, "zid": n.zoneName, "zoid": n.zoneOwnerName] as Object
        return ["aps": aps, "ck": ck]
    }
}
