import Foundation
import ShareFlow

/// CloudKit Web Services' dictionaries (WEB-SERVICES.md §1.4) to and from ShareFlow's values.
enum WireFormat {
    /// Whether the request asked for ShareFlow's own keys (`shareflowExtensions=1`, SPEC §17):
    /// access requests' and blocks' times and participants' `dateAddedToShare`, in
    /// milliseconds. Off by default: pyicloud's strict models have no such keys.
    @TaskLocal static var extensions = false
    /// Who reads the records being written out, for their assets' download URLs (SPEC §19
    /// A3): nil where no one signed in does (no URL is given).
    @TaskLocal static var assetLinks: AssetLinks?

    typealias Object = [String: Any]

    // MARK: Errors (SPEC §13)

    static func serverErrorCode(_ code: ShareFlowError.Code) -> (String, Int) {
        switch code {
        case .permissionFailure: return ("ACCESS_DENIED", 403)
        case .unknownItem: return ("NOT_FOUND", 404)
        case .zoneNotFound: return ("ZONE_NOT_FOUND", 404)
        case .serverRecordChanged: return ("CONFLICT", 409)
        case .batchRequestFailed: return ("ATOMIC_ERROR", 400)
        case .referenceViolation: return ("VALIDATING_REFERENCE_ERROR", 412)
        case .requestRateLimited: return ("THROTTLED", 429)
        case .serviceUnavailable, .networkFailure: return ("TRY_AGAIN_LATER", 503)
        // SPEC §15: as observed on Apple's service (WEB-SERVICES.md §2).
        case .zoneBusy: return ("ZONE_BUSY", 503)
        case .quotaExceeded: return ("QUOTA_EXCEEDED", 413)
        case .invalidArguments, .limitExceeded, .tooManyParticipants, .alreadyShared, .badDatabase,
            .participantMayNeedVerification, .participantAlreadyInvited, .partialFailure, .operationCancelled, .changeTokenExpired:
            return ("BAD_REQUEST", 400)
        }
    }

    /// An error dictionary: `uuid`, `serverErrorCode`, `reason` (the ShareFlow code named), and
    /// `retryAfter` when there is one.
    static func error(_ e: ShareFlowError, extra: Object = [:]) -> Object {
        let uuid = UUID().uuidString.lowercased()
        var o: Object = ["uuid": uuid, "serverErrorCode": code(e), "reason": reason(e, incident: uuid)]
        if let r = e.retryAfter { o["retryAfter"] = r }
        return o.merging(extra) { a, _ in a }
    }

    /// The only way an engine error's words reach a client: its code and message, or, where the
    /// message is the operator's (`isOperatorDetail`: it names the store, its path, user, host
    /// or database), a generic sentence and an incident ID, the message going to the log under
    /// that ID.
    static func reason(_ e: ShareFlowError, incident: String = UUID().uuidString.lowercased()) -> String {
        "\(e.code.rawValue): \(clientText(e, incident: incident))"
    }

    /// `reason` without the code in front.
    static func clientText(_ e: ShareFlowError, incident: String = UUID().uuidString.lowercased()) -> String {
        guard e.isOperatorDetail else { return e.message }
        OperatorLog.incident(incident, e.message)
        return "\(e.clientWords) (incident \(incident))"
    }

    /// The one item's result of an operation asked about one item: its value or its error;
    /// the operation's own error where it gave no item (an outage gives none), never an index
    /// out of range (a crash of the server that was).
    static func only<Item, T>(_ answer: ([(Item, Result<T, ShareFlowError>)], ShareFlowError?)) throws -> T {
        guard let first = answer.0.first else {
            throw answer.1.map { $0.partialErrors.first?.error ?? $0 }
                ?? ShareFlowError(.serviceUnavailable, "an operation gave no answer").forOperator()
        }
        return try first.1.get()
    }

    /// A per-item error that is an outage fails the whole request instead (`isOutage`).
    static func itemError(_ e: ShareFlowError) throws -> ShareFlowError {
        if e.isOutage { throw CloudKitError(e) }
        return e
    }

    static func error(code: String, reason: String) -> Object {
        ["uuid": UUID().uuidString.lowercased(), "serverErrorCode": code, "reason": reason]
    }

    /// The wire code of `e` (`EXISTS` for a create whose name is taken).
    static func code(_ e: ShareFlowError) -> String {
        e.code == .serverRecordChanged && e.message.contains("already exists") ? "EXISTS" : serverErrorCode(e.code).0
    }

