import CLua
import Foundation
import ShareFlow

/// Subscriptions (SPEC §20 N1) in Lua: a subscription is a plain table with the `Subscription`
/// metatable (`sf.QuerySubscription{…}`, `db:fetchAllSubscriptions()`, an event's
/// `subscription`), read back by its fields when saved; a notification is a plain table.
///
/// Every value read here is the script's: tables are read raw, one fixed level at a time (no
/// recursion a cycle could drive), and strings and lists are measured before they are copied,
/// so a hostile table costs no more than its bounds before the engine checks the rest.
extension Bindings {
    /// The fields of a `notificationInfo` table.
    static let notificationInfoKeys: Set<String> = [
        "alertBody", "alertLocalizationKey", "alertLocalizationArgs", "alertActionLocalizationKey", "alertLaunchImage",
        "soundName", "shouldBadge", "shouldSendContentAvailable", "additionalFields", "category",
    ]

    /// The names `firesOn` lists, in the order they are pushed.
    private static let firesOnNames: [(String, Subscription.FiresOn)] = [("create", .create), ("update", .update), ("delete", .delete)]

    /// The longest subscription ID (as the engine's check): a longer one is refused before it is copied.
    static let maxSubscriptionIDBytes = 255

    // MARK: Push

    /// A subscription as a table: `subscriptionID`, `subscriptionType`, `zoneID`, its
    /// `notificationInfo`, and for a query `recordType`, `predicate` (and `arguments`) when the
    /// predicate has a format text, `firesOn`, `firesOnce`.
    func push(subscription s: Subscription) {
        let L = lua.L
        lua_createtable(L, 0, 9)
        lua.push(string: s.subscriptionID)
        lua_setfield(L, -2, "subscriptionID")
        lua.push(string: s.kindName)
        lua_setfield(L, -2, "subscriptionType")
        if let zone = s.zoneID {
            push(zone)
            lua_setfield(L, -2, "zoneID")
        }
        if case .query(let recordType, let predicate, _, let firesOn, let firesOnce) = s.kind {
            lua.push(string: recordType)
            lua_setfield(L, -2, "recordType")
            // A predicate made over HTTP may have no format text (LIST_CONTAINS_ANY, tokens):
            // then none is given, and the table cannot be saved again as it is.
            if let format = Bindings.format(predicate) {
                lua.push(string: format.text)
                lua_setfield(L, -2, "predicate")
                if !format.arguments.isEmpty {
                    pushList(format.arguments) { push($0) }
                    lua_setfield(L, -2, "arguments")
                }
            }
            lua.push(strings: Bindings.firesOnNames.filter { firesOn.contains($0.1) }.map(\.0))
            lua_setfield(L, -2, "firesOn")
            lua_pushboolean(L, firesOnce ? 1 : 0)
            lua_setfield(L, -2, "firesOnce")
        }
        push(notificationInfo: s.notificationInfo)
        lua_setfield(L, -2, "notificationInfo")
        setMetatable(.subscription)
    }

    /// A `notificationInfo` table: the parts that are set.
    func push(notificationInfo info: NotificationInfo) {
        let L = lua.L
        lua_createtable(L, 0, 4)
        lua.setField("alertBody", string: info.alertBody)
        lua.setField("alertLocalizationKey", string: info.alertLocalizationKey)
        lua.setField("alertActionLocalizationKey", string: info.alertActionLocalizationKey)
        lua.setField("alertLaunchImage", string: info.alertLaunchImage)
        lua.setField("soundName", string: info.soundName)
        lua.setField("category", string: info.category)
        if let args = info.alertLocalizationArgs {
            lua.push(strings: args)
            lua_setfield(L, -2, "alertLocalizationArgs")
        }
        if let fields = info.additionalFields {
            lua.push(strings: fields)
            lua_setfield(L, -2, "additionalFields")
        }
        if let badge = info.shouldBadge {
            lua_pushboolean(L, badge ? 1 : 0)
            lua_setfield(L, -2, "shouldBadge")
        }
        if let silent = info.shouldSendContentAvailable {
            lua_pushboolean(L, silent ? 1 : 0)
            lua_setfield(L, -2, "shouldSendContentAvailable")
        }
    }

