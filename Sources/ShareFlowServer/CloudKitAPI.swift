import Foundation
import Crypto
import ShareFlow

/// One request of the CloudKit Web Services protocol, as the router hands it over.
struct APIRequest: Sendable {
    var container: String
    var environment: String
    var database: String
    var subpath: String
    var method: String
    /// The URL path, and the request target as sent (path and query): what a server-to-server
    /// signature covers, depending on the client.
    var path: String
    var target: String
    /// Names in lowercase.
    var headers: [String: String]
    /// Every query parameter but the two tokens.
    var query: [String: String]
    var apiToken: String?
    var webAuthToken: String?
    var body: Data

    var isGET: Bool { method == "GET" }
    /// The path's environment, once `handle` has refused any other word (R32).
    var cloudEnvironment: CloudEnvironment { CloudEnvironment(rawValue: environment) ?? .default }
}

/// The answer: an HTTP status, a JSON object, and who asked (for the access log; never a
/// token). The object is made on the engine's thread and encoded on the connection's, so the
/// engine's one thread does not spend its time writing JSON. Unchecked: the object holds only
/// immutable values (strings, numbers, arrays and dictionaries of them) and is not changed
/// after it crosses.
struct APIResponse: @unchecked Sendable {
    var status: Int
    var object: [String: Any]
    var caller: String?
    /// Who the request turned out to be, once its credentials were accepted: the rate
    /// limiter's bucket for the next requests with them (an account; an API token alone).
    var identity: String?

    var body: Data { CloudKitAPI.json(object) }
}

/// The endpoints of SPEC §13 over the engine. Runs on the engine's thread only.
public final class CloudKitAPI: @unchecked Sendable {  // used from the EngineThread alone
    typealias Object = WireFormat.Object
    let engine: Engine

    init(engine: Engine) { self.engine = engine }

    /// The most bytes of records (as stored) one response carries (SPEC §13, wave 3).
    var maxResponseBytes = 32 << 20

    /// Unchecked as APIResponse: made and thrown on the engine's thread, an immutable object.
    private struct Failure: Error, @unchecked Sendable {
        let status: Int
        let body: Object
    }

    // Credentials and accounts already checked, so a request costs the engine no store reads
    // for them: tokens never change once minted (an expired one is told by its time), and
    // accounts are read again when the directory changes (`accountsGeneration`).
    private var apiTokens: Set<String> = []
    /// Signatures of server-to-server requests already accepted, until their date leaves the
    /// 10-minute window. The least recent go first past the bound.
    private var usedSignatures = RecentlyUsed<String, Double>(capacity: 200_000)
    private var webTokens: [String: (accountID: Int64, expiresAt: Double?)] = [:]
    private var accounts: [Int64: Account] = [:]
    private var accountsGeneration = -1
    private static let maxCached = 10_000

    private func cachedAccount(id: Int64) throws -> Account? {
        if accountsGeneration != engine.accountsGeneration {
            accounts.removeAll()
            accountsGeneration = engine.accountsGeneration
        }
        if let a = accounts[id] { return a }
        guard let a = try engine.accounts.account(id: id) else { return nil }
        if accounts.count >= Self.maxCached { accounts.removeAll() }
        accounts[id] = a
        return a
    }

    func handle(_ r: APIRequest) -> APIResponse {
        var caller: Account?
        var identity: String?
        do {
            guard CloudEnvironment(rawValue: r.environment) != nil else {
                throw Failure(status: 400, body: WireFormat.error(code: "BAD_REQUEST", reason: "environment '\(Naming.printable(r.environment))' is not development or production"))
            }
            guard let scope = DatabaseScope(rawValue: r.database) else {
                throw Failure(status: 400, body: WireFormat.error(code: "BAD_REQUEST", reason: "database '\(Naming.printable(r.database))' is not public, private or shared"))
            }
            caller = try authenticate(r, scope: scope)
            identity = caller.map { "account \($0.id)" } ?? r.apiToken.map { "api " + Credentials.hash($0) }
            let body = try parse(r)
            let result = try dispatch(r, scope: scope, caller: caller, body: body)
            return APIResponse(status: 200, object: result, caller: caller?.email ?? caller?.userRecordID, identity: identity)
        } catch let f as Failure {
            return APIResponse(status: f.status, object: f.body, caller: caller?.email, identity: identity)
        } catch let e as WireFormat.BadRequest {
            return APIResponse(status: 400, object: WireFormat.error(code: "BAD_REQUEST", reason: e.reason), caller: caller?.email, identity: identity)
        } catch let e as ShareFlowError {
            let (_, status) = WireFormat.serverErrorCode(e.code)
            return APIResponse(status: status, object: WireFormat.error(e), caller: caller?.email, identity: identity)
        } catch {
            return APIResponse(status: 500, object: WireFormat.error(code: "INTERNAL_ERROR", reason: "\(error)"), caller: caller?.email, identity: identity)
        }
    }

