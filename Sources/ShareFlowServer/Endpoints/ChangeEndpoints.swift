import Foundation
import ShareFlow

/// The change feeds over HTTP (SPEC §14, WEB-SERVICES.md §2): `changes/database`,
/// `changes/zone`, and Apple's older `records/changes` and `zones/changes`. Shapes are what
/// pyicloud's strict mode accepts: no key it does not know.
enum ChangeEndpoints {
    typealias Object = WireFormat.Object

    /// The feeds' database: the public database has none (`badDatabase`, a 400).
    private static func feedDatabase(_ call: EndpointCall) throws -> (Account, CloudDatabase) {
        guard call.request.scope != .public else {
            throw CloudKitError.badRequest("badDatabase: the public database has no change feeds; use the private or shared database")
        }
        let me = try call.requireUser()
        return (me, try call.database(as: me))
    }

    /// changes/database `{ syncToken?, resultsLimit? }` → `{ zones: [{ zoneID, deleted? }], syncToken, moreComing }`.
    static func database(_ call: EndpointCall) throws -> Object {
        try databaseFeedPage(call, tokenField: "syncToken")
    }

    /// zones/changes (older) `{ metaSyncToken?, resultsLimit? }` → `{ zones, metaSyncToken, moreComing }`.
    static func zones(_ call: EndpointCall) throws -> Object {
        try databaseFeedPage(call, tokenField: "metaSyncToken")
    }

    /// A page of the database feed, its token read and answered under `tokenField`: the two
    /// endpoints are one feed, named as CloudKit's current and older web services name it.
    private static func databaseFeedPage(_ call: EndpointCall, tokenField: String) throws -> Object {
        let (_, db) = try feedDatabase(call)
        let token = try WireFormat.string(call.body[tokenField], field: tokenField)
        let limit = try WireFormat.integer(call.body["resultsLimit"], field: "resultsLimit", in: 1...Engine.feedResultsLimitMaximum)
        let page = try db.databaseChanges(since: token, resultsLimit: limit)
        return ["zones": zones(page), tokenField: page.changeToken, "moreComing": page.moreComing]
    }

    /// A database feed page's zones on the wire: each changed one `{ zoneID }`, each gone
    /// `{ zoneID, deleted: true }` (also `changes/stream`'s events).
    static func zones(_ page: DatabaseChanges) -> [Object] {
        page.changedZoneIDs.map { ["zoneID": WireFormat.zoneID($0)] as Object }
            + page.deletions.map { ["zoneID": WireFormat.zoneID($0.zoneID), "deleted": true] as Object }
    }

    /// changes/zone `{ zones: [{ zoneID, syncToken?, desiredKeys?, desiredRecordTypes?,
    /// resultsLimit? }], resultsLimit?, desiredKeys?, desiredRecordTypes?, reverse?,
    /// numbersAsStrings? }` → `{ zones: [{ zoneID, syncToken, moreComing, records } | zone error] }`.
    /// A zone that cannot be read (not found, a bad or expired token) is an error in its place;
    /// the others are answered.
    static func zone(_ call: EndpointCall) throws -> Object {
        let (me, db) = try feedDatabase(call)
        let body = call.body
        guard let zones = try WireFormat.items(body["zones"], field: "zones"), !zones.isEmpty else {
            throw CloudKitError.badRequest("zones is required: a list of { zoneID, syncToken? }")
        }
        _ = try WireFormat.bool(body["reverse"], field: "reverse")  // accepted and ignored (README)
        let numbersAsStrings = try WireFormat.bool(body["numbersAsStrings"], field: "numbersAsStrings") ?? false
        let limit = try WireFormat.integer(body["resultsLimit"], field: "resultsLimit", in: 1...Engine.feedResultsLimitMaximum)
        let keys = try WireFormat.strings(body["desiredKeys"], field: "desiredKeys")
        let types = try WireFormat.strings(body["desiredRecordTypes"], field: "desiredRecordTypes")
        // One answer of at most maxResponseMiB: each zone's page gets what the zones before it
        // left (and ends early, moreComing); a zone named again is answered once, where first
        // named (the client keys its answers by zone).
        var bytesLeft = call.api.maxResponseBytes
        var seen = Set<RecordZoneID>()
        return [
            "zones": try zones.enumerated().compactMap { n, raw -> Object? in
                let field = "zones[\(n)]"
                guard let z = try WireFormat.object(raw, field: field),
                    let zoneID = try WireFormat.zoneID(z["zoneID"], field: "\(field).zoneID", caller: me.userRecordID)
                else {
                    throw CloudKitError.badRequest("\(field).zoneID is required")
                }
                guard seen.insert(zoneID).inserted else { return nil }
                _ = try WireFormat.bool(z["reverse"], field: "\(field).reverse")
                let page = try zonePage(
                    db,
                    zoneID,
                    token: try WireFormat.string(z["syncToken"], field: "\(field).syncToken"),
                    limit: try WireFormat.integer(
                        z["resultsLimit"],
                        field: "\(field).resultsLimit",
                        in: 1...Engine.feedResultsLimitMaximum
                    ) ?? limit,
                    keys: try WireFormat.strings(z["desiredKeys"], field: "\(field).desiredKeys") ?? keys,
                    types: try WireFormat.strings(z["desiredRecordTypes"], field: "\(field).desiredRecordTypes") ?? types,
                    numbersAsStrings: numbersAsStrings,
                    maxBytes: bytesLeft
                )
                switch page {
                case .success(let page):
                    bytesLeft -= page.bytes
                    return ["zoneID": WireFormat.zoneID(zoneID), "syncToken": page.token, "moreComing": page.moreComing, "records": page.records]
                case .failure(let e):
                    return try WireFormat.zoneError(e, zoneID: zoneID)
                }
            }
        ]
    }

