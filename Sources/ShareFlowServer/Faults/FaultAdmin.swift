import Foundation
import HTTPTypes
import Hummingbird
import ShareFlow

/// The fault rules over HTTP (SPEC §15), for a tester driving an app from outside:
/// `POST /admin/1/faults` `{ "rules": [ … ] }` arms them (all or none) and answers their ids,
/// `GET` lists the armed rules, `GET …/history` the last injections, `DELETE` clears the
/// rules armed at run time (never the config file's), `DELETE …/<id>` removes one. Only an
/// admin token (`shareflow tokens admin`) opens it, as `Authorization: Bearer <token>`; a
/// user's, an API token or a key is 401.
///
/// ```sh
/// curl -H "Authorization: Bearer $ADMIN" -d '{"rules":[{"operation":"records/modify","fault":"requestRateLimited"}]}' \
///      http://127.0.0.1:8080/admin/1/faults
/// ```
struct FaultAdmin: Sendable {
    let engine: Engine
    let thread: EngineThread
    /// `server.rateLimit`, when set: every admin request takes from its address's bucket.
    var limiter: RateLimiter?

    static let path = "/admin/1/faults"
    /// The routes, as `shareflow serve --routes` lists them.
    static let routes = ["POST \(path)", "GET \(path)", "DELETE \(path)", "GET \(path)/history", "DELETE \(path)/{id}"]
    /// The largest body a POST may have.
    static let maxBodyBytes = 1 << 20

    func register(on router: Router<ServerRequestContext>) {
        let group = router.group(RouterPath(FaultAdmin.path))
        if let limiter { group.add(middleware: AddressRateLimit(limiter: limiter)) }
        let admin = group.add(middleware: AdminAuthentication(engine: engine, thread: thread))
        admin.post { request, _ in try await arm(request) }
        admin.get { _, _ in list() }
        admin.get("history") { _, _ in history() }
        admin.delete { _, _ in
            CloudKitServer.response(status: 200, WireObject(["removed": engine.faults.clear()]))
        }
        admin.delete(":id") { _, context in
            let raw = context.parameters.get("id") ?? ""
            // SPEC §15: the config file's rules are never removed at run time, by id neither.
            if let id = Int(raw), engine.faults.list().contains(where: { $0.id == id && $0.owner == .config }) {
                throw CloudKitError.badRequest(
                    "fault rule \(id) is the config file's: it lasts as long as the server (edit the config file to change it)"
                )
            }
            guard let id = Int(raw), engine.faults.remove(id: id) else {
                throw CloudKitError(status: 404, code: "NOT_FOUND", reason: "no armed fault rule has id \(Naming.printable(String(raw.prefix(40))))")
            }
            return CloudKitServer.response(status: 200, WireObject(["removed": 1]))
        }
    }

    private func arm(_ request: Request) async throws -> Response {
        var request = request
        let data = try await request.collectBody(upTo: FaultAdmin.maxBodyBytes)
        guard let object = try? JSONSerialization.jsonObject(with: Data(buffer: data)) as? WireFormat.Object else {
            throw CloudKitError.badRequest("the body must be a JSON object { \"rules\": [ … ] }")
        }
        for key in object.keys where key != "rules" {
            throw CloudKitError.badRequest("unknown key '\(Naming.printable(String(key.prefix(40))))' (expected rules)")
        }
        guard let list = object["rules"] as? [Any], !list.isEmpty else {
            throw CloudKitError.badRequest("rules is required: a list of rule objects")
        }
        guard list.count <= FaultInjector.maxRules else {
            throw CloudKitError.badRequest("rules has \(list.count) rules; at most \(FaultInjector.maxRules) are armed at once")
        }
        // Every rule checked before any is armed: a bad one arms none.
        let rules = try list.enumerated().map { n, raw -> FaultRule in
            guard let fields = raw as? WireFormat.Object else {
                throw CloudKitError.badRequest("rules[\(n)] must be an object of named fields")
            }
            do {
                return try FaultRule(fields.mapValues(FaultAdmin.value), name: "rules[\(n)]")
            } catch let e as ShareFlowError {
                throw CloudKitError.badRequest(e.message)
            }
        }
        var ids: [Int] = []
        do {
            for rule in rules { ids.append(try engine.faults.add(rule)) }
        } catch let e as ShareFlowError {
            for id in ids { engine.faults.remove(id: id) }
            throw CloudKitError.badRequest(e.message)
        }
        let armed = engine.faults.list().filter { ids.contains($0.id) }
        return CloudKitServer.response(status: 200, WireObject(["ids": ids, "rules": armed.map(FaultAdmin.object)]))
    }

    private func list() -> Response {
        CloudKitServer.response(status: 200, WireObject(["rules": engine.faults.list().map(FaultAdmin.object)]))
    }

    private func history() -> Response {
        let entries = engine.faults.history().map { i -> WireFormat.Object in
            var o: WireFormat.Object = ["time": i.time, "rule": i.rule, "fault": i.fault?.rawValue ?? "latency", "operation": i.operation]
            if let v = i.caller { o["caller"] = v }
            if let v = i.zone { o["zone"] = v }
            if let v = i.recordName { o["recordName"] = v }
            return o
        }
        return CloudKitServer.response(status: 200, WireObject(["history": entries]))
    }

    /// A rule as JSON: its id, who armed it, and the fields it sets.
    static func object(_ armed: (id: Int, rule: FaultRule, owner: FaultInjector.Owner)) -> WireFormat.Object {
        var o: WireFormat.Object = ["id": armed.id]
        switch armed.owner {
        case .config: o["owner"] = "config"
        case .runtime: o["owner"] = "runtime"
        case .plugin(let name):
            o["owner"] = "plugin"
            o["plugin"] = name
        }
        for (key, value) in armed.rule.fields {
            switch value {
            case .string(let s): o[key] = s
            case .number(let n): o[key] = n == n.rounded() && abs(n) < 9e15 ? Int64(n) as Any : n as Any
            case .boolean(let b): o[key] = b
            case .other: break
            }
        }
        return o
    }

    /// A JSON value as a rule's field.
    static func value(_ v: Any) -> FaultRule.Value {
        switch v {
        case let s as String: return .string(s)
        case let n as NSNumber: return WireFormat.isBool(n) ? .boolean(n.boolValue) : .number(n.doubleValue)
        case is NSNull: return .other(type: "null")
        case is [Any]: return .other(type: "array")
        default: return .other(type: "object")
        }
    }
}

/// The admin routes' door: a Bearer admin token, checked by its hash in the store (on the
/// engine's thread); anything else is 401 before the route reads a byte of the body.
struct AdminAuthentication: RouterMiddleware {
    typealias Context = ServerRequestContext
    let engine: Engine
    let thread: EngineThread

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let header = request.headers[.authorization] ?? ""
        let token = header.hasPrefix("Bearer ") ? String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces) : ""
        guard token.utf8.count == 64, token.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            throw CloudKitError.authenticationFailed("the admin routes take an admin token (shareflow tokens admin) as Authorization: Bearer <token>")
        }
        let hash = Credentials.hash(token)
        let engine = self.engine
        let found = try await thread.run {
            try engine.credentials.find(.adminToken, container: Credentials.adminScope, environment: .development, hash: hash)
        }
        guard found != nil else {
            throw CloudKitError.authenticationFailed("this is not an admin token of this server (make one with shareflow tokens admin)")
        }
        context.notes.caller = "admin"
        return try await next(request, context)
    }
}
