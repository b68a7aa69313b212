import Foundation
import ShareFlow

/// `users/caller`, `users/current`, `users/discover`, `users/lookup/email` and
/// `users/lookup/id`: who the caller is, and the discoverable accounts they may find (R19, R20).
enum UserEndpoints {
    typealias Object = WireFormat.Object

    /// users/caller: the caller's identity.
    static func caller(_ call: EndpointCall) throws -> Object {
        ["users": [identity(of: try call.requireUser())]]
    }

    /// users/current: the caller's user record name and name.
    static func current(_ call: EndpointCall) throws -> Object {
        let me = try call.requireUser()
        var o: Object = ["userRecordName": me.userRecordID]
        o["firstName"] = me.name.givenName ?? NSNull()
        o["lastName"] = me.name.familyName ?? NSNull()
        return o
    }

    /// users/lookup/email and users/lookup/id: discoverable accounts only (R20), as Apple's
    /// lookup answers; unknown ones are left out.
    static func lookup(_ call: EndpointCall, byEmail: Bool) throws -> Object {
        let me = try call.requireUser()
        guard let asked = try WireFormat.items(call.body["users"], field: "users") else { throw CloudKitError.badRequest("users is required") }
        let requests = try asked.enumerated().map { n, raw -> LookupRequest in
            let key = byEmail ? "emailAddress" : "userRecordName"
            guard let o = raw as? Object, let v = o[key] as? String else {
                throw CloudKitError.badRequest("users[\(n)].\(key) is required")
            }
            return byEmail ? LookupRequest(emailAddress: v) : LookupRequest(userRecordID: v)
        }
        let (found, error) = try call.container(as: me).discoverUserIdentityResults(requests)
        // Unknown people are left out (a partial failure); any other failure is the request's
        // (an outage said "nobody is there").
        if let error, error.code != .partialFailure { throw error }
        return ["users": found.map { userInfo($0, withEmail: byEmail) }]
    }

    /// users/lookup/contacts (CloudKit JS 1.2.0's `discoverAllContactUserInfos`): the caller's
    /// contacts that are discoverable accounts, as `users/discover` finds them by GET, in the
    /// older user-info shape the lookups answer.
    static func contacts(_ call: EndpointCall) throws -> Object {
        let (found, error) = try call.container(as: try call.requireUser()).discoverAllUserIdentityResults()
        if let error, error.code != .partialFailure { throw error }
        return ["users": found.map { userInfo($0, withEmail: true) }]
    }

    /// A found identity as the lookups answer it (CloudKit JS's `UserInfo`): its user record
    /// name and name, and the address it was found by where the caller gave one.
    private static func userInfo(_ i: UserIdentity, withEmail: Bool) -> Object {
        var o: Object = ["userRecordName": i.userRecordID ?? ""]
        o["firstName"] = i.nameComponents?.givenName ?? NSNull()
        o["lastName"] = i.nameComponents?.familyName ?? NSNull()
        if withEmail, let e = i.lookupInfo?.emailAddress { o["emailAddress"] = e }
        return o
    }

    /// users/discover. GET: the caller's contacts that are discoverable accounts (R19); POST:
    /// the accounts of `lookupInfos` that are discoverable (R20). Unknown ones are left out.
    static func discover(_ call: EndpointCall) throws -> Object {
        let container = try call.container(as: try call.requireUser())
        let (found, error): ([UserIdentity], ShareFlowError?)
        if call.request.isGET {
            (found, error) = container.discoverAllUserIdentityResults()
        } else {
            guard let infos = try WireFormat.items(call.body["lookupInfos"], field: "lookupInfos") else {
                throw CloudKitError.badRequest("lookupInfos is required")
            }
            let requests = try infos.enumerated().map { n, raw -> LookupRequest in
                guard let o = raw as? Object else { throw CloudKitError.badRequest("lookupInfos[\(n)] must be an object") }
                let field = "lookupInfos[\(n)]"
                let email = try WireFormat.string(o["emailAddress"], field: "\(field).emailAddress")
                let phone = try WireFormat.string(o["phoneNumber"], field: "\(field).phoneNumber")
                let id = try WireFormat.string(o["userRecordName"], field: "\(field).userRecordName")
                guard email != nil || phone != nil || id != nil else {
                    throw CloudKitError.badRequest("\(field) needs emailAddress, phoneNumber or userRecordName")
                }
                return LookupRequest(emailAddress: email, phoneNumber: phone, userRecordID: id)
            }
            (found, error) = container.discoverUserIdentityResults(requests)
        }
        if let error, error.code != .partialFailure { throw error }
        return ["users": found.map(WireFormat.identity)]
    }

    /// An account as users/caller shows it: user record name, address, name.
    static func identity(of a: Account) -> Object {
        var o: Object = ["userRecordName": a.userRecordID]
        if let e = a.email { o["lookupInfo"] = ["emailAddress": e] }
        var name: Object = [:]
        if let g = a.name.givenName { name["givenName"] = g }
        if let f = a.name.familyName { name["familyName"] = f }
        if !name.isEmpty { o["nameComponents"] = name }
        return o
    }
}