    // Per-item errors (SPEC §13, wave 3): only the keys live clients model. pyicloud's strict
    // model of an item of `records` rejects `uuid` and `retryAfter`; zone items keep
    // `retryAfter`; the request-level body (above) keeps `uuid`.

    /// A failed item of `records`: `recordName`, `serverErrorCode`, `reason`.
    static func recordError(_ e: ShareFlowError, recordName: String) throws -> Object {
        recordError(code: code(try itemError(e)), reason: reason(e), recordName: recordName)
    }

    static func recordError(code: String, reason: String, recordName: String) -> Object {
        ["recordName": recordName, "serverErrorCode": code, "reason": reason]
    }

    /// A failed item of `zones`: `zoneID`, `serverErrorCode`, `reason`, `retryAfter` when set.
    static func zoneError(_ e: ShareFlowError, zoneID: RecordZoneID) throws -> Object {
        var o = zoneError(code: code(try itemError(e)), reason: reason(e), zoneID: zoneID)
        if let r = e.retryAfter { o["retryAfter"] = r }
        return o
    }

    static func zoneError(code: String, reason: String, zoneID: RecordZoneID) -> Object {
        ["zoneID": WireFormat.zoneID(zoneID), "serverErrorCode": code, "reason": reason]
    }

    /// A failed item of `results` (resolve, accept): `shortGUID`, `serverErrorCode`, `reason`.
    static func resultError(_ e: ShareFlowError, shortGUID: String) throws -> Object {
        ["shortGUID": ["value": shortGUID], "serverErrorCode": code(try itemError(e)), "reason": reason(e)]
    }

    // MARK: Identities and zones

    static func lookupInfo(_ l: LookupInfo?) -> Object? {
        switch l {
        case .emailAddress(let v)?: return ["emailAddress": v]
        case .phoneNumber(let v)?: return ["phoneNumber": v]
        case .userRecordID(let v)?: return ["userRecordName": v]
        case nil: return nil
        }
    }

    static func identity(_ i: UserIdentity) -> Object {
        var o: Object = [:]
        if let id = i.userRecordID { o["userRecordName"] = id }
        if let l = lookupInfo(i.lookupInfo) { o["lookupInfo"] = l }
        if let n = i.nameComponents {
            var name: Object = [:]
            if let v = n.givenName { name["givenName"] = v }
            if let v = n.familyName { name["familyName"] = v }
            if let v = n.middleName { name["middleName"] = v }
            if let v = n.namePrefix { name["namePrefix"] = v }
            if let v = n.nameSuffix { name["nameSuffix"] = v }
            if let v = n.nickname { name["nickname"] = v }
            if !name.isEmpty { o["nameComponents"] = name }
        }
        return o
    }

    static func zoneID(_ z: RecordZoneID) -> Object { ["zoneName": z.zoneName, "ownerRecordName": z.ownerName] }

    static func zoneID(_ o: Any?, field: String, caller: String) throws -> RecordZoneID? {
        guard let o else { return nil }
        guard let d = o as? Object else { throw CloudKitError.badRequest("\(field) must be an object") }
        let name = try string(d["zoneName"], field: "\(field).zoneName") ?? RecordZoneID.defaultZoneName
        let owner = try string(d["ownerRecordName"], field: "\(field).ownerRecordName") ?? caller
        return RecordZoneID(zoneName: name, ownerName: owner)
    }

    static func string(_ v: Any?, field: String) throws -> String? {
        guard let v, !(v is NSNull) else { return nil }
        guard let s = v as? String else { throw CloudKitError.badRequest("\(field) must be a string") }
        return s
    }

    // Typed reads of a request's keys: absent or null is nil; any other type is BAD_REQUEST
    // naming the key (a wrong type is never taken for "not given").

    static func bool(_ v: Any?, field: String) throws -> Bool? {
        guard let v, !(v is NSNull) else { return nil }
        guard let n = v as? NSNumber, isBool(n) else {
            throw CloudKitError.badRequest("\(field) must be true or false")
        }
        return n.boolValue
    }

    static func object(_ v: Any?, field: String) throws -> Object? {
        guard let v, !(v is NSNull) else { return nil }
        guard let o = v as? Object else { throw CloudKitError.badRequest("\(field) must be an object") }
        return o
    }

