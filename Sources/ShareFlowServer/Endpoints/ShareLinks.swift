import Foundation
import ShareFlow

/// `records/resolve` and `records/accept`: a share URL's short GUID resolved to its share's
/// metadata as the caller sees it (O4, R16), and accepted (O5).
enum ShareLinks {
    typealias Object = WireFormat.Object

    /// records/resolve and records/accept: each short GUID's share, as its caller sees it.
    static func answer(_ call: EndpointCall, accept: Bool) throws -> Object {
        let container = try call.container(as: try call.requireUser())
        let engine = call.engine
        let body = call.body
        guard let guids = try WireFormat.items(body["shortGUIDs"], field: "shortGUIDs") else {
            throw CloudKitError.badRequest("shortGUIDs is required")
        }
        var results: [Object] = []
        for (n, raw) in guids.enumerated() {
            guard let g = raw as? Object, let value = g["value"] as? String else {
                throw CloudKitError.badRequest("shortGUIDs[\(n)].value is required")
            }
            do {
                results.append(try shortGUIDResult(value, g, container: container, engine: engine, accept: accept))
            } catch let e as ShareFlowError where e.code == .participantMayNeedVerification {
                // R16's case has a form of its own: a result whose potentialMatchList shows,
                // masked, where the invitations went, so the caller knows which address to verify.
                results.append([
                    "containerIdentifier": container.containerIdentifier, "databaseScope": "SHARED",
                    "shortGUID": ["value": value],
                    "potentialMatchList": e.potentialMatches.map { m -> Object in
                        ["participantId": m.participantID, "contactInformation": WireFormat.masked(m.lookupInfo)]
                    },
                ])
            } catch let e as ShareFlowError {
                results.append(try WireFormat.resultError(e, shortGUID: value))
            }
        }
        return ["results": results]
    }

    /// records/requestAccess (SPEC §17, ShareFlow's own route): asks to join each short GUID's
    /// share (R39). Each result is `{"shortGUID": {"value": …}}`, the same whether or not a
    /// request was recorded; a pending invitee's, a public share's or a policy's refusal
    /// carries `serverErrorCode` and `reason`.
    static func requestAccess(_ call: EndpointCall) throws -> Object {
        let container = try call.container(as: try call.requireUser())
        guard let guids = try WireFormat.items(call.body["shortGUIDs"], field: "shortGUIDs") else {
            throw CloudKitError.badRequest("shortGUIDs is required")
        }
        let values = try guids.enumerated().map { n, raw -> String in
            guard let g = raw as? Object, let value = g["value"] as? String else {
                throw CloudKitError.badRequest("shortGUIDs[\(n)].value is required")
            }
            return value
        }
        let (results, error) = container.requestShareAccessResults(values.map { call.engine.shareURL(token: $0) })
        // The whole request failed (a fault, the store away): no URL was asked.
        if let error, results.count != values.count { throw CloudKitError.from(error) }
        return [
            "results": try zip(values, results).map { value, result -> Object in
                switch result.1 {
                case .success: return ["shortGUID": ["value": value]]
                case .failure(let e): return try WireFormat.resultError(e, shortGUID: value)
                }
            }
        ]
    }

    private static func shortGUIDResult(_ value: String, _ g: Object, container: Container, engine: Engine, accept: Bool) throws -> Object {
        let url = engine.shareURL(token: value)
        let fetchRoot = try WireFormat.bool(g["shouldFetchRootRecord"], field: "shortGUIDs.shouldFetchRootRecord") ?? false
        let keys = try WireFormat.strings(g["rootRecordDesiredKeys"], field: "shortGUIDs.rootRecordDesiredKeys")
        let first = try WireFormat.only(container.fetchShareMetadataResults([url], shouldFetchRootRecord: fetchRoot, rootRecordDesiredKeys: keys))
        var meta = first
        if accept {
            let accepted = try WireFormat.only(container.acceptShareResults([first]))
            // The metadata as it is after the accept; where the share's change tag did not move
            // (an accept that changed nothing: R10, R18, the caller owns it or had accepted),
            // what was just read is that.
            if accepted.recordChangeTag != first.share.recordChangeTag {
                meta = try WireFormat.only(container.fetchShareMetadataResults([url], shouldFetchRootRecord: fetchRoot, rootRecordDesiredKeys: keys))
            }
        }
        var o: Object = [
            "containerIdentifier": meta.containerIdentifier, "environment": meta.environment.rawValue, "databaseScope": "SHARED",
            "zoneID": WireFormat.zoneID(meta.share.recordID.zoneID), "share": WireFormat.record(meta.share),
            "ownerIdentity": WireFormat.identity(meta.ownerIdentity), "shortGUID": ["value": value],
            "participantPermission": WireFormat.permission(meta.participantPermission),
            "participantStatus": WireFormat.status(meta.participantStatus),
            "participantType": WireFormat.type(meta.participantRole),
        ]
        o["webpageURL"] = engine.shareURL(token: value)
        if let root = meta.hierarchicalRootRecordID { o["rootRecordName"] = root.recordName }
        if let root = meta.rootRecord { o["rootRecord"] = WireFormat.record(root) }
        return o
    }
}