    /// A notification as `subscription.fired` carries it: `notificationID`, `subscriptionID`,
    /// `database`, `zoneID`, and for a query subscription `recordID`, `reason`,
    /// `additionalFields` (field values by name) and `alertArguments`.
    func push(notification n: SubscriptionNotification) {
        let L = lua.L
        lua_createtable(L, 0, 8)
        lua.push(string: n.notificationID)
        lua_setfield(L, -2, "notificationID")
        lua.push(string: n.subscriptionID)
        lua_setfield(L, -2, "subscriptionID")
        lua.push(string: n.database)
        lua_setfield(L, -2, "database")
        push(n.zoneID)
        lua_setfield(L, -2, "zoneID")
        if let name = n.recordName {
            push(RecordID(recordName: name, zoneID: n.zoneID))
            lua_setfield(L, -2, "recordID")
        }
        lua.setField("reason", string: n.reason?.name)
        if let fields = n.additionalFields {
            lua_createtable(L, 0, Int32(min(fields.count, Subscription.maxAdditionalFields)))
            for (name, value) in fields {
                push(value)
                lua_setfield(L, -2, name)
            }
            lua_setfield(L, -2, "additionalFields")
        }
        if let args = n.alertArguments {
            lua.push(strings: args)
            lua_setfield(L, -2, "alertArguments")
        }
    }

