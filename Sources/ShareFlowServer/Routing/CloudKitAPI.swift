import Foundation
import HTTPTypes
import Hummingbird
import ShareFlow

/// The endpoints of SPEC §13 over the engine: one table that both registers the routes on
/// Hummingbird's router and lists them (`shareflow serve --routes`, docs/openapi.yaml), each
/// entry naming its handler (a function of an `EndpointCall`, in `Endpoints/`).
///
/// ```swift
/// let api = CloudKitAPI(engine: engine)
/// api.register(on: router.group("/database/1/:container/:environment/:database"), thread: thread)
/// ```
public final class CloudKitAPI: Sendable {
    let engine: Engine
    /// The most bytes of records (as stored) one response carries (SPEC §13, wave 3).
    let maxResponseBytes: Int
    /// How long one `changes/stream` lasts.
    let streamSeconds: Double

    /// Wakes the change streams (`ChangeStream`).
    let signal: ChangeSignal

    init(engine: Engine, maxResponseBytes: Int = 32 << 20, streamSeconds: Double = 300, signal: ChangeSignal = ChangeSignal()) {
        self.signal = signal
        self.engine = engine
        self.maxResponseBytes = maxResponseBytes
        self.streamSeconds = streamSeconds
    }

    /// One endpoint: its subpath, the methods it answers, the databases on whose path it is
    /// (nil: any) and its handler.
    struct Endpoint: Sendable {
        let subpath: String
        let methods: [HTTPRequest.Method]
        let databases: [DatabaseScope]?
        let handle: @Sendable (EndpointCall) throws -> WireFormat.Object
        /// Whether the handler only reads: it runs on a reading thread beside the engine's
        /// (SPEC §16 M5), never waiting behind a write, a policy or an observer it does not
        /// call itself.
        let reads: Bool

        init(
            _ subpath: String,
            _ methods: [HTTPRequest.Method],
            on databases: [DatabaseScope]? = nil,
            reads: Bool = false,
            _ handle: @escaping @Sendable (EndpointCall) throws -> WireFormat.Object
        ) {
            self.subpath = subpath
            self.methods = methods
            self.databases = databases
            self.reads = reads
            self.handle = handle
        }
    }

    static let endpoints: [Endpoint] = [
        Endpoint("records/modify", [.post], withSyncToken(RecordsModify.answer, writes: true)),
        Endpoint("records/lookup", [.post], reads: true, withSyncToken(RecordsLookup.answer, writes: false)),
        Endpoint("records/query", [.post], reads: true, withSyncToken(RecordsQuery.answer, writes: false)),
        Endpoint("records/resolve", [.post], on: [.public], reads: true) { try ShareLinks.answer($0, accept: false) },
        Endpoint("records/accept", [.post], on: [.public]) { try ShareLinks.answer($0, accept: true) },
        Endpoint("records/requestAccess", [.post], on: [.public]) { try ShareLinks.requestAccess($0) },
        Endpoint("zones/modify", [.post], ZoneEndpoints.modify),
        // SPEC §19 A3: the bytes go to the URLs these give (AssetTransfer).
        Endpoint("assets/upload", [.post], AssetEndpoints.upload),
        Endpoint("assets/rereference", [.post], AssetEndpoints.rereference),
        // pyicloud sends zones/list as POST {}.
        Endpoint("zones/list", [.get, .post], reads: true, ZoneEndpoints.list),
        Endpoint("zones/lookup", [.post], reads: true, ZoneEndpoints.lookup),
        // Apple documents users/* on the public path; MistKit sends users/current on private.
        // POST too: a client whose only raw call is POST (pyicloud's raw_post) sends {}.
        Endpoint("users/caller", [.get, .post], reads: true, UserEndpoints.caller),
        Endpoint("users/current", [.get, .post], reads: true, UserEndpoints.current),
        Endpoint("users/discover", [.get, .post], reads: true, UserEndpoints.discover),
        Endpoint("users/lookup/email", [.post], reads: true) { try UserEndpoints.lookup($0, byEmail: true) },
        Endpoint("users/lookup/id", [.post], reads: true) { try UserEndpoints.lookup($0, byEmail: false) },
        // CloudKit JS 1.2.0 sends lookup/contacts as a GET without a body.
        Endpoint("users/lookup/contacts", [.get, .post], reads: true, UserEndpoints.contacts),
        // SPEC §14: the change feeds (the public database's are badDatabase, said by the handler).
        Endpoint("changes/database", [.post], reads: true, ChangeEndpoints.database),
        Endpoint("changes/zone", [.post], reads: true, ChangeEndpoints.zone),
        Endpoint("records/changes", [.post], reads: true, ChangeEndpoints.records),
        Endpoint("zones/changes", [.post], reads: true, ChangeEndpoints.zones),
        // SPEC §20 N1: CloudKit JS 1.2.0 sends subscriptions/list as a GET without a body.
        Endpoint("subscriptions/modify", [.post], SubscriptionEndpoints.modify),
        Endpoint("subscriptions/list", [.get, .post], reads: true, SubscriptionEndpoints.list),
        Endpoint("subscriptions/lookup", [.post], reads: true, SubscriptionEndpoints.lookup),
    ]

