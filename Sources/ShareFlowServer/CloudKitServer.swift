import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
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
    /// rest wait in the kernel's backlog), so clients never use up its descriptors. Lowered at
    /// start to what the descriptor limit leaves (`DescriptorBudget`).
    public var maxConnections = 512
    /// After SIGTERM, how long requests in flight may take before what is left is closed.
    public var shutdownSeconds = 10.0
    /// The most bytes of records one response carries (lookups past it fail per item, a query
    /// page ends early with a continuation marker).
    public var maxResponseBytes = 32 << 20
    /// How long one `changes/stream` lasts before it ends (the client resumes with its
    /// `Last-Event-ID`).
    public var streamSeconds: Double = 300
    /// Called with the port once the server accepts connections.
    public var onListening: @Sendable (Int) -> Void = { _ in }
    /// Reading threads beside the engine's (SPEC §16 M5); nil: as many as the store suits
    /// (`readers(for:)`), 0: every request on the engine's thread (what `shareflow bench`
    /// measures them against).
    public var readingThreads: Int?
    /// The origins whose pages may read this server's CloudKit answers (CORS; `*` for any):
    /// `serve --cors-origin`. Empty: no CORS headers at all.
    public var corsOrigins: [String] = []
    /// Serve https with this certificate and key (`serve --tls-cert/--tls-key`, SPEC §19 A1):
    /// share, upload and download URLs then say https. Nil: plain http.
    public var tls: ServerTLS?
    /// SPEC §20 N3: how long a webcourier poll is held when nothing is due
    /// (`notifications.pollSeconds`).
    public var pollSeconds: Double = 25
    /// The most webcourier polls held at once (`notifications.maxHeldPolls`); nil: half the
    /// connections the node takes, so polls never starve other requests of connections.
    public var maxHeldPolls: Int?
    /// Whether share URLs point at this server (`http://host:port/share/…`) when the engine's
    /// `publicURL` was left at its default (no `--public-url`).
    public var sharesPointHere = true
    /// The web console (`serve --console`, SPEC §21) and the sign-in page's one-time codes;
    /// nil: neither is served (`/signin` then only tells how an operator makes a token).
    public var console: WebConsoleOptions?

    public init(engine: Engine, host: String, port: Int, logger: Logger) {
        CloudKitServer.bootstrapMetrics()
        self.engine = engine
        self.host = host
        self.port = port
        self.logger = logger
    }

    /// How many reading threads a node starts beside the engine's (SPEC §16 M5): on SQLite
    /// one per core, at least 2 and at most 4 (each reads in place, on the CPU); on a driver's
    /// store its pool, less the engine's own connection (each waits for the network), at most 16.
    static func readers(for store: Store) -> Int {
        if let driver = store.driver { return min(16, max(0, driver.connectionLimit - 1)) }
        return store.path == ":memory:" ? 0 : min(4, max(2, ProcessInfo.processInfo.activeProcessorCount))
    }

    /// The web console's routes (`serve --console --routes`), beside the API's.
    public static var consoleRoutes: [String] { WebConsole.routes }

    /// An origin as CORS compares it (`scheme://host[:port]`), or nil when `text` is none.
    public static func normalizedOrigin(_ text: String) -> String? { CrossOriginMiddleware.normalized(text) }

    /// Makes swift-metrics count into this process's `GET /metrics` (Prometheus): call it before
    /// anything counts (a count made earlier is lost); once or many times.
    public static func bootstrapMetrics() {
        _ = NodeMetrics.registry
    }

    /// Serves until SIGTERM or SIGINT; then stops accepting, finishes the requests in flight,
    /// checkpoints the store and returns.
    public func run() async throws {
        // This node's own commits wake the change streams at once (on SQLite, another
        // process's are seen at the next poll). Set before any thread can commit.
        let signal = ChangeSignal()
        engine.store.committed = { signal.poke() }
        let thread = EngineThread(engine: engine, readers: readingThreads ?? CloudKitServer.readers(for: engine.store))
        let authenticator = CallerAuthenticator(engine: engine)
        let health = StoreHealth()
        // SPEC §20: subscriptions are evaluated off the writes' path (a write costs the same
        // however many subscriptions watch its zone), by this node's dispatcher.
        let notifications = NotificationRoutes(
            engine: engine,
            thread: thread,
            signal: signal,
            pollSeconds: pollSeconds,
            maxHeld: maxHeldPolls ?? max(1, maxConnections / 2)
        )
        engine.options.notifications.dispatch = .deferred
        engine.notificationsPending = { [bell = notifications.dispatchBell] in bell.poke() }
        let router = router(thread: thread, authenticator: authenticator, health: health, signal: signal, notifications: notifications)
        // On a driver's store (PostgreSQL), every node's commits wake this node's change streams
        // (SPEC §14, §16).
        let notices = engine.store.driver.map { driver in
            Task { await driver.listenForCommits { signal.poke() } }
        }
        defer { notices?.cancel() }
        let onListening = self.onListening
        let pointHere = sharesPointHere && engine.options.publicURL == Engine.defaultPublicURL
        let (engine, host) = (self.engine, self.host)
        var settings = self.deadlines
        settings.uploadMaxBytes = engine.options.assetMaxBytes
        let deadlines = settings
        // SQLite: the file, its WAL and its index, for the engine's connection and each reader's.
        let storeDescriptors = engine.store.driver.map { $0.connectionLimit + 4 } ?? 4 + 3 * thread.readerCount
        let budget = try DescriptorBudget.connections(configured: maxConnections, storeConnections: storeDescriptors)
        if budget.cap < maxConnections {
            logger.notice(
                "at most \(budget.cap) connections at once, not \(maxConnections): the process may open \(budget.limit) descriptors and keeps \(budget.kept) for the store, logs and plugins"
            )
        }
        let maxConnections = budget.cap
        let addresses = ConnectionsByAddress(cap: maxConnections)
        // The deadlines' handler sits after TLS's, on the decrypted HTTP; TLS's own handshake
        // is bounded by the same header deadline (the request head cannot come before it).
        let http = HTTPServerBuilder.http1(
            configuration: .init(additionalChannelHandlers: [ConnectionDeadlineHandler(deadlines, addresses: addresses)])
        )
        let scheme = tls == nil ? "http" : "https"
        let app = Application(
            router: router,
            server: try tls.map { try .tls(http, tlsConfiguration: $0.configuration) } ?? http,
            configuration: .init(
                address: .hostname(host, port: port),
                serverName: "ShareFlow",
                availableConnectionsDelegate: MaximumAvailableConnections(maxConnections, logger: logger)
            ),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                // Set before anyone can know the port: every request runs after it.
                if pointHere {
                    let shown = host.contains(":") ? "[\(host)]" : host
                    engine.options.publicURL = "\(scheme)://\(shown):\(port)"
                }
                onListening(port)
            },
            logger: logger
        )
        // SIGTERM: stop accepting and let requests in flight finish, for `shutdownSeconds` at
        // most; then what is left is cancelled (its connections closed), and the store is
        // checkpointed either way.
        let watch = StoreWatch(engine: engine, thread: thread, authenticator: authenticator, health: health, signal: signal, logger: logger)
        var group = ServiceGroupConfiguration(
            services: [
                .init(service: app), .init(service: watch, successTerminationBehavior: .ignore),
                .init(service: NotificationService(routes: notifications), successTerminationBehavior: .ignore),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        group.maximumGracefulShutdownDuration = Duration.milliseconds(Int64(shutdownSeconds * 1000))
        // No trap once cancelled: work waiting for the engine's thread is dropped at once
        // (EngineThread.run), and the job running is bounded (querySeconds).
        group.maximumCancellationDuration = nil
        var failure: Error?
        do {
            try await ServiceGroup(configuration: group).run()
        } catch {
            failure = error
        }
        // The reading threads close their connections (the SQLite file left whole, PostgreSQL's
        // connections given back), then the store is checkpointed.
        thread.stopReading()
        _ = try? await thread.run { [engine] in engine.store.checkpoint() }
        if let failure { throw failure }
    }

    /// Every route, its work run on `thread`: what `run` serves, and what the in-process
    /// tests drive (`app.test(.router)`).
    func router(
        thread: EngineThread,
        authenticator: CallerAuthenticator? = nil,
        health: StoreHealth = StoreHealth(),
        signal: ChangeSignal = ChangeSignal(),
        notifications given: NotificationRoutes? = nil
    ) -> Router<ServerRequestContext> {
        let router = Router(context: ServerRequestContext.self)
        router.add(middleware: MetricsMiddleware())
        // Outside the access log, which makes every error an answer: CORS names the origin on
        // errors too, and a preflight is answered before anything else is read.
        if !corsOrigins.isEmpty { router.add(middleware: CrossOriginMiddleware(origins: corsOrigins)) }
        router.add(middleware: AccessLog(logger: logger))
        router.get("/metrics") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: NodeMetrics.scrape(thread))))
        }
        // Alive: the process answers. Ready: its store answered the last probe (StoreWatch),
        // so a load balancer sends it requests (SPEC §16).
        router.get("/healthz") { _, _ -> String in "ok" }
        router.head("/healthz") { _, _ -> HTTPResponse.Status in .ok }
        router.get("/readyz") { _, _ -> Response in
            // Unauthenticated: why the store fails (its path, its PostgreSQL user, host and
            // database) is the operator's, in the log (StoreWatch), never here.
            if health.problem != nil {
                return CloudKitServer.response(
                    status: 503,
                    WireObject([
                        "ready": false, "serverErrorCode": "TRY_AGAIN_LATER",
                        "reason": "the store does not answer; see the server's log", "retryAfter": 2,
                    ])
                )
            }
            // Writes gave up waiting for another process's write lock (SPEC §16 M5).
            if thread.writesStalled {
                return CloudKitServer.response(
                    status: 503,
                    WireObject([
                        "ready": false, "serverErrorCode": "TRY_AGAIN_LATER",
                        "reason": "writes wait for the store's write lock; see the server's log", "retryAfter": 2,
                    ])
                )
            }
            return CloudKitServer.response(status: 200, WireObject(["ready": true]))
        }
        router.get("/share/:guid", use: SharePage.answer)
        SignInPage(engine: engine, thread: thread, corsOrigins: corsOrigins, console: console, secure: tls != nil).register(on: router)
        let limiter = rateLimit.map {
            RateLimiter(requests: $0.requests, perSeconds: $0.perSeconds, shared: engine.store.driver?.makeRateBuckets())
        }
        // The admin routes take from their address's bucket, every request, before the admin
        // token is checked: guessing admin tokens is throttled as guessing any credential is.
        FaultAdmin(engine: engine, thread: thread, limiter: limiter).register(on: router)
        // SPEC §21: the console, behind an admin token, on its own paths and cookies (outside
        // the CloudKit routes' CORS).
        if let console {
            WebConsole(engine: engine, thread: thread, signal: signal, options: console, secure: tls != nil).register(on: router)
        }
        // The asset URLs (SPEC §19 A3): each its own credential, throttled by address.
        let assets = router.group("/assets/1")
        if let limiter { assets.add(middleware: RateLimitMiddleware(limiter: limiter)) }
        AssetTransfer(engine: engine, thread: thread).register(on: assets)
        // SPEC §20 N3: device tokens are a signed-in user's, authenticated as database routes
        // are; a poll URL is its own credential, and is not rate limited: a 429 would bring
        // CloudKit JS back in 10 ms, a held poll brings it back once a period.
        let notifications =
            given
            ?? NotificationRoutes(
                engine: engine,
                thread: thread,
                signal: signal,
                pollSeconds: pollSeconds,
                maxHeld: maxHeldPolls ?? maxConnections / 2
            )
        // A dispatch on this node wakes the polls waiting on the inboxes it wrote, at once.
        let waiters = notifications.waiters
        engine.notified = { waiters.wake($0) }
        let device = router.group("/device/1/:container/:environment")
        if let limiter { device.add(middleware: RateLimitMiddleware(limiter: limiter)) }
        device.add(middleware: DatabaseRequestMiddleware(maxBodyBytes: 64 << 10, device: true))
        device.add(middleware: AuthenticationMiddleware(thread: thread, authenticator: authenticator ?? CallerAuthenticator(engine: engine)))
        if let limiter { device.add(middleware: IdentityRateLimitMiddleware(limiter: limiter)) }
        notifications.registerDevice(on: device)
        notifications.registerPoll(on: router.group("/webcourier/1"))
        // A database route: throttled by address first (before its body is read), then read
        // and checked, authenticated, throttled by identity, and answered by its endpoint.
        let database = router.group("/database/1/:container/:environment/:database")
        if let limiter { database.add(middleware: RateLimitMiddleware(limiter: limiter)) }
        database.add(middleware: DatabaseRequestMiddleware(maxBodyBytes: maxBodyBytes))
        database.add(middleware: AuthenticationMiddleware(thread: thread, authenticator: authenticator ?? CallerAuthenticator(engine: engine)))
        if let limiter { database.add(middleware: IdentityRateLimitMiddleware(limiter: limiter)) }
        CloudKitAPI(engine: engine, maxResponseBytes: maxResponseBytes, streamSeconds: streamSeconds, signal: signal)
            .register(on: database, thread: thread)
        return router
    }

    /// The size of the parts a big answer is written in.
    static let partBytes = 64 << 10

    /// A JSON answer: `object` with `status`. Every 429 says when to come back in the header
    /// too (pyicloud reads it only there).
    static func response(status: Int, _ object: WireObject) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        if status == 429 || (status == 503 && object.object["retryAfter"] != nil) {
            let seconds = (object.object["retryAfter"] as? NSNumber)?.doubleValue ?? 1
            headers[.retryAfter] = String(max(1, Int(seconds.rounded(.up))))
        }
        let bytes = object.json
        guard bytes.count > partBytes else {
            return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        // A big answer goes out in parts, each written when the client has taken the one before:
        // a slow reader shows progress part by part (ConnectionDeadlineHandler), one that stops
        // reading shows none.
        return Response(
            status: .init(code: status),
            headers: headers,
            body: .init(contentLength: bytes.count) { writer in
                var offset = 0
                while offset < bytes.count {
                    let end = min(offset + partBytes, bytes.count)
                    try await writer.write(ByteBuffer(bytes: bytes[offset..<end]))
                    offset = end
                }
                try await writer.finish(nil)
            }
        )
    }
}

/// `serve`'s notification dispatcher and poll waker (`NotificationRoutes.run`) as a service:
/// SIGTERM answers every held poll at once (the signal closes), then it stops.
struct NotificationService: Service {
    let routes: NotificationRoutes

    func run() async throws {
        await withGracefulShutdownHandler {
            await cancelWhenGracefulShutdown {
                await routes.run()
            }
        } onGracefulShutdown: { [waiters = routes.waiters] in
            waiters.close()
        }
    }
}
