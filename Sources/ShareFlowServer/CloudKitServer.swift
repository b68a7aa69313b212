import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import ShareFlow

/// `shareflow serve`: CloudKit Web Services over HTTP on Hummingbird 2 (SPEC §13). Every
/// request's engine work runs on one thread (`EngineThread`), so the engine and the plugins'
/// Lua states never see two threads.
///
/// ```swift
/// try await CloudKitServer(engine: engine, host: "127.0.0.1", port: 8080, logger: logger).run()
/// ```
public struct CloudKitServer: Sendable {
    public let engine: Engine
    public let host: String
    public let port: Int
    public let logger: Logger
    /// The largest request body read (bigger: QUOTA_EXCEEDED).
    public var maxBodyBytes = 16 << 20
    /// Requests per user token (or API token, without one) per `perSeconds`; nil: no limit.
    public var rateLimit: (requests: Int, perSeconds: Double)?
    /// How long a connection may take to send a request head, a body, or its next request.
    public var deadlines = ConnectionDeadlines()
    /// Connections open at once; past it the server stops accepting until one closes (the
    /// rest wait in the kernel's backlog), so clients never use up its descriptors.
    public var maxConnections = 512
    /// After SIGTERM, how long requests in flight may take before what is left is closed.
    public var shutdownSeconds = 10.0
    /// The most bytes of records one response carries (lookups past it fail per item, a query
    /// page ends early with a continuation marker).
    public var maxResponseBytes = 32 << 20
    /// Called with the port once the server accepts connections.
    public var onListening: @Sendable (Int) -> Void = { _ in }
    /// Whether share URLs point at this server (`http://host:port/share/…`) when the engine's
    /// `publicURL` was left at its default (no `--public-url`).
    public var sharesPointHere = true

    public init(engine: Engine, host: String, port: Int, logger: Logger) {
        self.engine = engine
        self.host = host
        self.port = port
        self.logger = logger
    }

    /// Serves until SIGTERM or SIGINT; then stops accepting, finishes the requests in flight,
    /// checkpoints the store and returns.
    public func run() async throws {
        let thread = EngineThread()
        let api = CloudKitAPI(engine: engine)
        api.maxResponseBytes = maxResponseBytes
        let router = Router(context: ServerRequestContext.self)
        router.add(middleware: AccessLog<ServerRequestContext>(logger: logger))
        router.get("/healthz") { _, _ -> String in "ok" }
        router.head("/healthz") { _, _ -> HTTPResponse.Status in .ok }
        // Where share URLs lead (`<public URL>/share/<shortGUID>`): a page telling the person
        // who followed one to open it in the app. The same page for every GUID, live or not
        // (R16: a URL reveals nothing by itself).
        router.get("/share/:guid") { _, context -> Response in
            let guid = (context.parameters.get("guid") ?? "").filter { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }.prefix(64)
            var headers = HTTPFields()
            headers[.contentType] = "text/html; charset=utf-8"
            let page = """
                <!doctype html><html><head><meta charset="utf-8"><title>Shared with you</title></head>
                <body><h1>Someone shared something with you</h1>
                <p>Open this link in the app that shared it, signed in as the person it was sent to.
                An app resolves it with <code>records/resolve</code> and the short GUID <code>\(guid)</code>.</p></body></html>
                """
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page)))
        }
        let maxBody = maxBodyBytes
        let limiter = rateLimit.map { RateLimiter(requests: $0.requests, perSeconds: $0.perSeconds) }
        let handler: @Sendable (Request, ServerRequestContext) async throws -> Response = { request, context in
            var request = request
            let query = request.uri.queryParameters
            // What the rate limiter remembers a credential by (a key ID in any case is one key).
            let container = decoded(context.parameters.get("container")), environment = decoded(context.parameters.get("environment"))
            let credential: String? = query["ckWebAuthToken"].map { "web \(container)\u{0}\($0)" }
                ?? request.headers[HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!].map { "key \(container)\u{0}\($0.lowercased())" }
                ?? query["ckAPIToken"].map { "api \(container)\u{0}\(environment)\u{0}\($0)" }
            if let limiter {
                let key = limiter.key(credential: credential, client: context.remoteAddress?.ipAddress ?? "unknown")
                if let wait = limiter.take(key) {
                    let seconds = max(1, Int(wait.rounded(.up)))
                    var body = WireFormat.error(code: "THROTTLED",
                                                reason: "requestRateLimited: more than \(limiter.requests) requests in \(limiter.perSeconds) s \(key.hasPrefix("client ") ? "from this address without accepted credentials" : "by this user"); retry after \(seconds) s")
                    body["retryAfter"] = seconds
                    return CloudKitServer.response(APIResponse(status: 429, object: body, caller: nil))
                }
            }
            let path = context.parameters.getCatchAll().joined(separator: "/")
            let body: ByteBuffer
            do {
                body = try await request.collectBody(upTo: maxBody)
            } catch is NIOTooManyBytesError {
                return CloudKitServer.response(APIResponse(status: 413, object:
                    WireFormat.error(code: "QUOTA_EXCEEDED", reason: "the body is larger than \(maxBody) bytes"), caller: nil))
            } catch {
                return CloudKitServer.response(APIResponse(status: 400, object:
                    WireFormat.error(code: "BAD_REQUEST", reason: "the body could not be read whole (it ended early?)"), caller: nil))
            }
            var headers: [String: String] = [:]
            for field in request.headers {
                let name = field.name.canonicalName
                headers[name] = headers[name].map { $0 + ", " + field.value } ?? field.value
            }
            var others: [String: String] = [:]
            for (key, value) in query where key != "ckAPIToken" && key != "ckWebAuthToken" { others[String(key)] = String(value) }
            let uriPath = request.uri.path
            let apiRequest = APIRequest(
                container: container, environment: environment,
                database: decoded(context.parameters.get("database")), subpath: path, method: request.method.rawValue,
                path: uriPath, target: request.uri.query.map { uriPath + "?" + $0 } ?? uriPath, headers: headers, query: others,
                apiToken: query["ckAPIToken"].map(String.init), webAuthToken: query["ckWebAuthToken"].map(String.init),
                body: Data(buffer: body))
            let answer = try await thread.run { api.handle(apiRequest) }
            if let limiter, let credential, let identity = answer.identity { limiter.remember(credential: credential, identity: identity) }
            return CloudKitServer.response(answer)
        }
        router.post("/database/1/:container/:environment/:database/**", use: handler)
        router.get("/database/1/:container/:environment/:database/**", use: handler)
        let onListening = self.onListening
        let pointHere = sharesPointHere && engine.options.publicURL == Engine.defaultPublicURL
        let (engine, host) = (self.engine, self.host)
        let deadlines = self.deadlines
        let app = Application(
            router: router,
            server: .http1(configuration: .init(additionalChannelHandlers: [ConnectionDeadlineHandler(deadlines)])),
            configuration: .init(address: .hostname(host, port: port), serverName: "ShareFlow",
                                 availableConnectionsDelegate: MaximumAvailableConnections(maxConnections, logger: logger)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                // Queued before anyone can know the port: every request runs after it.
                if pointHere {
                    let shown = host.contains(":") ? "[\(host)]" : host
                    thread.enqueue { engine.options.publicURL = "http://\(shown):\(port)" }
                }
                onListening(port)
            },
            logger: logger)
        // SIGTERM: stop accepting and let requests in flight finish, for `shutdownSeconds` at
        // most; then what is left is cancelled (its connections closed), and the store is
        // checkpointed either way.
        var group = ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        group.maximumGracefulShutdownDuration = Duration.milliseconds(Int64(shutdownSeconds * 1000))
        // No trap once cancelled: work waiting for the engine's thread is dropped at once
        // (EngineThread.run), and the job running is bounded (querySeconds).
        group.maximumCancellationDuration = nil
        try await ServiceGroup(configuration: group).run()
        _ = try? await thread.run { [engine] in engine.store.checkpoint() }
    }

    /// The size of the parts a big answer is written in.
    static let partBytes = 64 << 10

    static func response(_ a: APIResponse) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        // Every 429 says when to come back in the header too: pyicloud reads it only there.
        if a.status == 429 {
            let seconds = (a.object["retryAfter"] as? NSNumber)?.doubleValue ?? 1
            headers[.retryAfter] = String(max(1, Int(seconds.rounded(.up))))
        }
        if let caller = a.caller { headers[callerField] = caller }
        let bytes = a.body
        guard bytes.count > partBytes else {
            return Response(status: .init(code: a.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        // A big answer goes out in parts, each written when the client has taken the one before:
        // a slow reader shows progress part by part (ConnectionDeadlineHandler), one that stops
        // reading shows none.
        return Response(status: .init(code: a.status), headers: headers, body: .init(contentLength: bytes.count) { writer in
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + partBytes, bytes.count)
                try await writer.write(ByteBuffer(bytes: bytes[offset..<end]))
                offset = end
            }
            try await writer.finish(nil)
        })
    }
}