    static func json(_ o: Object) -> Data {
        (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
    }

    // MARK: Authentication (SPEC §13)

    /// Who the request acts as: a server-to-server key's account; else, once `ckAPIToken`
    /// opens the container, the user of `ckWebAuthToken` or the account a plugin's
    /// authenticator names; nil for no user.
    private func authenticate(_ r: APIRequest, scope: DatabaseScope) throws -> Account? {
        if let keyID = r.headers["x-apple-cloudkit-request-keyid"] {
            return try serverKeyAccount(r, keyID: keyID, scope: scope)
        }
        try authenticateContainer(r)
        if let account = try user(r) { return account }
        guard !engine.authenticators.isEmpty else { return nil }
        let request = AuthenticationRequest(method: r.method, path: r.path, container: r.container, environment: r.environment,
                                            database: r.database, headers: r.headers, query: r.query)
        do {
            return try engine.authenticators.authenticate(request)?.account
        } catch let e as ShareFlowError {
            throw Failure(status: 401, body: WireFormat.error(code: "AUTHENTICATION_FAILED", reason: e.message))
        }
    }

    /// A request signed with a registered key (ECDSA P-256 over `date:base64(sha256(body)):subpath`),
    /// dated within 10 minutes, for the public database's records and zones only.
    private func serverKeyAccount(_ r: APIRequest, keyID: String, scope: DatabaseScope) throws -> Account {
        func refuse(_ reason: String) -> Failure {
            Failure(status: 401, body: WireFormat.error(code: "AUTHENTICATION_FAILED", reason: reason))
        }
        guard r.apiToken == nil, r.webAuthToken == nil else {
            throw refuse("a request signed with a server-to-server key carries no ckAPIToken or ckWebAuthToken")
        }
        guard let key = try engine.store.credential(.serverKey, container: r.container, environment: r.cloudEnvironment, hash: keyID.lowercased()),
              let pem = key.publicKey, let accountID = key.accountID else {
            throw refuse("X-Apple-CloudKit-Request-KeyID is not a key registered for \(Naming.printable(r.container)) (shareflow keys add)")
        }
        guard let dateText = r.headers["x-apple-cloudkit-request-iso8601date"], let date = Self.iso8601(dateText) else {
            throw refuse("X-Apple-CloudKit-Request-ISO8601Date is missing or not an ISO 8601 date like 2016-01-25T22:15:43Z")
        }
        guard abs(date.timeIntervalSinceNow) <= 600 else {
            throw refuse("X-Apple-CloudKit-Request-ISO8601Date \(dateText) is more than 10 minutes from the server's time")
        }
        guard let signature = r.headers["x-apple-cloudkit-request-signaturev1"],
              Credentials.verify(signature: signature, date: dateText, body: r.body, paths: Array(Set([r.path, r.target])), publicKeyPEM: pem) else {
            throw refuse("X-Apple-CloudKit-Request-SignatureV1 is missing or not the key's signature of date:base64(sha256(body)):path")
        }
        // A signature is good once: the same signed request sent again within its window (a
        // replay by whoever saw it) is refused. Kept until its date leaves the window.
        let seen = keyID.lowercased() + " " + (Credentials.canonicalSignature(signature) ?? signature)
        let now = Date().timeIntervalSince1970
        if let until = usedSignatures[seen], until > now {
            throw refuse("X-Apple-CloudKit-Request-SignatureV1 was already used: a signed request is accepted once (sign each request anew)")
        }
        usedSignatures[seen] = date.timeIntervalSince1970 + 600
        guard scope == .public, !r.subpath.hasPrefix("users/") else {
            throw refuse("a server-to-server key reaches the public database's records and zones only; \(r.database)/\(r.subpath) needs a ckWebAuthToken")
        }
        guard let account = try engine.accounts.account(id: accountID) else {
            throw refuse("the account of key \(keyID) no longer exists")
        }
        return account
    }

    static func iso8601(_ text: String) -> Date? {
        let f = ISO8601DateFormatter()
        if let d = f.date(from: text) { return d }
        f.formatOptions.insert(.withFractionalSeconds)
        return f.date(from: text)
    }

    private func authenticateContainer(_ r: APIRequest) throws {
        guard let token = r.apiToken, !token.isEmpty else {
            throw Failure(status: 401, body: WireFormat.error(code: "AUTHENTICATION_FAILED", reason: "ckAPIToken is required"))
        }
        // R32: an API token opens one environment of its container.
        let key = r.container + "\u{0}" + r.environment + "\u{0}" + token
        if apiTokens.contains(key) { return }
        guard try engine.store.credential(.apiToken, container: r.container, environment: r.cloudEnvironment, hash: Credentials.hash(token)) != nil else {
            throw Failure(status: 401, body: WireFormat.error(code: "AUTHENTICATION_FAILED", reason: "ckAPIToken is not valid for \(Naming.printable(r.container)) in \(r.environment)"))
        }
        if apiTokens.count >= Self.maxCached { apiTokens.removeAll() }
        apiTokens.insert(key)
    }

    /// The user of `ckWebAuthToken`, or nil without one; a bad or expired token is 401.
    private func user(_ r: APIRequest) throws -> Account? {
        guard let token = r.webAuthToken, !token.isEmpty else { return nil }
        let key = r.container + "\u{0}" + token
        var known = webTokens[key]
        if known == nil {
            guard let credential = try engine.store.credential(.webAuthToken, container: r.container, environment: r.cloudEnvironment, hash: Credentials.hash(token)),
                  let id = credential.accountID else {
                throw Failure(status: 401, body: WireFormat.error(code: "AUTHENTICATION_FAILED", reason: "ckWebAuthToken is not valid for \(Naming.printable(r.container))"))
            }
            known = (id, credential.expiresAt)
            if webTokens.count >= Self.maxCached { webTokens.removeAll() }
            webTokens[key] = known
        }
        if let expiry = known!.expiresAt, expiry < Date().timeIntervalSince1970 {
            throw Failure(status: 401, body: WireFormat.error(code: "AUTHENTICATION_FAILED", reason: "ckWebAuthToken has expired"))
        }
        guard let account = try cachedAccount(id: known!.accountID) else {
            throw Failure(status: 401, body: WireFormat.error(code: "AUTHENTICATION_FAILED", reason: "the account of this ckWebAuthToken no longer exists"))
        }
        return account
    }

    private func requireUser(_ caller: Account?) throws -> Account {
        guard let caller else {
            var body = WireFormat.error(code: "AUTHENTICATION_REQUIRED", reason: "request needs authorization")
            body["redirectURL"] = "about:blank"
            throw Failure(status: 421, body: body)
        }
        return caller
    }

    /// R30: the public database's records and zones read with the API token alone (CloudKit JS
    /// sites show public content to visitors who are not signed in), as the engine's public
    /// reader; every other request, and every write, needs a user or a key (421).
    private func reader(_ caller: Account?, _ scope: DatabaseScope) throws -> Account {
        if caller == nil && scope == .public { return .publicReader }
        return try requireUser(caller)
    }

    private func parse(_ r: APIRequest) throws -> Object {
        if r.isGET || r.body.isEmpty { return [:] }
        guard let o = try? JSONSerialization.jsonObject(with: r.body) else {
            throw WireFormat.BadRequest(reason: "the body is not a JSON object: not valid JSON, or nested deeper than the parser allows")
        }
        guard let object = o as? Object else { throw WireFormat.BadRequest(reason: "the body is not a JSON object") }
        return object
    }

    // MARK: Endpoints

    /// One endpoint: its subpath, the methods it answers, and the databases on whose path it is
    /// (nil: any). `shareflow serve --routes` lists them; docs/openapi.yaml describes them.
    struct Endpoint: Sendable {
        let subpath: String
        let methods: [String]
        let databases: [String]?
    }

    static let endpoints: [Endpoint] = [
        Endpoint(subpath: "records/modify", methods: ["POST"], databases: nil),
        Endpoint(subpath: "records/lookup", methods: ["POST"], databases: nil),
        Endpoint(subpath: "records/query", methods: ["POST"], databases: nil),
        Endpoint(subpath: "records/resolve", methods: ["POST"], databases: ["public"]),
        Endpoint(subpath: "records/accept", methods: ["POST"], databases: ["public"]),
        Endpoint(subpath: "zones/modify", methods: ["POST"], databases: nil),
        // pyicloud sends zones/list as POST {}.
        Endpoint(subpath: "zones/list", methods: ["GET", "POST"], databases: nil),
        Endpoint(subpath: "zones/lookup", methods: ["POST"], databases: nil),
        // Apple documents users/* on the public path; MistKit sends users/current on private.
        // POST too: a client whose only raw call is POST (pyicloud's raw_post) sends {}.
        Endpoint(subpath: "users/caller", methods: ["GET", "POST"], databases: nil),
        Endpoint(subpath: "users/current", methods: ["GET", "POST"], databases: nil),
        Endpoint(subpath: "users/discover", methods: ["GET", "POST"], databases: nil),
        Endpoint(subpath: "users/lookup/email", methods: ["POST"], databases: nil),
        Endpoint(subpath: "users/lookup/id", methods: ["POST"], databases: nil),
    ]

    /// Every route the server answers, as `METHOD path-template`, one per line.
    public static var routes: [String] {
        var lines = ["GET /healthz", "GET /share/{shortGUID}"]
        for e in endpoints {
            for database in e.databases ?? ["{database}"] {
                for method in e.methods { lines.append("\(method) /database/1/{container}/{environment}/\(database)/\(e.subpath)") }
            }
        }
        return lines
    }

    /// The endpoint of a request, or the error that it has none: an unknown subpath is 404, a
    /// known one with another method or off its database's path is 400.
    private func endpoint(_ r: APIRequest) throws -> Endpoint {
        guard let e = Self.endpoints.first(where: { $0.subpath == r.subpath }) else {
            throw Failure(status: 404, body: WireFormat.error(code: "NOT_FOUND", reason: "no endpoint \(Naming.printable(String(r.subpath.prefix(200))))"))
        }
        guard e.methods.contains(r.method) else {
            throw WireFormat.BadRequest(reason: "\(r.subpath) is \(e.methods.joined(separator: " or ")), not \(Naming.printable(String(r.method.prefix(20))))")
        }
        if let databases = e.databases, !databases.contains(r.database) {
            throw WireFormat.BadRequest(reason: "\(r.subpath) is on the \(databases.joined(separator: " or ")) database's path")
        }
        return e
    }

    private func dispatch(_ r: APIRequest, scope: DatabaseScope, caller: Account?, body: Object) throws -> Object {
        _ = try endpoint(r)
        switch r.subpath {
        case "users/caller":
            return ["users": [identity(of: try requireUser(caller))]]
        case "users/current":
            let me = try requireUser(caller)
            var o: Object = ["userRecordName": me.userRecordID]
            o["firstName"] = me.name.givenName ?? NSNull()
            o["lastName"] = me.name.familyName ?? NSNull()
            return o
        case "zones/list":
            let db = try database(r, scope, try reader(caller, scope))
            return ["zones": try db.fetchAllRecordZones().map { ["zoneID": WireFormat.zoneID($0.zoneID)] }]
        case "zones/lookup":
            let me = try reader(caller, scope)
            let db = try database(r, scope, me)
            let known = Set(try db.fetchAllRecordZones().map(\.zoneID))
            guard let zones = try WireFormat.items(body["zones"], field: "zones") else { throw WireFormat.BadRequest(reason: "zones is required") }
            let asked = try zones.enumerated().map { n, z in
                try WireFormat.zoneID(z, field: "zones[\(n)]", caller: me.userRecordID)!
            }
            return ["zones": asked.map { z -> Object in
                known.contains(z) ? ["zoneID": WireFormat.zoneID(z)]
                    : WireFormat.zoneError(code: "ZONE_NOT_FOUND", reason: "zone \(z.zoneName) does not exist", zoneID: z)
            }]
        case "zones/modify":
            let me = try requireUser(caller)
            let db = try database(r, scope, me)
            guard let ops = try WireFormat.items(body["operations"], field: "operations") else { throw WireFormat.BadRequest(reason: "operations is required") }
            return ["zones": try ops.enumerated().map { n, raw -> Object in
                guard let op = raw as? Object, let type = op["operationType"] as? String, let zone = op["zone"] as? Object,
                      let zid = try WireFormat.zoneID(zone["zoneID"], field: "operations[\(n)].zone.zoneID", caller: me.userRecordID) else {
                    throw WireFormat.BadRequest(reason: "operations[\(n)] needs operationType and zone.zoneID")
                }
                do {
                    // Zones are made and deleted in one's own database only.
                    guard zid.ownerName == me.userRecordID || zid.ownerName == RecordZoneID.default.ownerName else {
                        throw ShareFlowError(.permissionFailure, "zone \(zid.zoneName) belongs to \(zid.ownerName); zones are made and deleted by their owner, in their own database")
                    }
                    switch type {
                    case "create": return ["zoneID": WireFormat.zoneID(try db.saveZone(zid.zoneName).zoneID)]
                    case "delete":
                        try db.deleteZone(zid)
                        return ["zoneID": WireFormat.zoneID(zid), "deleted": true]
                    default: throw WireFormat.BadRequest(reason: "operations[\(n)].operationType '\(type)' is not create or delete")
                    }
                } catch let e as ShareFlowError {
                    return WireFormat.zoneError(e, zoneID: zid)
                }
            }]
        case "records/lookup":
            let me = try reader(caller, scope)
            let db = try database(r, scope, me)
            let zone = try WireFormat.zoneID(body["zoneID"], field: "zoneID", caller: me.userRecordID) ?? .default
            guard let items = try WireFormat.items(body["records"], field: "records") else { throw WireFormat.BadRequest(reason: "records is required") }
            let desired = try WireFormat.strings(body["desiredKeys"], field: "desiredKeys")
            let asStrings = try WireFormat.bool(body["numbersAsStrings"], field: "numbersAsStrings") ?? false
            // A name asked again is read once; every answer counts against the response's
            // budget, so 200 copies of a 1 MB record are not a 200 MB answer.
            var fetched: [String: Result<Record, ShareFlowError>] = [:]
            var budget = maxResponseBytes
            return ["records": try items.enumerated().map { n, raw -> Object in
                guard let item = raw as? Object, let name = item["recordName"] as? String else {
                    throw WireFormat.BadRequest(reason: "records[\(n)].recordName is required")
                }
                // A record's own desiredKeys, else the request's.
                let keys = try WireFormat.strings(item["desiredKeys"], field: "records[\(n)].desiredKeys") ?? desired
                // Past the budget nothing more is read: the work and the memory stop there too.
                let overBudget = WireFormat.recordError(code: "QUOTA_EXCEEDED", reason: "limitExceeded: this response carries at most \(maxResponseBytes) bytes of records; ask for \(Naming.printable(name)) in another request",
                                                        recordName: name)
                guard budget > 0 else { return overBudget }
                let result = fetched[name] ?? Result { try db.fetchRecord(RecordID(recordName: name, zoneID: zone)) }
                    .mapError { $0 as? ShareFlowError ?? ShareFlowError(.serviceUnavailable, "\($0)") }
                switch result {
                case .success(let record):
                    guard record.storedBytes <= budget else {
                        budget = 0
                        return overBudget
                    }
                    fetched[name] = result
                    budget -= record.storedBytes
                    return WireFormat.record(record, desiredKeys: keys, numbersAsStrings: asStrings)
                case .failure(let e):
                    fetched[name] = result
                    return WireFormat.recordError(e, recordName: name)
                }
            }]
        case "records/query":
            let me = try reader(caller, scope)
            return try query(try database(r, scope, me), caller: me, body: body)
        case "users/lookup/email", "users/lookup/id":
            let me = try requireUser(caller)
            let byEmail = r.subpath.hasSuffix("email")
            guard let asked = try WireFormat.items(body["users"], field: "users") else { throw WireFormat.BadRequest(reason: "users is required") }
            let requests = try asked.enumerated().map { n, raw -> LookupRequest in
                let key = byEmail ? "emailAddress" : "userRecordName"
                guard let o = raw as? Object, let v = o[key] as? String else {
                    throw WireFormat.BadRequest(reason: "users[\(n)].\(key) is required")
                }
                return byEmail ? LookupRequest(emailAddress: v) : LookupRequest(userRecordID: v)
            }
            // Discoverable accounts only (R20), as Apple's lookup answers.
            let (found, _) = try engine.session(for: me).container(r.container, environment: r.cloudEnvironment).discoverUserIdentityResults(requests)
            return ["users": found.map { i -> Object in
                var o: Object = ["userRecordName": i.userRecordID ?? ""]
                o["firstName"] = i.nameComponents?.givenName ?? NSNull()
                o["lastName"] = i.nameComponents?.familyName ?? NSNull()
                if byEmail, let e = i.lookupInfo?.emailAddress { o["emailAddress"] = e }
                return o
            }]
        case "users/discover":
            // GET: the caller's contacts that are discoverable accounts (R19); POST: the
            // accounts of `lookupInfos` that are discoverable (R20). Unknown ones are left out.
            let me = try requireUser(caller)
            let container = try engine.session(for: me).container(r.container, environment: r.cloudEnvironment)
            let (found, error): ([UserIdentity], ShareFlowError?)
            if r.isGET {
                (found, error) = container.discoverAllUserIdentityResults()
            } else {
                guard let infos = try WireFormat.items(body["lookupInfos"], field: "lookupInfos") else { throw WireFormat.BadRequest(reason: "lookupInfos is required") }
                let requests = try infos.enumerated().map { n, raw -> LookupRequest in
                    guard let o = raw as? Object else { throw WireFormat.BadRequest(reason: "lookupInfos[\(n)] must be an object") }
                    let field = "lookupInfos[\(n)]"
                    let email = try WireFormat.string(o["emailAddress"], field: "\(field).emailAddress")
                    let phone = try WireFormat.string(o["phoneNumber"], field: "\(field).phoneNumber")
                    let id = try WireFormat.string(o["userRecordName"], field: "\(field).userRecordName")
                    guard email != nil || phone != nil || id != nil else {
                        throw WireFormat.BadRequest(reason: "\(field) needs emailAddress, phoneNumber or userRecordName")
                    }
                    return LookupRequest(emailAddress: email, phoneNumber: phone, userRecordID: id)
                }
                (found, error) = container.discoverUserIdentityResults(requests)
            }
            if let error, error.code != .partialFailure { throw error }
            return ["users": found.map(WireFormat.identity)]
        case "records/modify":
            let me = try requireUser(caller)
            return try modify(try database(r, scope, me), caller: me, body: body)
        case "records/resolve", "records/accept":
            let me = try requireUser(caller)
            return try resolve(container: try engine.session(for: me).container(r.container, environment: r.cloudEnvironment), body: body,
                               accept: r.subpath == "records/accept")
        default:
            throw Failure(status: 404, body: WireFormat.error(code: "NOT_FOUND", reason: "no endpoint \(r.subpath)"))
        }
    }

    private func database(_ r: APIRequest, _ scope: DatabaseScope, _ caller: Account) throws -> CloudDatabase {
        try engine.session(for: caller).container(r.container, environment: r.cloudEnvironment).database(scope)
    }

    private func identity(of a: Account) -> Object {
        var o: Object = ["userRecordName": a.userRecordID]
        if let e = a.email { o["lookupInfo"] = ["emailAddress": e] }
        var name: Object = [:]
        if let g = a.name.givenName { name["givenName"] = g }
        if let f = a.name.familyName { name["familyName"] = f }
        if !name.isEmpty { o["nameComponents"] = name }
        return o
    }

    /// records/query: `query` {`recordType`, `filterBy`, `sortBy`}, `zoneID`, `resultsLimit`,
    /// `desiredKeys`, and `continuationMarker` to go on (O7 underneath, R12 included).
    private func query(_ db: CloudDatabase, caller: Account, body: Object) throws -> Object {
        guard let q = try WireFormat.object(body["query"], field: "query"),
              let type = try WireFormat.string(q["recordType"], field: "query.recordType") else {
            throw WireFormat.BadRequest(reason: "query.recordType is required")
        }
        let zone = try WireFormat.zoneID(body["zoneID"], field: "zoneID", caller: caller.userRecordID)
        var parts: [ShareFlow.Predicate] = []
        for (n, raw) in (try WireFormat.items(q["filterBy"], field: "query.filterBy") ?? []).enumerated() {
            let field = "query.filterBy[\(n)]"
            guard let f = raw as? Object, let comparator = f["comparator"] as? String else {
                throw WireFormat.BadRequest(reason: "\(field).comparator is required")
            }
            guard let key = (f["fieldName"] ?? f["systemFieldName"]) as? String else {
                throw WireFormat.BadRequest(reason: "\(field) needs fieldName or systemFieldName")
            }
            let name = WireFormat.systemFieldKeys[key] ?? key
            guard let rawValue = f["fieldValue"] else { throw WireFormat.BadRequest(reason: "\(field).fieldValue is required") }
            let value = try WireFormat.fieldValue(rawValue, field: "\(field).fieldValue", zone: zone ?? .default)
            let ops: [String: ShareFlow.Predicate.Comparison] = ["EQUALS": .equal, "NOT_EQUALS": .notEqual, "LESS_THAN": .less,
                                                       "LESS_THAN_OR_EQUALS": .lessOrEqual, "GREATER_THAN": .greater,
                                                       "GREATER_THAN_OR_EQUALS": .greaterOrEqual]
            if let op = ops[comparator] {
                parts.append(.compare(key: name, op: op, value: value))
            } else if comparator == "BEGINS_WITH", case .string(let prefix) = value {
                parts.append(.beginsWith(key: name, prefix: prefix))
            } else if comparator == "IN", case .list(let values) = value {
                guard values.count <= WireFormat.maxItems else {
                    throw WireFormat.BadRequest(reason: "limitExceeded: \(field).fieldValue has \(values.count) values for IN; a request holds at most \(WireFormat.maxItems)")
                }
                parts.append(.isIn(key: name, values: values))
            } else if comparator == "LIST_CONTAINS" {
                parts.append(.any(key: name, op: .equal, value: value))
            } else {
                throw WireFormat.BadRequest(reason: "\(field).comparator \(comparator) is not supported here (EQUALS, NOT_EQUALS, LESS_THAN, LESS_THAN_OR_EQUALS, GREATER_THAN, GREATER_THAN_OR_EQUALS, BEGINS_WITH with a string, IN with a list, LIST_CONTAINS)")
            }
        }
        let sorts = try (WireFormat.items(q["sortBy"], field: "query.sortBy") ?? []).enumerated().map { n, raw -> ShareFlow.SortDescriptor in
            guard let o = raw as? Object, let key = (o["fieldName"] ?? o["systemFieldName"]) as? String else {
                throw WireFormat.BadRequest(reason: "query.sortBy[\(n)] needs fieldName or systemFieldName")
            }
            let ascending = try WireFormat.bool(o["ascending"], field: "query.sortBy[\(n)].ascending") ?? true
            return ShareFlow.SortDescriptor(key: WireFormat.systemFieldKeys[key] ?? key, ascending: ascending)
        }
        // R33: the marker is where the last page ended (its last record's sort values and
        // name), not an offset. It names what it belongs to — environment, database, zone,
        // caller and query — and a marker of anything else is refused, never a wrong page.
        let predicate: ShareFlow.Predicate = parts.isEmpty ? .all : parts.count == 1 ? parts[0] : .and(parts)
        let context = Self.markerContext(db, zone: zone, caller: caller,
                                         query: Query(recordType: type, predicate: predicate, sortDescriptors: sorts))
        var after: QueryPosition?
        if let marker = body["continuationMarker"] {
            guard let s = marker as? String, s.utf8.count <= 65536, let data = Data(base64Encoded: s),
                  let decoded = try? JSONDecoder().decode(QueryMarker.self, from: data) else {
                throw WireFormat.BadRequest(reason: "continuationMarker is not one this server gave for this query")
            }
            guard decoded.context == context, decoded.position.values.count == sorts.count else {
                throw WireFormat.BadRequest(reason: "continuationMarker belongs to another query, zone, database, environment or user; start this query without it")
            }
            after = decoded.position
        }
        // Apple answers at most 200 records a page; more follow with the continuation marker.
        let limit = try WireFormat.integer(body["resultsLimit"], field: "resultsLimit", in: 1...Int(Int32.max)).map { min($0, 200) } ?? 200
        let desired = try WireFormat.strings(body["desiredKeys"], field: "desiredKeys")
        _ = try WireFormat.bool(body["zoneWide"], field: "zoneWide")
        let page = try db.records(matching: Query(recordType: type, predicate: predicate, sortDescriptors: sorts),
                                  inZoneWith: zone, desiredKeys: desired, resultsLimit: limit, after: after, maxBytes: maxResponseBytes)
        let asStrings = try WireFormat.bool(body["numbersAsStrings"], field: "numbersAsStrings") ?? false
        var o: Object = ["records": page.records.map { WireFormat.record($0, desiredKeys: desired, numbersAsStrings: asStrings) }]
        if let next = page.next, let data = try? JSONEncoder().encode(QueryMarker(position: next, context: context)) {
            o["continuationMarker"] = data.base64EncodedString()
        }
        return o
    }

    /// R26 before R2: the caller may change this share's participants — its owner (a new share
    /// in their own zone, which exists), or its owner or an administrator (a saved one).
    private static func requireParticipantManager(_ share: Share, creating: Bool, db: CloudDatabase, zone: RecordZoneID, item: String) throws {
        if creating {
            guard db.databaseScope == .private else {
                throw ShareFlowError(.permissionFailure, "\(item): shares are made by their owner, in the private database")
            }
            let zones = try db.fetchAllRecordZones()
            guard zone.isDefaultZone || zones.contains(where: { $0.zoneID.zoneName == zone.zoneName }) else {
                throw ShareFlowError(.zoneNotFound, "zone '\(zone.zoneName)' does not exist; save it first")
            }
            return
        }
        let role = share.currentUserParticipant?.role
        guard role == .owner || role == .administrator else {
            throw ShareFlowError(.permissionFailure, "\(item): only its owner or an administrator changes its participants (R26)")
        }
    }

    /// A continuation marker: where the page ended, and what query it is of.
    private struct QueryMarker: Codable {
        let position: QueryPosition
        let context: String
    }

    /// What a marker belongs to, as a digest: the environment, database, zone, caller and query.
    private static func markerContext(_ db: CloudDatabase, zone: RecordZoneID?, caller: Account, query: Query) -> String {
        let zone = zone ?? .default
        let text = [db.container.containerIdentifier, db.container.environment.rawValue, db.databaseScope.rawValue,
                    zone.zoneName, zone.ownerName, caller.userRecordID, query.recordType, "\(query.predicate)",
                    query.sortDescriptors.map { "\($0.key) \($0.ascending)" }.joined(separator: ",")].joined(separator: "\u{0}")
        return SHA256.hash(data: Data(text.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    /// The Share object a share record of records/modify stands for: on `create`, a new share
    /// of `forRecord` (saved in this request, or already on the server: Apple's two-request
    /// flow); otherwise the server's share at the given tag. Its participants become those listed, named by `userIdentity.lookupInfo` and
    /// resolved as FetchShareParticipants does (no account: R2); `publicPermission` as given.
    private func shareFor(_ n: Int, _ rec: Object, type: String, name: String, zone: RecordZoneID, db: CloudDatabase,
                          plans: [Record], companion: inout Record?) throws -> Share {
        let field = "operations[\(n)].record"
        let share: Share
        if type == "create" {
            guard let forRecord = try WireFormat.object(rec["forRecord"], field: "\(field).forRecord"),
                  let rootName = try WireFormat.string(forRecord["recordName"], field: "\(field).forRecord.recordName") else {
                throw WireFormat.BadRequest(reason: "\(field).forRecord.recordName is required to create a share")
            }
            let tag = try WireFormat.string(forRecord["recordChangeTag"], field: "\(field).forRecord.recordChangeTag")
            if let root = plans.first(where: { $0.recordID.recordName == rootName }) {
                share = Share(rootRecord: root, recordName: name)
            } else {
                // A root saved by an earlier request, at the tag the client holds: saved again
                // with its share, in this request (R5), so a changed root is CONFLICT.
                let root = try db.fetchRecord(RecordID(recordName: rootName, zoneID: zone))
                if let tag, tag != root.recordChangeTag {
                    throw ShareFlowError(.serverRecordChanged, "record \(rootName) changed on the server since this copy (forRecord.recordChangeTag \(tag), server's \(root.recordChangeTag ?? "?")) (R21)")
                }
                companion = root
                share = Share(rootRecord: root, recordName: name)
            }
        } else {
            guard let server = try db.fetchRecord(RecordID(recordName: name, zoneID: zone)) as? Share else {
                throw ShareFlowError(.invalidArguments, "record \(name) is not a share")
            }
            if type == "update" || type == "replace" {
                let tag = try WireFormat.string(rec["recordChangeTag"], field: "\(field).recordChangeTag")
                guard tag == server.recordChangeTag else {
                    throw ShareFlowError(.serverRecordChanged, "share \(name) changed on the server since this copy (recordChangeTag \(tag ?? "missing"), server's \(server.recordChangeTag ?? "?")) (R21)")
                }
            }
            share = server
        }
        if let p = try WireFormat.permission(rec["publicPermission"], field: "\(field).publicPermission") { share.publicPermission = p }
        if let fields = try WireFormat.object(rec["fields"], field: "\(field).fields") {
            for (key, value) in fields { share.fields[key] = try WireFormat.fieldValue(value, field: key, zone: zone) }
        }
        guard let listed = try WireFormat.items(rec["participants"], field: "\(field).participants") else { return share }
        // Who may change participants is decided before any address is looked up: a request
        // that would fail anyway resolves no one (no participant.fetched for plugins to log).
        try Self.requireParticipantManager(share, creating: type == "create", db: db, zone: zone, item: "share \(name)")
        var keep = Set<String>()
        var permissionChanged = false
        for (m, raw) in listed.enumerated() {
            guard let p = raw as? Object else { throw WireFormat.BadRequest(reason: "\(field).participants[\(m)] must be an object") }
            if try WireFormat.string(p["type"], field: "\(field).participants[\(m)].type") == "OWNER" { continue }
            let permission = try WireFormat.permission(p["permission"], field: "\(field).participants[\(m)].permission") ?? .readOnly
            if let id = try WireFormat.string(p["participantId"], field: "\(field).participants[\(m)].participantId"), let existing = share.participants.first(where: { $0.participantID == id }) {
                if existing.permission != permission { permissionChanged = true }
                existing.permission = permission
                keep.insert(id)
                continue
            }
            let at = "\(field).participants[\(m)].userIdentity"
            let identity = try WireFormat.object(p["userIdentity"], field: at)
            let info = try WireFormat.object(identity?["lookupInfo"], field: at + ".lookupInfo") ?? [:]
            let request = LookupRequest(emailAddress: try WireFormat.string(info["emailAddress"], field: at + ".lookupInfo.emailAddress"),
                                        phoneNumber: try WireFormat.string(info["phoneNumber"], field: at + ".lookupInfo.phoneNumber"),
                                        userRecordID: try WireFormat.string(info["userRecordName"], field: at + ".lookupInfo.userRecordName"))
            let (results, _) = db.container.fetchShareParticipantResults([request])
            let participant = try results[0].1.get()
            participant.permission = permission
            share.addParticipant(participant)
            if let same = share.participants.first(where: { $0 === participant || $0.userIdentity.lookupInfo == participant.userIdentity.lookupInfo }) {
                keep.insert(same.participantID)
            }
        }
        for p in share.participants where p.role != .owner && !keep.contains(p.participantID) { share.removeParticipant(p) }
        // R35: a share's participants are saved only from the server's current copy, whatever
        // the operationType: a forced save that changes them needs the copy's change tag (a list
        // built before someone accepted would take them off).
        if type.hasPrefix("force"), !share.addedParticipantIDs.isEmpty || !share.removedParticipantIDs.isEmpty || permissionChanged {
            let tag = try WireFormat.string(rec["recordChangeTag"], field: "\(field).recordChangeTag")
            guard let tag, tag == share.recordChangeTag else {
                throw ShareFlowError(.serverRecordChanged, "share \(name): its participants are saved only from the server's current copy, whatever the operationType (recordChangeTag \(tag ?? "missing"), server's \(share.recordChangeTag ?? "?")) (R35)")
            }
        }
        return share
    }

    /// records/resolve and records/accept: each short GUID's share, as its caller sees it.
    private func resolve(container: Container, body: Object, accept: Bool) throws -> Object {
        guard let guids = try WireFormat.items(body["shortGUIDs"], field: "shortGUIDs") else { throw WireFormat.BadRequest(reason: "shortGUIDs is required") }
        var results: [Object] = []
        for (n, raw) in guids.enumerated() {
            guard let g = raw as? Object, let value = g["value"] as? String else {
                throw WireFormat.BadRequest(reason: "shortGUIDs[\(n)].value is required")
            }
            do {
                results.append(try shortGUIDResult(value, g, container: container, accept: accept))
            } catch let e as ShareFlowError where e.code == .participantMayNeedVerification {
                // R16's case has a form of its own: a result whose potentialMatchList shows,
                // masked, where the invitations went, so the caller knows which address to verify.
                results.append(["containerIdentifier": container.containerIdentifier, "databaseScope": "SHARED",
                                "shortGUID": ["value": value],
                                "potentialMatchList": e.potentialMatches.map { m -> Object in
                                    ["participantId": m.participantID, "contactInformation": WireFormat.masked(m.lookupInfo)]
                                }])
            } catch let e as ShareFlowError {
                results.append(WireFormat.resultError(e, shortGUID: value))
            }
        }
        return ["results": results]
    }

    private func shortGUIDResult(_ value: String, _ g: Object, container: Container, accept: Bool) throws -> Object {
        let url = engine.shareURL(token: value)
        let fetchRoot = try WireFormat.bool(g["shouldFetchRootRecord"], field: "shortGUIDs.shouldFetchRootRecord") ?? false
        let keys = try WireFormat.strings(g["rootRecordDesiredKeys"], field: "shortGUIDs.rootRecordDesiredKeys")
        let first = try container.fetchShareMetadataResults([url], shouldFetchRootRecord: fetchRoot, rootRecordDesiredKeys: keys).0[0].1.get()
        let meta: ShareMetadata
        if accept {
            _ = try container.acceptShareResults([first]).0[0].1.get()
            meta = try container.fetchShareMetadataResults([url], shouldFetchRootRecord: fetchRoot, rootRecordDesiredKeys: keys).0[0].1.get()
        } else {
            meta = first
        }
        var o: Object = ["containerIdentifier": meta.containerIdentifier, "environment": meta.environment.rawValue, "databaseScope": "SHARED",
                         "zoneID": WireFormat.zoneID(meta.share.recordID.zoneID), "share": WireFormat.record(meta.share),
                         "ownerIdentity": WireFormat.identity(meta.ownerIdentity), "shortGUID": ["value": value],
                         "participantPermission": WireFormat.permission(meta.participantPermission),
                         "participantStatus": WireFormat.status(meta.participantStatus),
                         "participantType": WireFormat.type(meta.participantRole)]
        o["webpageURL"] = engine.shareURL(token: value)
        if let root = meta.hierarchicalRootRecordID { o["rootRecordName"] = root.recordName }
        if let root = meta.rootRecord { o["rootRecord"] = WireFormat.record(root) }
        return o
    }

    /// records/modify: `create` (a new record; an existing name is EXISTS), `update` and
    /// `replace` (the copy at `recordChangeTag`: a stale one is CONFLICT), their `force` forms
    /// (no tag), `delete` and `forceDelete`. `atomic` (default true) is R22's.
    private func modify(_ db: CloudDatabase, caller: Account, body: Object) throws -> Object {
        guard let ops = try WireFormat.items(body["operations"], field: "operations") else { throw WireFormat.BadRequest(reason: "operations is required") }
        let zone = try WireFormat.zoneID(body["zoneID"], field: "zoneID", caller: caller.userRecordID) ?? .default
        let atomic = try WireFormat.bool(body["atomic"], field: "atomic") ?? true
        let desired = try WireFormat.strings(body["desiredKeys"], field: "desiredKeys")
        let asStrings = try WireFormat.bool(body["numbersAsStrings"], field: "numbersAsStrings") ?? false
        _ = try WireFormat.bool(body["numbersAsStrings"], field: "numbersAsStrings")
        // A companion is a share's root saved with it but not asked for (not in the response).
        enum Planned { case save(Record, RecordSavePolicy), delete(RecordID, tag: String?), failed(Object), share(Int, Object, String), companion(Record) }
        var plans: [(name: String, plan: Planned)] = []
        for (n, raw) in ops.enumerated() {
            guard let op = raw as? Object, let type = op["operationType"] as? String, let rec = op["record"] as? Object else {
                throw WireFormat.BadRequest(reason: "operations[\(n)] needs operationType and record")
            }
            let name = try WireFormat.string(rec["recordName"], field: "operations[\(n)].record.recordName") ?? UUID().uuidString
            let id = RecordID(recordName: name, zoneID: zone)
            let tag = try WireFormat.string(rec["recordChangeTag"], field: "operations[\(n)].record.recordChangeTag")
            // A share (Apple spells it cloudKit.share in requests): made below, once the records
            // of this request are known (its root is one of them, R5).
            guard ["create", "update", "forceUpdate", "replace", "forceReplace", "delete", "forceDelete"].contains(type) else {
                throw WireFormat.BadRequest(reason: "operations[\(n)].operationType '\(Naming.printable(String(type.prefix(40))))' is not one of create, update, forceUpdate, replace, forceReplace, delete, forceDelete")
            }
            let given = try WireFormat.object(rec["fields"], field: "operations[\(n)].record.fields")
            if let given, given.count > ModifyLimits.maxFields {
                throw WireFormat.BadRequest(reason: "limitExceeded: operations[\(n)].record.fields has \(given.count) fields; a record holds at most \(ModifyLimits.maxFields)")
            }
            let parentName = try WireFormat.object(rec["parent"], field: "operations[\(n)].record.parent")
                .map { try WireFormat.string($0["recordName"], field: "operations[\(n)].record.parent.recordName") }
            let wantsShortGUID = try WireFormat.bool(rec["createShortGUID"], field: "operations[\(n)].record.createShortGUID") ?? false
            if try WireFormat.string(rec["recordType"], field: "operations[\(n)].record.recordType")?.lowercased() == "cloudkit.share" && !type.hasSuffix("elete") {
                plans.append((name, .share(n, rec, type)))
                continue
            }
            do {
                switch type {
                case "delete", "forceDelete":
                    // R21, checked by the engine in its transaction: a `delete` needs the current
                    // change tag (none given never matches one); `forceDelete` does not.
                    plans.append((name, .delete(id, tag: type == "delete" ? tag ?? "" : nil)))
                case "create", "update", "forceUpdate", "replace", "forceReplace":
                    guard let recordType = try WireFormat.string(rec["recordType"], field: "operations[\(n)].record.recordType") else {
                        throw WireFormat.BadRequest(reason: "operations[\(n)].record.recordType is required")
                    }
                    var fields: [String: FieldValue] = [:]
                    for (key, value) in given ?? [:] {
                        fields[key] = try WireFormat.fieldValue(value, field: key, zone: zone)
                    }
                    var parent: RecordID?
                    if let pn = parentName ?? nil { parent = RecordID(recordName: pn, zoneID: zone) }
                    // Apple: a record saved with createShortGUID gets the short GUID its share
                    // will have (the share's URL token).
                    // R36: forceUpdate and forceReplace of a record that does not exist create it
                    // (Apple: "Creates a record if it doesn't exist"); update and replace stay NOT_FOUND.
                    var existing: Record?
                    if type != "create" {
                        do { existing = try db.fetchRecord(id) } catch let e as ShareFlowError where e.code == .unknownItem && type.hasPrefix("force") {
                            existing = nil
                        }
                    }
                    guard let server = existing else {
                        let record = Record(recordType: recordType, recordID: id, fields: fields, parent: parent)
                        record.requestsShortGUID = wantsShortGUID
                        plans.append((name, .save(record, .ifServerRecordUnchanged)))
                        continue
                    }
                    if type == "update" || type == "replace" {
                        guard let tag, tag == server.recordChangeTag else {
                            throw ShareFlowError(.serverRecordChanged, "record \(name) changed on the server since this copy (recordChangeTag \(tag ?? "missing"), server's \(server.recordChangeTag ?? "?")) (R21)")
                        }
                    }
                    // update merges the given fields into the server's; replace is the record given.
                    let merged = type.hasSuffix("pdate") ? server.fields.merging(fields) { _, new in new } : fields
                    let record = Record(recordType: recordType, recordID: id, fields: merged, parent: parent ?? (type.hasSuffix("pdate") ? server.parent : nil))
                    record.assumeServerCopy(of: server)
                    record.requestsShortGUID = wantsShortGUID
                    plans.append((name, .save(record, .ifServerRecordUnchanged)))
                default:
                    throw WireFormat.BadRequest(reason: "operations[\(n)].operationType '\(type)' is not one of create, update, forceUpdate, replace, forceReplace, delete, forceDelete")
                }
            } catch let e as ShareFlowError {
                plans.append((name, .failed(WireFormat.recordError(e, recordName: name))))
            }
        }
        var companions: [(name: String, plan: Planned)] = []
        for (index, item) in plans.enumerated() {
            guard case .share(let n, let rec, let type) = item.plan else { continue }
            do {
                var companion: Record?
                let share = try shareFor(n, rec, type: type, name: item.name, zone: zone, db: db, plans: plans.compactMap {
                    if case .save(let r, _) = $0.plan { return r }; return nil
                }, companion: &companion)
                plans[index].plan = .save(share, .ifServerRecordUnchanged)
                if let companion { companions.append((companion.recordID.recordName, .companion(companion))) }
            } catch let e as ShareFlowError {
                plans[index].plan = .failed(WireFormat.recordError(e, recordName: item.name))
            }
        }
        plans = companions + plans
        let precheckFailed = plans.contains { if case .failed = $0.plan { true } else { false } }
        if precheckFailed && atomic && !zone.isDefaultZone {
            return ["records": plans.compactMap { p -> Object? in
                if case .companion = p.plan { return nil }
                if case .failed(let o) = p.plan { return o }
                return WireFormat.recordError(code: "ATOMIC_ERROR", reason: "batchRequestFailed: another operation of this atomic request failed (R22)",
                                              recordName: p.name)
            }]
        }
        let saves = plans.compactMap { p -> Record? in
            switch p.plan {
            case .save(let r, _), .companion(let r): return r
            default: return nil
            }
        }
        let deletes = plans.compactMap { p -> RecordID? in if case .delete(let id, _) = p.plan { return id }; return nil }
        var tags: [RecordID: String] = [:]
        for p in plans { if case .delete(let id, let tag?) = p.plan { tags[id] = tag } }
        let result = try db.modifyRecords(saving: saves, deleting: deletes, atomically: atomic, deletingOnlyAtTags: tags)
        var saved = result.saveResults.makeIterator(), deleted = result.deleteResults.makeIterator()
        // A companion's failure is its share's: the client asked for the share only.
        var companionFailure: ShareFlowError?
        return ["records": plans.compactMap { p -> Object? in
            switch p.plan {
            case .companion:
                if case .failure(let e) = saved.next()!.1 { companionFailure = e }
                return nil
            case .failed(let o): return o
            case .save(let asked, _):
                switch saved.next()!.1 {
                case .success(let r): return WireFormat.record(r, desiredKeys: desired, numbersAsStrings: asStrings)
                case .failure(let e):
                    if let root = companionFailure, asked is Share, e.code == .batchRequestFailed {
                        return WireFormat.recordError(ShareFlowError(root.code, "the share's root record: \(root.message)"), recordName: p.name)
                    }
                    return WireFormat.recordError(e, recordName: p.name)
                }
            case .share: return WireFormat.recordError(code: "INTERNAL_ERROR", reason: "share \(p.name) was not planned", recordName: p.name)
            case .delete:
                switch deleted.next()!.1 {
                case .success: return ["recordName": p.name, "deleted": true]
                case .failure(let e): return WireFormat.recordError(e, recordName: p.name)
                }
            }
        }]
    }
}