    /// records/changes (older) `{ zoneID, syncToken?, resultsLimit?, desiredKeys? }` →
    /// `{ records, syncToken, moreComing }`; a zone that cannot be read is the request's error.
    static func records(_ call: EndpointCall) throws -> Object {
        let (me, db) = try feedDatabase(call)
        let body = call.body
        guard let zoneID = try WireFormat.zoneID(body["zoneID"], field: "zoneID", caller: me.userRecordID) else {
            throw CloudKitError.badRequest("zoneID is required (a custom zone)")
        }
        let page = try zonePage(
            db,
            zoneID,
            token: try WireFormat.string(body["syncToken"], field: "syncToken"),
            limit: try WireFormat.integer(body["resultsLimit"], field: "resultsLimit", in: 1...Engine.feedResultsLimitMaximum),
            keys: try WireFormat.strings(body["desiredKeys"], field: "desiredKeys"),
            // As changes/zone honours it (SPEC §13 wave 4).
            types: try WireFormat.strings(body["desiredRecordTypes"], field: "desiredRecordTypes"),
            numbersAsStrings: try WireFormat.bool(body["numbersAsStrings"], field: "numbersAsStrings") ?? false,
            maxBytes: call.api.maxResponseBytes
        ).get()
        return ["records": page.records, "syncToken": page.token, "moreComing": page.moreComing]
    }

    private struct ZonePage {
        let records: [Any]
        let token: String
        let moreComing: Bool
        /// What the page's entries weigh against the answer's budget.
        var bytes = 0
    }

    /// One page of a zone's feed on the wire: records, tombstones `{ recordName, deleted,
    /// zoneID }`. `types`: only records of these types (`[]`: none, just the current token).
    private static func zonePage(
        _ db: CloudDatabase,
        _ zoneID: RecordZoneID,
        token: String?,
        limit: Int?,
        keys: [String]?,
        types: [String]?,
        numbersAsStrings: Bool,
        maxBytes: Int
    ) throws -> Result<ZonePage, ShareFlowError> {
        do {
            if let types, types.isEmpty {
                if let token { _ = try db.recordZoneChanges(zoneID, since: token, resultsLimit: 1, desiredKeys: []) }  // checks it
                return .success(ZonePage(records: [], token: try db.currentChangeToken(zoneID), moreComing: false))
            }
            let page = try db.recordZoneChanges(zoneID, since: token, resultsLimit: limit, desiredKeys: keys, maxBytes: maxBytes)
            let wanted = types.map(Set.init)
            let wantedKeys = keys.map(Set.init)
            var records: [Any] = page.modifications.filter { wanted?.contains($0.recordType) ?? true }.map {
                WireFormat.record($0, wanted: wantedKeys, numbersAsStrings: numbersAsStrings)
            }
            records += page.deletions.filter { wanted?.contains($0.recordType) ?? true }.map {
                ["recordName": $0.recordID.recordName, "deleted": true, "zoneID": WireFormat.zoneID(zoneID)] as Object
            }
            // The records' bytes once trimmed to the desired keys (`Record.keeping`).
            let bytes = page.modifications.reduce(0) { $0 + max($1.storedBytes, 1) } + page.deletions.count * 64
            return .success(ZonePage(records: records, token: page.changeToken, moreComing: page.moreComing, bytes: bytes))
        } catch let e as ShareFlowError {
            return .failure(e)
        }
    }

    /// The zone's current token for `syncToken` in zone dictionaries and `getCurrentSyncToken`;
    /// nil where a zone has no feed (the default zone, the public database).
    static func currentToken(_ db: CloudDatabase, _ zoneID: RecordZoneID) -> String? {
        guard db.databaseScope != .public, !zoneID.isDefaultZone else { return nil }
        return try? db.currentChangeToken(zoneID)
    }
}