    /// `predicate` in the format `Predicate(format:arguments:)` reads back to it, or nil when it
    /// has none (`listContains`, `tokens`, a key the format cannot name). Integers, booleans
    /// and plain ASCII strings are written in the text; other values are `%@` arguments.
    static func format(_ predicate: ShareFlow.Predicate) -> (text: String, arguments: [FieldValue])? {
        if case .all = predicate { return ("TRUEPREDICATE", []) }
        var arguments: [FieldValue] = []
        func key(_ k: String) -> String? {
            // The parser's identifier, and not one of its words at a clause's start.
            guard let first = k.first, first.isLetter, k.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }),
                !["NOT", "ANY", "TRUEPREDICATE"].contains(k.uppercased())
            else { return nil }
            return k
        }
        func value(_ v: FieldValue) -> String {
            switch v {
            case .integer(let i): return String(i)
            case .boolean(let b): return b ? "TRUE" : "FALSE"
            case .string(let s) where s.unicodeScalars.allSatisfy({ (0x20..<0x7F).contains($0.value) && $0 != "'" && $0 != "\\" }):
                return "'\(s)'"
            case .double(let d)
            where d.isFinite && "\(d)".contains(".") && "\(d)".drop { $0 == "-" }.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }):
                return "\(d)"
            default:
                arguments.append(v)
                return "%@"
            }
        }
        func text(_ p: ShareFlow.Predicate) -> String? {
            switch p {
            case .all, .listContains, .tokens: return nil
            case .compare(let k, let op, let v): return key(k).map { "\($0) \(op.rawValue) \(value(v))" }
            case .beginsWith(let k, let prefix): return key(k).map { "\($0) BEGINSWITH \(value(.string(prefix)))" }
            case .isIn(let k, let values): return key(k).map { "\($0) IN {\(values.map(value).joined(separator: ", "))}" }
            case .any(let k, let op, let v): return key(k).map { "ANY \($0) \(op.rawValue) \(value(v))" }
            case .not(let part): return text(part).map { "NOT (\($0))" }
            case .and(let parts):
                guard !parts.isEmpty else { return nil }
                var out: [String] = []
                for part in parts {
                    guard let t = text(part) else { return nil }
                    if case .and = part { out.append("(\(t))") } else { out.append(t) }
                }
                return out.joined(separator: " AND ")
            case .near(let k, let center, let meters):
                guard let k = key(k) else { return nil }
                let c = value(.location(center))
                return "distanceToLocation:fromLocation:(\(k), \(c)) < \(value(.double(meters)))"
            }
        }
        guard let t = text(predicate) else { return nil }
        return (t, arguments)
    }

    // MARK: Read

    /// A subscription from the table at `i` (a positive index): of kind `fixed` (a
    /// constructor's, which takes no `subscriptionType`), or of the kind its `subscriptionType`
    /// names. `zone(required)` reads its `zone`/`zoneID` field: nil when absent and not required.
    func subscription(
        _ call: LuaCall,
        _ i: Int32,
        kind fixed: String?,
        zone: (_ required: Bool) throws -> RecordZoneID?
    ) throws -> Subscription {
        // A database subscription needs nothing: `sf.DatabaseSubscription()` (the field reads
        // below find nothing in a nil).
        guard lua_type(call.L, i) == LUA_TTABLE || (fixed == "database" && call.isNil(i)) else {
            throw call.argumentError(i, "\(fixed == nil ? "Subscription" : "table") expected, got \(call.typeName(i))")
        }
        let kind: String
        if let fixed {
            kind = fixed
        } else {
            guard let named = try text(call, i, "subscriptionType", position: i, maxBytes: 16) else {
                throw call.argumentError(
                    i,
                    "Subscription expected (sf.QuerySubscription, sf.RecordZoneSubscription, sf.DatabaseSubscription, or a table with subscriptionType), got a table without subscriptionType"
                )
            }
            kind = named
        }
        var allowed: Set<String> = ["subscriptionID", "notificationInfo"]
        if fixed == nil { allowed.insert("subscriptionType") }
        switch kind {
        case "query": allowed.formUnion(["recordType", "predicate", "arguments", "zone", "zoneID", "firesOn", "firesOnce"])
        case "zone": allowed.formUnion(["zone", "zoneID"])
        case "database": break
        default:
            throw call.argumentError(i, "subscriptionType must be query, zone or database, got '\(Naming.printable(kind))'")
        }
        try call.checkKeys(i, allowed: allowed)
        let id = try subscriptionID(call, i)
        let info = try notificationInfo(call, i)
        switch kind {
        case "query":
            // A subscription read from the store whose predicate has no format text: saving the
            // table as it is would widen it to every record.
            if valueKind(at: i) == .subscription {
                let missing = call.field(i, "predicate") == LUA_TNIL
                call.state.pop()
                guard !missing else {
                    throw call.argumentError(
                        i,
                        "this query subscription's predicate has no format text (it was made over HTTP); make it again with sf.QuerySubscription{…}"
                    )
                }
            }
            let q = try query(call, i, position: i)
            let zoneID = try zone(false)
            var firesOn = Subscription.FiresOn.all
            if let names = try textList(call, i, "firesOn", maxItems: Bindings.firesOnNames.count, maxBytes: 16) {
                firesOn = []
                for (n, name) in names.enumerated() {
                    guard let bit = Bindings.firesOnNames.first(where: { $0.0 == name })?.1 else {
                        throw call.argumentError(
                            i,
                            "field 'firesOn[\(n + 1)]' must be one of create, update, delete, got '\(Naming.printable(name))'"
                        )
                    }
                    firesOn.insert(bit)
                }
                guard !firesOn.isEmpty else { throw call.argumentError(i, "field 'firesOn' must name at least one of create, update, delete") }
            }
            let once = try call.booleanField(i, "firesOnce") ?? false
            return .query(recordType: q.recordType, predicate: q.predicate, in: zoneID, firesOn: firesOn, firesOnce: once, id: id, info: info)
        case "zone":
            guard let zoneID = try zone(true) else { throw call.argumentError(i, "field 'zone' is required") }
            return .zone(zoneID, id: id, info: info)
        default:
            return .database(id: id, info: info)
        }
    }

    /// The `zone`/`zoneID` field of the table at `i` as the database `d` reads a zone: a zone,
    /// a zone ID, or the name of one of the caller's zones; nil when absent and not `required`.
    func subscriptionZone(_ call: LuaCall, _ i: Int32, in d: CloudDatabase, required: Bool) throws -> RecordZoneID? {
        if call.field(i, "zone") == LUA_TNIL {
            call.state.pop()
            call.field(i, "zoneID")
        }
        defer { call.state.pop() }
        guard lua_type(call.L, -1) != LUA_TNIL else {
            if required { throw call.argumentError(i, "field 'zone' is required (a zone from db:saveZone, or a zoneID)") }
            return nil
        }
        return try zoneID(call, -1, position: i, defaultOwner: { try d.container.session.account.userRecordID })
    }

    /// A subscription ID argument (`db:fetchSubscription(id)`), measured before it is copied.
    func subscriptionIDArgument(_ call: LuaCall, _ i: Int32) throws -> String {
        guard lua_type(call.L, i) == LUA_TSTRING else { throw call.argumentError(i, "string expected, got \(call.typeName(i))") }
        let n = Int(lua_rawlen(call.L, i))
        guard (1...Bindings.maxSubscriptionIDBytes).contains(n) else {
            throw call.argumentError(i, "a subscriptionID is 1–\(Bindings.maxSubscriptionIDBytes) bytes, got \(n)")
        }
        return call.state.string(at: i)!
    }

    /// The `subscriptionID` field: nil (a new UUID) when absent.
    private func subscriptionID(_ call: LuaCall, _ i: Int32) throws -> String? {
        guard let id = try text(call, i, "subscriptionID", position: i, maxBytes: Bindings.maxSubscriptionIDBytes) else { return nil }
        guard !id.isEmpty else { throw call.argumentError(i, "field 'subscriptionID' must not be empty") }
        return id
    }

    /// The `notificationInfo` field of the table at `i`, its errors naming the argument `i`.
    private func notificationInfo(_ call: LuaCall, _ i: Int32) throws -> NotificationInfo {
        let type = call.field(i, "notificationInfo")
        defer { call.state.pop() }
        if type == LUA_TNIL { return NotificationInfo() }
        guard type == LUA_TTABLE else {
            throw call.argumentError(i, "field 'notificationInfo' must be a table, got \(call.typeName(-1))")
        }
        let t = lua_absindex(call.L, -1)
        do {
            try call.checkKeys(t, allowed: Bindings.notificationInfoKeys)
        } catch let e as LuaArgumentError {
            // checkKeys names the table's stack slot; the caller knows the argument.
            throw call.argumentError(i, "notificationInfo: " + e.reason)
        }
        func string(_ key: String) throws -> String? {
            try text(call, t, key, position: i, maxBytes: NotificationInfo.maxTextBytes, prefix: "notificationInfo.")
        }
        func strings(_ key: String) throws -> [String]? {
            try textList(
                call,
                t,
                key,
                position: i,
                maxItems: Subscription.maxAdditionalFields,
                maxBytes: NotificationInfo.maxTextBytes,
                prefix: "notificationInfo."
            )
        }
        func boolean(_ key: String) throws -> Bool? {
            let type = call.field(t, key)
            defer { call.state.pop() }
            if type == LUA_TNIL { return nil }
            guard type == LUA_TBOOLEAN else {
                throw call.argumentError(i, "field 'notificationInfo.\(key)' must be a boolean, got \(call.typeName(-1))")
            }
            return lua_toboolean(call.L, -1) != 0
        }
        return NotificationInfo(
            alertBody: try string("alertBody"),
            alertLocalizationKey: try string("alertLocalizationKey"),
            alertLocalizationArgs: try strings("alertLocalizationArgs"),
            alertActionLocalizationKey: try string("alertActionLocalizationKey"),
            alertLaunchImage: try string("alertLaunchImage"),
            soundName: try string("soundName"),
            shouldBadge: try boolean("shouldBadge"),
            shouldSendContentAvailable: try boolean("shouldSendContentAvailable"),
            additionalFields: try strings("additionalFields"),
            category: try string("category")
        )
    }

    /// The string field `key` of the table at `t` (a positive index), at most `maxBytes`:
    /// measured before it is copied. Errors name argument `position` and the field.
    private func text(_ call: LuaCall, _ t: Int32, _ key: String, position: Int32, maxBytes: Int, prefix: String = "") throws -> String? {
        let type = call.field(t, key)
        defer { call.state.pop() }
        if type == LUA_TNIL { return nil }
        guard type == LUA_TSTRING else {
            throw call.argumentError(position, "field '\(prefix)\(key)' must be a string, got \(call.typeName(-1))")
        }
        let n = Int(lua_rawlen(call.L, -1))
        guard n <= maxBytes else {
            throw call.argumentError(position, "field '\(prefix)\(key)' is \(n) bytes; at most \(maxBytes)")
        }
        return call.state.string(at: -1)
    }

    /// The list of strings in field `key` of the table at `t` (a positive index): at most
    /// `maxItems`, each at most `maxBytes`, both measured before anything is copied.
    private func textList(
        _ call: LuaCall,
        _ t: Int32,
        _ key: String,
        position: Int32? = nil,
        maxItems: Int,
        maxBytes: Int,
        prefix: String = ""
    ) throws -> [String]? {
        let position = position ?? t
        let type = call.field(t, key)
        defer { call.state.pop() }
        if type == LUA_TNIL { return nil }
        guard type == LUA_TTABLE else {
            throw call.argumentError(position, "field '\(prefix)\(key)' must be a list of strings, got \(call.typeName(-1))")
        }
        let list = lua_absindex(call.L, -1)
        let n = call.length(list)
        guard n <= maxItems else {
            throw call.argumentError(position, "field '\(prefix)\(key)' lists \(n) items; at most \(maxItems)")
        }
        return try (0..<n).map { m in
            try call.element(list, m + 1)
            defer { call.state.pop() }
            guard lua_type(call.L, -1) == LUA_TSTRING else {
                throw call.argumentError(position, "field '\(prefix)\(key)[\(m + 1)]' must be a string, got \(call.typeName(-1))")
            }
            let bytes = Int(lua_rawlen(call.L, -1))
            guard bytes <= maxBytes else {
                throw call.argumentError(position, "field '\(prefix)\(key)[\(m + 1)]' is \(bytes) bytes; at most \(maxBytes)")
            }
            return call.state.string(at: -1)!
        }
    }
}
