import Foundation
import ShareFlow

/// `subscriptions/modify`, `subscriptions/list`, `subscriptions/lookup` (SPEC §20 N1).
enum SubscriptionEndpoints {
    typealias Object = WireFormat.Object

    /// subscriptions/modify: `operations` of `create` (an ID saved already is answered as it
    /// is, as Apple's service does), `update` (replaces it) and `delete` (`{subscriptionID}`),
    /// each answered on its own.
    static func modify(_ call: EndpointCall) throws -> Object {
        let me = try call.requireUser()
        let db = try call.database(as: me)
        guard let ops = try WireFormat.items(call.body["operations"], field: "operations") else {
            throw CloudKitError.badRequest("operations is required")
        }
        return [
            "subscriptions": try ops.enumerated().map { n, raw -> Object in
                guard let op = raw as? Object, let type = op["operationType"] as? String, let sub = op["subscription"] as? Object else {
                    throw CloudKitError.badRequest("operations[\(n)] needs operationType and subscription")
                }
                let field = "operations[\(n)].subscription"
                let named = try WireFormat.string(sub["subscriptionID"], field: "\(field).subscriptionID")
                do {
                    switch type {
                    case "create", "update", "replace":
                        let (subscription, wire) = try SubscriptionWire.subscription(
                            sub,
                            field: field,
                            caller: me.userRecordID,
                            scope: db.databaseScope
                        )
                        if type != "create", named == nil { throw CloudKitError.badRequest("\(field).subscriptionID is required to \(type)") }
                        let saved = try call.engine.saveSubscription(subscription, wire: wire, replacing: type != "create", in: db)
                        return SubscriptionWire.subscription(saved)
                    case "delete":
                        guard let named else { throw CloudKitError.badRequest("\(field).subscriptionID is required to delete") }
                        try db.deleteSubscription(withID: named)
                        return ["subscriptionID": named, "deleted": true]
                    default:
                        throw CloudKitError.badRequest("operations[\(n)].operationType '\(Naming.printable(type))' is not create, update or delete")
                    }
                } catch let e as ShareFlowError {
                    return try error(e, subscriptionID: named)
                }
            }
        ]
    }

    /// subscriptions/list: the caller's subscriptions in this database (CloudKit JS 1.2.0
    /// sends a GET without a body).
    static func list(_ call: EndpointCall) throws -> Object {
        let db = try call.database(as: try call.requireUser())
        return ["subscriptions": try call.engine.savedSubscriptions(in: db).map(SubscriptionWire.subscription)]
    }

    /// subscriptions/lookup: each `{subscriptionID}` asked for, or NOT_FOUND in its place.
    static func lookup(_ call: EndpointCall) throws -> Object {
        let db = try call.database(as: try call.requireUser())
        guard let asked = try WireFormat.items(call.body["subscriptions"], field: "subscriptions") else {
            throw CloudKitError.badRequest("subscriptions is required")
        }
        return [
            "subscriptions": try asked.enumerated().map { n, raw -> Object in
                guard let o = raw as? Object, let id = try WireFormat.string(o["subscriptionID"], field: "subscriptions[\(n)].subscriptionID") else {
                    throw CloudKitError.badRequest("subscriptions[\(n)].subscriptionID is required")
                }
                do {
                    return SubscriptionWire.subscription(try call.engine.fetchSubscription(id, in: db))
                } catch let e as ShareFlowError {
                    return try error(e, subscriptionID: id)
                }
            }
        ]
    }

    /// A failed item: `subscriptionID`, `serverErrorCode`, `reason`.
    static func error(_ e: ShareFlowError, subscriptionID: String?) throws -> Object {
        var o: Object = ["serverErrorCode": WireFormat.code(try WireFormat.itemError(e)), "reason": WireFormat.reason(e)]
        o["subscriptionID"] = subscriptionID
        return o
    }
}