    /// `handle`, adding the top-level `syncToken` of the zone the request names (after the
    /// request) when the query asks `getCurrentSyncToken` with any spelling of true.
    ///
    /// The answer and the token are one snapshot of the store (`Engine.inOneTransaction`: the
    /// write itself for `writes`, else one read): read apart, another process's commit between
    /// them was in the token and not in the answer, and a client that starts its copy from the
    /// answer and follows the zone from the token never got that commit.
    static func withSyncToken(
        _ handle: @escaping @Sendable (EndpointCall) throws -> WireFormat.Object,
        writes: Bool
    )
        -> @Sendable (EndpointCall) throws -> WireFormat.Object
    {
        { call in
            guard let asked = call.request.query["getCurrentSyncToken"], ["true", "1", "yes"].contains(asked.lowercased()),
                let caller = call.caller
            else { return try handle(call) }
            return try call.engine.inOneTransaction(writing: writes) {
                var answer = try handle(call)
                let db = try call.database(as: caller)
                if let zoneID = try WireFormat.zoneID(call.body["zoneID"], field: "zoneID", caller: caller.userRecordID)
                    ?? Optional(RecordZoneID.default),
                    let token = ChangeEndpoints.currentToken(db, zoneID)
                {
                    answer["syncToken"] = token
                }
                return answer
            }
        }
    }

    /// A client's `clientId` when it is a plain identifier (letters, digits, `-`, `_`; 1–64).
    static func clientID(_ text: String) -> String? {
        guard (1...64).contains(text.utf8.count),
            text.utf8.allSatisfy({
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x5F
            })
        else { return nil }
        return text
    }

    /// Every route the server answers, as `METHOD path-template`, one per line.
    public static var routes: [String] {
        var lines = ["GET /healthz", "GET /readyz", "GET /metrics", "GET /share/{shortGUID}", "GET /signin"]
        for e in endpoints {
            for database in e.databases?.map(\.rawValue) ?? ["{database}"] {
                for method in e.methods { lines.append("\(method) /database/1/{container}/{environment}/\(database)/\(e.subpath)") }
            }
        }
        lines.append("GET /database/1/{container}/{environment}/{database}/\(ChangeStream.subpath)")
        lines += AssetTransfer.routes
        lines += NotificationRoutes.routes
        lines += FaultAdmin.routes
        return lines
    }

    /// Registers every endpoint on `group` (the database path, its middleware added), its
    /// work run on `thread`. A known endpoint asked with the other of GET and POST is
    /// BAD_REQUEST naming its methods; any other method is no route (NOT_FOUND). A GET or POST
    /// of a subpath no endpoint has goes through the group's middleware like any other — rate
    /// limited, its path and credentials checked — before it is NOT_FOUND: which endpoints
    /// exist is no answer to a stranger, and no request skips the rate limit.
    func register(on group: RouterGroup<ServerRequestContext>, thread: EngineThread) {
        for method in [HTTPRequest.Method.get, .post] {
            group.on("**", method: method) { _, context -> Response in
                let subpath = context.database?.subpath ?? ""
                throw CloudKitError(status: 404, code: "NOT_FOUND", reason: "no endpoint \(Naming.printable(String(subpath.prefix(200))))")
            }
        }
        // SPEC §14's poke channel: a stream of server-sent events, not one answer.
        let stream = ChangeStream(api: self, thread: thread, signal: signal)
        group.on(RouterPath(ChangeStream.subpath), method: .get) { request, context in try await stream.respond(request, context: context) }
        group.on(RouterPath(ChangeStream.subpath), method: .post) { _, _ -> Response in
            throw CloudKitError.badRequest("\(ChangeStream.subpath) is GET, not POST")
        }
        for endpoint in Self.endpoints {
            let path = RouterPath(endpoint.subpath)
            for method in endpoint.methods {
                group.on(path, method: method) { [self] _, context in try await self.answer(endpoint, context: context, thread: thread) }
            }
            for method in [HTTPRequest.Method.get, .post] where !endpoint.methods.contains(method) {
                let methods = endpoint.methods.map(\.rawValue).joined(separator: " or ")
                group.on(path, method: method) { _, _ -> Response in
                    throw CloudKitError.badRequest("\(endpoint.subpath) is \(methods), not \(method.rawValue)")
                }
            }
        }
    }