/// A request's context: Hummingbird's, and the client's address (the rate limiter's bucket
/// for requests whose credentials are not known yet).
struct ServerRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// The response header a handler names its caller in, for the access log (which removes it).
let callerField = HTTPField.Name("x-shareflow-caller")!

/// A path parameter as the client meant it (`iCloud%2Et` is `iCloud.t`).
private func decoded(_ s: String?) -> String { s.map { $0.removingPercentEncoding ?? $0 } ?? "" }

/// One line per request: method, path (never the query, where the tokens are), status,
/// duration and caller. Also where a request no route answers (an unknown path or method) gets
/// a JSON error like every other, instead of the router's empty body.
struct AccessLog<Context: RequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        var response: Response
        do {
            // An empty path segment is no route (`//database/…` is not `/database/…`): a proxy
            // or a signature may read the path as sent.
            guard !request.uri.path.contains("//") else { throw HTTPError(.notFound) }
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            let (code, status): (String, Int) = switch error.status {
            case .notFound: ("NOT_FOUND", 404)
            case .contentTooLarge: ("QUOTA_EXCEEDED", 413)
            case .methodNotAllowed: ("BAD_REQUEST", 400)
            default: (error.status.code >= 500 ? "INTERNAL_ERROR" : "BAD_REQUEST", error.status.code >= 500 ? 500 : 400)
            }
            let reason = error.status == .notFound ? "no route \(request.method) \(String(request.uri.path.prefix(200)))" : "\(error.status)"
            response = CloudKitServer.response(APIResponse(status: status, object: WireFormat.error(code: code, reason: reason), caller: nil))
        } catch {
            logger.info("\(request.method) \(Naming.printable(request.uri.path)) error \(start.duration(to: .now)) \(error)")
            throw error
        }
        let caller = response.headers[callerField] ?? "-"
        response.headers[callerField] = nil
        let ms = Double(start.duration(to: .now).components.attoseconds) / 1e15 + Double(start.duration(to: .now).components.seconds) * 1000
        // The path shown is cut to 80 characters: a log line per request stays a line.
        logger.info("\(request.method) \(Naming.printable(request.uri.path)) \(response.status.code) \(String(format: "%.1f", ms)) ms \(caller)")
        return response
    }
}