    static func array(_ v: Any?, field: String) throws -> [Any]? {
        guard let v, !(v is NSNull) else { return nil }
        guard let a = v as? [Any] else { throw CloudKitError.badRequest("\(field) must be a list") }
        return a
    }

    /// A list of at most `limit` items (WEB-SERVICES.md §1.7): more is limitExceeded, before any work.
    static func items(_ v: Any?, field: String, limit: Int = maxItems) throws -> [Any]? {
        guard let a = try array(v, field: field) else { return nil }
        guard a.count <= limit else {
            throw CloudKitError.badRequest("limitExceeded: \(field) has \(a.count) items; a request holds at most \(limit)")
        }
        return a
    }

    /// The most items of one kind a request may hold (records, zones, lookups, short GUIDs):
    /// the engine's limit for one modify call (R22), for every list a request carries.
    static let maxItems = ModifyLimits.maxItems

    static func strings(_ v: Any?, field: String) throws -> [String]? {
        guard let a = try items(v, field: field, limit: 10_000) else { return nil }
        return try a.enumerated().map { n, item in
            guard let s = item as? String else { throw CloudKitError.badRequest("\(field)[\(n)] must be a string") }
            return s
        }
    }

    static func integer(_ v: Any?, field: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let v, !(v is NSNull) else { return nil }
        guard let n = v as? NSNumber, !isFloat(n), !isBool(n), let i = int64(n), let value = Int(exactly: i), range.contains(value) else {
            throw CloudKitError.badRequest("\(field) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A JSON integer as Int64, or nil when it is outside Int64 (JSON numbers above Int64.max
    /// arrive as unsigned, and `int64Value` would wrap them).
    static func int64(_ n: NSNumber) -> Int64? {
        let d = n.decimalValue
        guard d >= Decimal(Int64.min), d <= Decimal(Int64.max) else { return nil }
        return String(cString: n.objCType) == "Q" ? Int64(exactly: n.uint64Value) : n.int64Value
    }

    /// Whether an NSNumber came from a JSON true or false (a boolean's type is `c`).
    static func isBool(_ n: NSNumber) -> Bool { String(cString: n.objCType) == "c" }

    // MARK: Fields

    static func field(_ v: FieldValue) -> Object {
        switch v {
        case .string(let s): return ["value": s, "type": "STRING"]
        case .integer(let i): return ["value": i, "type": "INT64"]
        case .double(let d): return ["value": d, "type": "DOUBLE"]
        case .boolean(let b): return ["value": b ? 1 : 0, "type": "INT64"]
        case .bytes(let d): return ["value": d.base64EncodedString(), "type": "BYTES"]
        case .date(let d):
            // Milliseconds; a date beyond what an Int64 of milliseconds holds (one made in Lua
            // can be) goes out as a number rather than trap.
            return ["value": milliseconds(d), "type": "TIMESTAMP"]
        case .location(let l): return ["value": location(l), "type": "LOCATION"]
        case .reference(let id, let action):
            return [
                "value": ["recordName": id.recordName, "zoneID": zoneID(id.zoneID), "action": action == .deleteSelf ? "DELETE_SELF" : "NONE"],
                "type": "REFERENCE",
            ]
        case .list(let items):
            let inner = items.first.map { field($0)["type"] as? String ?? "STRING" } ?? "STRING"
            return ["value": items.map { field($0)["value"]! }, "type": inner + "_LIST"]
        case .encrypted(.bytes(let d)): return ["value": d.base64EncodedString(), "type": "ENCRYPTED_BYTES"]
        case .encrypted(.list(let items)) where !items.isEmpty && items.allSatisfy({ if case .bytes = $0 { true } else { false } }):
            return ["value": items.map { field($0)["value"]! }, "type": "ENCRYPTED_BYTES_LIST"]
        case .encrypted(let inner):
            // Any other field the client flagged: its own type, and the flag, as given.
            var o = field(inner)
            o["isEncrypted"] = true
            return o
        case .asset(let a): return ["value": asset(a, link: nil), "type": "ASSETID"]
        }
    }

    /// An asset as a read gives it (WEB-SERVICES.md §3): its checksum, size and, for a reader,
    /// a download URL; pyicloud's strict model reads the `ASSETID` type, never an untyped one.
    static func asset(_ a: Asset, link: String?) -> Object {
        var o: Object = [:]
        if let sum = a.checksum { o["fileChecksum"] = sum }
        if let size = a.size { o["size"] = size }
        if let link { o["downloadURL"] = link }
        return o
    }

    /// Field `key` of `record`, an asset or a list of them, each with its download URL.
    static func assetField(_ v: FieldValue, key: String, record: RecordID) -> Object {
        let links = assetLinks
        func one(_ a: Asset) -> Object { asset(a, link: a.checksum.flatMap { links?.url($0, key, record) }) }
        switch v {
        case .asset(let a): return ["value": one(a), "type": "ASSETID"]
        case .list(let items):
            return [
                "value": items.map { item -> Object in
                    if case .asset(let a) = item { return one(a) }
                    return [:]
                },
                "type": "ASSETID_LIST",
            ]
        default: return field(v)
        }
    }

    /// An asset value a client sends (`ASSETID`, or untyped as CloudKit JS and MistKit send
    /// it): an upload's `receipt` to redeem, or a `fileChecksum` sent back as read. Only the
    /// keys assets have; bytes inline (`downloadedData`) are refused: they go through
    /// `assets/upload`.
    private static func assetValue(_ value: Any, field: String) throws -> FieldValue {
        guard let o = value as? Object else { throw CloudKitError.badRequest("\(field) must be an asset object (ASSETID)") }
        let known: Set<String> = ["fileChecksum", "receipt", "referenceChecksum", "wrappingKey", "size", "downloadURL", "downloadedData"]
        if let other = o.keys.sorted().first(where: { !known.contains($0) }) {
            throw CloudKitError.badRequest("\(field) has key '\(other.prefix(64))', which an asset has not (ASSETID)")
        }
        func text(_ key: String) throws -> String? {
            guard let raw = o[key], !(raw is NSNull) else { return nil }
            guard let s = raw as? String, s.utf8.count <= 512 else { throw CloudKitError.badRequest("\(field).\(key) must be a string (ASSETID)") }
            return s
        }
        if o["downloadedData"].map({ !($0 is NSNull) }) ?? false {
            throw CloudKitError.badRequest("\(field) holds its bytes inline; upload them with assets/upload and save the receipt (ASSETID)")
        }
        if let receipt = try text("receipt") { return .asset(Asset(.receipt(receipt))) }
        guard let sum = try text("fileChecksum") else {
            throw CloudKitError.badRequest("\(field) needs an upload's receipt (assets/upload) or the fileChecksum a read gave (ASSETID)")
        }
        var size: Int64?
        if let raw = o["size"], !(raw is NSNull) {
            guard let n = numeral(raw), !isFloat(n), let i = int64(n), i >= 0 else {
                throw CloudKitError.badRequest("\(field).size must be a whole number of bytes (ASSETID)")
            }
            size = i
        }
        return .asset(Asset(.claimed(checksum: sum, size: size)))
    }

    /// A location as CloudKit writes one: its coordinates and whichever of the other six keys
    /// it was given (`timestamp` in milliseconds).
    static func location(_ l: Location) -> Object {
        var o: Object = ["latitude": l.latitude, "longitude": l.longitude]
        for detail in Location.Detail.allCases { if let v = l[detail] { o[detail.rawValue] = v } }
        if let t = l.timestamp { o["timestamp"] = milliseconds(t) }
        return o
    }

    /// Record field `name`'s value (`{ value, type?, isEncrypted? }`), errors naming
    /// `fields.<name>`.
    static func fieldValue(_ raw: Any, field name: String, zone: RecordZoneID) throws -> FieldValue {
        try fieldValue(raw, at: "fields.\(name)", zone: zone)
    }

    /// A field value given at `path` of the request (a record's field, a filter's value),
    /// errors naming `path`.
    static func fieldValue(_ raw: Any, at path: String, zone: RecordZoneID) throws -> FieldValue {
        guard let d = raw as? Object, let value = d["value"] else {
            throw CloudKitError.badRequest("\(path) must be an object with a value")
        }
        let type = try string(d["type"], field: "\(path).type")
        // ENCRYPTED_BYTES (and its list), or any field flagged isEncrypted: kept and returned as
        // given (SPEC §13 wave 4); ShareFlow does not encrypt at rest.
        if type == "ENCRYPTED_BYTES" || type == "ENCRYPTED_BYTES_LIST" {
            return .encrypted(try typed(value, type: type, field: path, zone: zone))
        }
        let plain = try typed(value, type: type, field: path, zone: zone)
        return try bool(d["isEncrypted"], field: "\(path).isEncrypted") == true ? .encrypted(plain) : plain
    }

    /// A typed number as a client sends it: a JSON number, or the text a read with
    /// `numbersAsStrings` gave (SPEC §13: accepted on writes wherever reads give it), so a
    /// record read that way saves back. Text that is no finite number is none.
    private static func numeral(_ value: Any) -> NSNumber? {
        if let n = value as? NSNumber { return n }
        // Decimal text only: Swift's Double also reads `0x10` and `nan`, which no read gave.
        guard let s = value as? String, s.utf8.count <= 64, s.utf8.allSatisfy({ (0x30...0x39).contains($0) || "+-.eE".utf8.contains($0) })
        else { return nil }
        if let i = Int64(s) { return NSNumber(value: i) }
        if let d = Double(s), d.isFinite { return NSNumber(value: d) }
        return nil
    }

    private static func typed(_ value: Any, type: String?, field: String, zone: RecordZoneID) throws -> FieldValue {
        if let type, type.hasSuffix("_LIST") {
            guard let items = value as? [Any] else { throw CloudKitError.badRequest("\(field) must be a list (\(type))") }
            let inner = String(type.dropLast(5))
            return .list(try items.enumerated().map { try typed($1, type: inner, field: "\(field)[\($0)]", zone: zone) })
        }
        switch type {
        case "STRING"?:
            guard let s = value as? String else { throw CloudKitError.badRequest("\(field) must be a string (STRING)") }
            return .string(s)
        case "INT64"?:
            guard let n = numeral(value), !isFloat(n) else { throw CloudKitError.badRequest("\(field) must be an integer (INT64)") }
            guard let i = int64(n) else { throw CloudKitError.badRequest("\(field) is outside INT64 (-2^63 to 2^63-1)") }
            return .integer(i)
        case "DOUBLE"?:
            guard let n = numeral(value) else { throw CloudKitError.badRequest("\(field) must be a number (DOUBLE)") }
            return .double(n.doubleValue)
        case "TIMESTAMP"?:
            // ECMAScript's range of dates, ±100,000,000 days from 1970: what every client can hold.
            guard let n = numeral(value), n.doubleValue.isFinite, abs(n.doubleValue) <= 8.64e15 else {
                throw CloudKitError.badRequest("\(field) must be milliseconds since 1970, within ±8.64e15 (TIMESTAMP)")
            }
            return .date(Date(timeIntervalSince1970: n.doubleValue / 1000))
        case "BYTES"?, "ENCRYPTED_BYTES"?:
            guard let s = value as? String, let data = Data(base64Encoded: s) else {
                throw CloudKitError.badRequest("\(field) must be base64 (\(type ?? "BYTES"))")
            }
            return .bytes(data)
        case "LOCATION"?:
            guard let o = value as? Object, let la = numeral(o["latitude"] as Any), let lo = numeral(o["longitude"] as Any) else {
                throw CloudKitError.badRequest("\(field) must have latitude and longitude (LOCATION)")
            }
            var l = Location(latitude: la.doubleValue, longitude: lo.doubleValue)
            for detail in Location.Detail.allCases {
                guard let raw = o[detail.rawValue], !(raw is NSNull) else { continue }
                guard let n = numeral(raw) else { throw CloudKitError.badRequest("\(field).\(detail.rawValue) must be a number (LOCATION)") }
                l[detail] = n.doubleValue
            }
            if let raw = o["timestamp"], !(raw is NSNull) {
                guard let n = numeral(raw), abs(n.doubleValue) <= 8.64e15 else {
                    throw CloudKitError.badRequest("\(field).timestamp must be milliseconds since 1970, within ±8.64e15 (LOCATION)")
                }
                l.timestamp = Date(timeIntervalSince1970: n.doubleValue / 1000)
            }
            return .location(l)
        case "ASSETID"?, "ASSET"?:
            return try assetValue(value, field: field)
        case "REFERENCE"?:
            guard let o = value as? Object, let name = o["recordName"] as? String else {
                throw CloudKitError.badRequest("\(field) must have a recordName (REFERENCE)")
            }
            let z = try zoneID(o["zoneID"], field: "\(field).zoneID", caller: zone.ownerName) ?? zone
            return .reference(RecordID(recordName: name, zoneID: z), action: (o["action"] as? String) == "DELETE_SELF" ? .deleteSelf : .none)
        case nil:
            switch value {
            case let s as String: return .string(s)
            case let n as NSNumber:
                if isFloat(n) { return .double(n.doubleValue) }
                guard let i = int64(n) else { throw CloudKitError.badRequest("\(field) is outside INT64 (-2^63 to 2^63-1)") }
                return .integer(i)
            case let items as [Any]: return .list(try items.enumerated().map { try typed($1, type: nil, field: "\(field)[\($0)]", zone: zone) })
            // An asset before a reference or a location: its keys are its own.
            case let o as Object where o["receipt"] != nil || o["fileChecksum"] != nil:
                guard o["recordName"] == nil, o["latitude"] == nil else {
                    throw CloudKitError.badRequest("\(field) is both an asset and a reference or location; give its type")
                }
                return try assetValue(o, field: field)
            case let o as Object where o["recordName"] != nil: return try typed(o, type: "REFERENCE", field: field, zone: zone)
            case let o as Object where o["latitude"] != nil: return try typed(o, type: "LOCATION", field: field, zone: zone)
            default: throw CloudKitError.badRequest("\(field) has a value of no CloudKit type")
            }
        case let other?:
            throw CloudKitError.badRequest("\(field) has an unknown type \(other)")
        }
    }

    /// Whether JSON gave this number with a fraction or exponent (a double), not as an integer.
    static func isFloat(_ n: NSNumber) -> Bool {
        let t = String(cString: n.objCType)
        return t == "d" || t == "f"
    }

    // MARK: Records

    /// An invitation's address as a stranger may see it (`potentialMatchList`): enough to
    /// recognise one's own (`g•••••@mac.com`, `•••••••67`), not to learn someone else's.
    static func masked(_ l: LookupInfo) -> Object {
        switch l {
        case .emailAddress(let e):
            let parts = e.split(separator: "@", maxSplits: 1)
            let local = parts.first.map(String.init) ?? ""
            let domain = parts.count > 1 ? "@" + parts[1] : ""
            return ["emailAddress": String(local.prefix(1)) + String(repeating: "•", count: max(local.count - 1, 3)) + domain]
        case .phoneNumber(let p):
            return ["phoneNumber": String(repeating: "•", count: max(p.count - 2, 3)) + String(p.suffix(2))]
        case .userRecordID:
            return [:]
        }
    }

    static func participant(_ p: Participant) -> Object {
        var o: Object = [
            "participantId": p.participantID, "userIdentity": identity(p.userIdentity), "type": type(p.role),
            "acceptanceStatus": status(p.acceptanceStatus), "permission": permission(p.permission),
            "isApprovedRequester": p.isApprovedRequester,
        ]
        if extensions, let added = p.dateAddedToShare { o["dateAddedToShare"] = milliseconds(added) }
        return o
    }

    static func type(_ role: ParticipantRole) -> String {
        switch role {
        case .owner: "OWNER"
        case .administrator: "ADMINISTRATOR"
        case .privateUser: "USER"
        case .publicUser: "PUBLIC_USER"
        case .unknown: "UNKNOWN"
        }
    }

    static func status(_ status: ParticipantAcceptanceStatus) -> String {
        switch status {
        case .pending: "INVITED"
        case .accepted: "ACCEPTED"
        case .removed: "REMOVED"
        case .unknown: "UNKNOWN"
        }
    }

    static func permission(_ p: ParticipantPermission) -> String {
        switch p {
        case .none: "NONE"
        case .readOnly: "READ_ONLY"
        case .readWrite: "READ_WRITE"
        case .unknown: "UNKNOWN"
        }
    }

    static func permission(_ s: Any?, field: String) throws -> ParticipantPermission? {
        guard let s, !(s is NSNull) else { return nil }
        switch s as? String {
        case "NONE"?: return ParticipantPermission.none
        case "READ_ONLY"?: return .readOnly
        case "READ_WRITE"?: return .readWrite
        default: throw CloudKitError.badRequest("\(field) must be NONE, READ_ONLY or READ_WRITE")
        }
    }

    private static func stringifyingNumbers(_ value: Any) -> Any {
        if let list = value as? [Any] { return list.map(stringifyingNumbers) }
        if value is Bool { return value }
        if let i = value as? Int64 { return String(i) }
        if let i = value as? Int { return String(i) }
        if let d = value as? Double { return d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d) }
        return value
    }

    /// CloudKit Web Services' `systemFieldName`s (R31) as the engine's query keys.
    static let systemFieldKeys = [
        "modifiedTimestamp": "modificationDate", "createdTimestamp": "creationDate",
        "createdUserRecordName": "creatorUserRecordID", "modifiedUserRecordName": "lastModifiedUserRecordID",
        "recordName": "recordName",
        // CloudKit's own names of the system fields, which clients (cktool, CloudKit JS apps)
        // query as `fieldName`s: `___recordID` with a REFERENCE value, say.
        "___recordID": "recordName", "___createTime": "creationDate", "___modTime": "modificationDate",
        "___createdBy": "creatorUserRecordID", "___modifiedBy": "lastModifiedUserRecordID",
    ]

    /// A date as CloudKit's milliseconds since 1970. One beyond what an Int64 of milliseconds
    /// holds (made in Lua, or read from a damaged row) goes out as a number rather than trap.
    static func milliseconds(_ date: Date) -> Any {
        let ms = (date.timeIntervalSince1970 * 1000).rounded()
        return Int64(exactly: ms).map { $0 as Any } ?? ms
    }

    /// `numbersAsStrings`: numbers in field values (INT64, DOUBLE, TIMESTAMP and their lists)
    /// go out as strings, as the request key of that name asks.
    static func record(_ r: Record, desiredKeys: [String]? = nil, numbersAsStrings: Bool = false) -> Object {
        record(r, wanted: desiredKeys.map(Set.init), numbersAsStrings: numbersAsStrings)
    }

    /// `wanted`: the desired keys as a set, made once per request (a set per record let a
    /// request of 10,000 keys pay for it again on every record).
    static func record(_ r: Record, wanted: Set<String>?, numbersAsStrings: Bool = false) -> Object {
        var fields: Object = [:]
        // A set: fields × keys comparisons per record would let one request cost their product.
        for (k, v) in r.fields where wanted?.contains(k) ?? true {
            var f = v.holdsAsset ? assetField(v, key: k, record: r.recordID) : field(v)
            if numbersAsStrings, let value = f["value"] { f["value"] = stringifyingNumbers(value) }
            fields[k] = f
        }
        var o: Object = [
            "recordName": r.recordID.recordName, "recordType": r.recordType, "fields": fields,
            "zoneID": zoneID(r.recordID.zoneID),
        ]
        if let tag = r.recordChangeTag { o["recordChangeTag"] = tag }
        // R31: who made the record and when, who saved it last and when.
        if let date = r.creationDate {
            o["created"] =
                [
                    "timestamp": milliseconds(date), "userRecordName": r.creatorUserRecordID?.recordName ?? r.recordID.zoneID.ownerName,
                    "deviceID": "shareflow",
                ] as Object
        }
        if let date = r.modificationDate {
            o["modified"] =
                [
                    "timestamp": milliseconds(date), "userRecordName": r.lastModifiedUserRecordID?.recordName ?? r.recordID.zoneID.ownerName,
                    "deviceID": "shareflow",
                ] as Object
        }
        if let p = r.parent { o["parent"] = ["recordName": p.recordName] }
        if let s = r.share { o["share"] = ["recordName": s.recordName, "zoneID": zoneID(s.zoneID)] }
        if let guid = r.shortGUID { o["shortGUID"] = guid }
        if let share = r as? Share {
            o["recordType"] = "cloudkit.share"
            o["publicPermission"] = permission(share.publicPermission)
            // Apple's name, the flag's opposite (R38), shown to everyone who sees the share.
            o["denyAccessRequests"] = !share.allowsAccessRequests
            o["participants"] = share.participants.map(participant)
            // The owner's and administrators' copies only (R40): empty in anyone else's.
            let extended = extensions
            if !share.requesters.isEmpty {
                o["requesters"] = share.requesters.map { r -> Object in
                    var entry: Object = ["participantId": r.requestID, "userIdentity": identity(r.userIdentity)]
                    if extended { entry["requestedAt"] = milliseconds(r.requestedAt) }
                    return entry
                }
            }
            if !share.blockedIdentities.isEmpty {
                o["blocked"] = share.blockedIdentities.map { b -> Object in
                    var entry: Object = ["participantId": b.blockID, "userIdentity": identity(b.userIdentity)]
                    if extended { entry["blockedAt"] = milliseconds(b.blockedAt) }
                    return entry
                }
            }
            if let owner = share.owner { o["owner"] = participant(owner) }
            if let me = share.currentUserParticipant { o["currentUserParticipant"] = participant(me) }
        }
        return o
    }
}