    /// Runs `endpoint`'s handler for the request on the engine's thread; its object is
    /// encoded here, on the connection's.
    private func answer(_ endpoint: Endpoint, context: ServerRequestContext, thread: EngineThread) async throws -> Response {
        guard let request = context.database else {
            throw CloudKitError(status: 500, code: "INTERNAL_ERROR", reason: "\(endpoint.subpath) ran before its request was read")
        }
        if let databases = endpoint.databases, !databases.contains(request.scope) {
            throw CloudKitError.badRequest("\(endpoint.subpath) is on the \(databases.map(\.rawValue).joined(separator: " or ")) database's path")
        }
        let caller = context.caller
        // The body is parsed here, on the connection's side: the engine's one thread spends
        // its time on the engine.
        let body = WireObject(try Self.parse(request))
        // SPEC §15: the request's fault, decided here; the endpoint runs in its scope.
        let admitted = try await RequestFaults.admit(endpoint.subpath, request, body: body.object, context: context, engine: engine, thread: thread)
        let scope = admitted?.scope
        // SPEC §17: ShareFlow's own keys only for a client that asked for them.
        let extended = request.query["shareflowExtensions"] == "1"
        // SPEC §20 N2: the writer's client (CloudKit JS 2.x's `clientId`) is not told of its own
        // change; only a plain identifier is taken.
        let client = request.query["clientId"].flatMap(Self.clientID)
        let work: @Sendable () throws -> WireObject = { [self] in
            do {
                let call = EndpointCall(api: self, request: request, current: try current(caller), body: body.object)
                // SPEC §19 A3: assets in the answer come with download URLs for this caller.
                // A visitor reading the public database with the API token alone (R30) reads as
                // the public reader, and so do their URLs.
                let reader = call.caller?.id ?? (request.scope == .public ? Account.publicReader.id : nil)
                let links = reader.map { AssetLinks.reader(Engine.AssetReader(accountID: $0, request), engine: engine) }
                return try WireFormat.$extensions.withValue(extended) {
                    try WireFormat.$assetLinks.withValue(links) {
                        try WriteOrigin.$clientID.withValue(client) {
                            guard let scope else { return WireObject(try endpoint.handle(call)) }
                            return WireObject(try FaultScope.run(scope) { try endpoint.handle(call) })
                        }
                    }
                }
            } catch {
                throw CloudKitError.from(error)
            }
        }
        let answer = endpoint.reads ? try await thread.read(work) : try await thread.run(work)
        try await RequestFaults.finish(admitted, context: context)
        return CloudKitServer.response(status: 200, answer)
    }

    /// The caller's account as the directory has it now: read again when the directory changed
    /// since authentication (an address removed, the account deleted); with the directory's
    /// generation it is current at (noted before a read again, so a change during the read
    /// makes the engine read it once more).
    func current(_ caller: Caller?) throws -> (Account?, Int) {
        let generation = engine.accountsGeneration
        guard let caller, let account = caller.account else { return (nil, generation) }
        guard caller.generation != generation else { return (account, generation) }
        guard let now = try engine.accounts.account(id: account.id) else {
            throw CloudKitError.authenticationFailed("the account of this request no longer exists")
        }
        return (now, generation)
    }

    /// The body as a JSON object (a GET's, or an empty one, is `{}`).
    static func parse(_ r: DatabaseRequest) throws -> WireFormat.Object {
        if r.isGET || r.body.isEmpty { return [:] }
        guard let o = try? JSONSerialization.jsonObject(with: r.body) else {
            throw CloudKitError.badRequest("the body is not a JSON object: not valid JSON, or nested deeper than the parser allows")
        }
        guard let object = o as? WireFormat.Object else { throw CloudKitError.badRequest("the body is not a JSON object") }
        return object
    }
}
