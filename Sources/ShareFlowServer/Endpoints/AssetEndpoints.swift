import Foundation
import ShareFlow

/// `assets/upload` and `assets/rereference` (SPEC §19 A3, WEB-SERVICES.md §3): the database
/// routes of Apple's upload protocol. The bytes themselves go to the upload URL
/// (`AssetTransfer`), outside the database routes.
enum AssetEndpoints {
    typealias Object = WireFormat.Object

    /// assets/upload: one upload URL per token, in request order, each echoing a `recordName`
    /// (made when none was sent: MistKit throws without one). `zoneID` is optional (CloudKit JS
    /// 1.2.0 never sends it); where given, the receipt is for that zone alone.
    static func upload(_ call: EndpointCall) throws -> Object {
        let me = try call.requireUser()
        let db = try call.database(as: me)
        guard let tokens = try WireFormat.items(call.body["tokens"], field: "tokens", limit: Engine.maxAssetUploadTokens) else {
            throw CloudKitError.badRequest("tokens is required")
        }
        let zone = try WireFormat.zoneID(call.body["zoneID"], field: "zoneID", caller: me.userRecordID)
        let requests = try tokens.enumerated().map { n, raw -> Engine.AssetUploadRequest in
            guard let t = raw as? Object else { throw CloudKitError.badRequest("tokens[\(n)] must be an object") }
            guard let field = try WireFormat.string(t["fieldName"], field: "tokens[\(n)].fieldName") else {
                throw CloudKitError.badRequest("tokens[\(n)].fieldName is required")
            }
            return Engine.AssetUploadRequest(
                recordType: try WireFormat.string(t["recordType"], field: "tokens[\(n)].recordType"),
                recordName: try WireFormat.string(t["recordName"], field: "tokens[\(n)].recordName"),
                fieldName: field
            )
        }
        let slots = try call.engine.reserveAssetUploads(requests, zoneName: zone?.zoneName, in: db)
        let base = call.engine.options.publicURL
        return [
            "tokens": slots.map { slot -> Object in
                ["recordName": slot.recordName, "fieldName": slot.fieldName, "url": "\(base)/assets/1/upload/\(slot.secret)"]
            }
        ]
    }

    /// assets/rereference: for each `{recordName, fieldName}` the caller may read, the asset's
    /// writable descriptor (a receipt), to save in another record; an item the caller cannot
    /// read is NOT_FOUND in its place.
    static func rereference(_ call: EndpointCall) throws -> Object {
        let me = try call.requireUser()
        let db = try call.database(as: me)
        let zone = try WireFormat.zoneID(call.body["zoneID"], field: "zoneID", caller: me.userRecordID) ?? .default
        guard let assets = try WireFormat.items(call.body["assets"], field: "assets", limit: Engine.maxAssetUploadTokens) else {
            throw CloudKitError.badRequest("assets is required")
        }
        let items = try assets.enumerated().map { n, raw -> (record: RecordID, field: String) in
            guard let a = raw as? Object, let name = try WireFormat.string(a["recordName"], field: "assets[\(n)].recordName"),
                let field = try WireFormat.string(a["fieldName"], field: "assets[\(n)].fieldName")
            else { throw CloudKitError.badRequest("assets[\(n)] needs recordName and fieldName") }
            return (RecordID(recordName: name, zoneID: zone), field)
        }
        let answers = try call.engine.rereferenceAssets(items, in: db)
        return [
            "assets": try zip(items, answers).map { item, answer -> Object in
                var o: Object = ["recordName": item.record.recordName, "fieldName": item.field]
                switch answer {
                case .success(let a): o["value"] = AssetTransfer.descriptor(checksum: a.checksum, size: a.size, receipt: a.receipt)
                case .failure(let e): o.merge(WireFormat.error(try WireFormat.itemError(e))) { a, _ in a }
                }
                return o
            }
        ]
    }
}
