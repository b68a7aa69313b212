import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle
import ShareFlow

/// Device tokens and the webcourier long poll (SPEC §20 N3, WEB-SERVICES §4), as CloudKit JS
/// 1.2.0 drives them: `tokens/create` once, then a GET of the absolute `webcourierURL` it was
/// given, again 10 ms after every answer. So a poll is held until a notification is due or
/// `pollSeconds` pass (then `{"ck":{}}`, which the library ignores): an idle client makes one
/// request per period, and no answer to a poll — not even an error — comes at once, but on
/// SIGTERM.
///
/// - `POST /device/1/<container>/<environment>/tokens/create` `{apnsEnvironment}` →
///   `{apnsEnvironment, apnsToken, webcourierURL}`, a signed-in user's (421 otherwise);
/// - `POST …/tokens/register` `{apnsEnvironment, apnsToken}`: binds the caller's own token to
///   their current web auth token;
/// - `GET /webcourier/1/<secret>`: one notification in CloudKit's push JSON.
final class NotificationRoutes: Sendable {
    let engine: Engine
    let thread: EngineThread
    let signal: ChangeSignal
    let waiters: NotificationWaiters
    /// How long a poll is held when nothing is due (`notifications.pollSeconds`).
    let pollSeconds: Double
    /// Rung when a commit left changes for subscriptions (`notifications.dispatch = .deferred`).
    let dispatchBell = ChangeSignal()

    init(engine: Engine, thread: EngineThread, signal: ChangeSignal, pollSeconds: Double, maxHeld: Int) {
        self.engine = engine
        self.thread = thread
        self.signal = signal
        self.pollSeconds = pollSeconds
        self.waiters = NotificationWaiters(maxHeld: maxHeld)
    }

    static let routes = [
        "POST /device/1/{container}/{environment}/tokens/create", "POST /device/1/{container}/{environment}/tokens/register",
        "GET /webcourier/1/{secret}",
    ]

    /// The prefix of every poll URL (the access log shows it without its secret).
    static let pollPrefix = "/webcourier/1/"

    func registerDevice(on group: RouterGroup<ServerRequestContext>) {
        group.post("tokens/create") { [self] _, context in try await create(context) }
        group.post("tokens/register") { [self] _, context in try await register(context) }
    }

    func registerPoll(on group: RouterGroup<ServerRequestContext>) {
        group.get(":secret") { [self] _, context in try await poll(context) }
    }

    // MARK: Tokens

    private func device(_ context: ServerRequestContext) throws -> (DatabaseRequest, Account, WireFormat.Object) {
        guard let request = context.database else {
            throw CloudKitError(status: 500, code: "INTERNAL_ERROR", reason: "a device route ran before its request was read")
        }
        // A token is a user's (N3): without one, CloudKit JS shows its sign-in button.
        guard let account = context.caller?.account else { throw CloudKitError.authenticationRequired(publicURL: engine.options.publicURL) }
        return (request, account, try CloudKitAPI.parse(request))
    }

    private static func apnsEnvironment(_ body: WireFormat.Object) throws -> String {
        // Apple's words, in any case (CloudKit JS's constants are lower case).
        let value = (try WireFormat.string(body["apnsEnvironment"], field: "apnsEnvironment") ?? "production").lowercased()
        guard value == "development" || value == "production" else {
            throw CloudKitError.badRequest("apnsEnvironment '\(Naming.printable(value))' is not development or production")
        }
        return value
    }

    /// The hash of the request's web auth token when the store issued it (a plugin's
    /// authenticator's tokens are not the store's: such a device token lives on its own).
    private func credential(_ request: DatabaseRequest) throws -> String? {
        guard let token = request.webAuthToken else { return nil }
        let hash = Credentials.hash(token)
        return try engine.credentials.find(.webAuthToken, container: request.container, environment: request.environment, hash: hash) != nil
            ? hash : nil
    }

    private func create(_ context: ServerRequestContext) async throws -> Response {
        let (request, account, body) = try device(context)
        let environment = try Self.apnsEnvironment(body)
        let client = request.query["clientId"].flatMap(CloudKitAPI.clientID)
        let grant = try await thread.run { [engine, self] in
            do {
                return try engine.createDeviceToken(
                    account: account.id,
                    container: ContainerID(request.container, request.environment),
                    apnsEnvironment: environment,
                    credentialHash: try credential(request),
                    clientID: client
                )
            } catch { throw CloudKitError.from(error) }
        }
        return CloudKitServer.response(
            status: 200,
            WireObject([
                "apnsEnvironment": grant.apnsEnvironment, "apnsToken": grant.apnsToken,
                "webcourierURL": engine.options.publicURL + Self.pollPrefix + grant.pollSecret,
            ])
        )
    }

    private func register(_ context: ServerRequestContext) async throws -> Response {
        let (request, account, body) = try device(context)
        let environment = try Self.apnsEnvironment(body)
        guard let token = try WireFormat.string(body["apnsToken"], field: "apnsToken"), !token.isEmpty, token.utf8.count <= 256 else {
            throw CloudKitError.badRequest("apnsToken is required")
        }
        let client = request.query["clientId"].flatMap(CloudKitAPI.clientID)
        try await thread.run { [engine, self] in
            do {
                try engine.registerDeviceToken(
                    apnsToken: token,
                    account: account.id,
                    container: ContainerID(request.container, request.environment),
                    credentialHash: try credential(request),
                    apnsEnvironment: environment,
                    clientID: client
                )
            } catch { throw CloudKitError.from(error) }
        }
        return CloudKitServer.response(status: 200, WireObject(["apnsEnvironment": environment, "apnsToken": token]))
    }

    // MARK: The poll

    /// `{"ck":{}}`: nothing (CloudKit JS ignores it and polls again).
    private static func nothing(close: Bool) -> Response {
        var response = CloudKitServer.response(status: 200, WireObject(["ck": [:] as WireFormat.Object]))
        response.headers[.cacheControl] = "no-store"
        if close { response.headers[.connection] = "close" }
        return response
    }

    private func poll(_ context: ServerRequestContext) async throws -> Response {
        let secret = context.parameters.get("secret") ?? ""
        let deadline = ContinuousClock.now + .milliseconds(Int64(pollSeconds * 1000))
        let channel = context.channel
        func remaining() -> Duration { max(.zero, deadline - ContinuousClock.now) }
        while true {
            if signal.isClosing { return Self.nothing(close: true) }
            let state = try await thread.read { [engine] in try engine.nextNotification(pollSecret: secret) }
            switch state {
            case .unknown:
                // Never fast: a client polling a dead URL comes back once a period, not in a loop;
                // but only a few such polls are held that long (by address, and in all), so
                // URLs that lead nowhere cannot hold the node's connections.
                let address = context.remoteAddress?.ipAddress ?? "-"
                if waiters.holdUnknown(address) {
                    await hold(remaining())
                    waiters.releaseUnknown(address)
                } else {
                    await hold(min(remaining(), .seconds(1)))
                }
                if signal.isClosing { return Self.nothing(close: true) }
                var gone = CloudKitServer.response(
                    status: 404,
                    WireObject(CloudKitError(status: 404, code: "NOT_FOUND", reason: "no such notification URL").body)
                )
                gone.headers[.connection] = "close"
                return gone
            case let .skipped(token, from, to, dropped):
                _ = try await thread.run { [engine] in try engine.moveDeliveredNotifications(token: token, from: from, to: to, dropped: dropped) }
            case let .due(token, from, to, dropped, notification):
                let moved = try await thread.run { [engine] in
                    try engine.moveDeliveredNotifications(token: token, from: from, to: to, dropped: dropped)
                }
                guard moved else { continue }  // another poll of this token took it
                NodeMetrics.notificationsDelivered.increment()
                return answer(notification, token: token, from: from, to: to)
            case let .waiting(inbox, seq, account, token, stale):
                if stale { _ = try? await thread.run { [engine] in try engine.touchDeviceToken(token) } }
                guard let inbox else {
                    await hold(remaining())
                    return Self.nothing(close: false)
                }
                let wakes = waiters.wakeCount(inbox)
                // Read again after noting the wakes: a dispatch between the read above and
                // now has moved the inbox, and the wait below would not be woken by it.
                let end = await waiters.wait(inbox: inbox, account: account, after: seq, wakes: wakes, upTo: remaining()) { gone in
                    channel.closeFuture.whenComplete { _ in gone() }
                }
                switch end {
                case .woken:
                    continue
                case .timedOut:
                    return Self.nothing(close: false)
                case .closing:
                    return Self.nothing(close: true)
                case .full:
                    // Its connection goes back; the client comes back in a moment, not at once.
                    await hold(min(remaining(), .seconds(2)))
                    return Self.nothing(close: true)
                }
            }
        }
    }

    /// Waits `duration`, or less when the server shuts down.
    private func hold(_ duration: Duration) async {
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end, !signal.isClosing {
            let g = signal.generation
            await signal.wait(after: g, upTo: min(end - ContinuousClock.now, .milliseconds(500)))
        }
    }

    /// One notification; delivered only once the answer is written whole (a client gone
    /// before that gets it again on its next poll).
    private func answer(_ n: SubscriptionNotification, token: Int64, from: Int64, to: Int64) -> Response {
        let bytes = WireObject(SubscriptionWire.notification(n)).json
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        // Given back unless written whole: the write failed, or the answer was never written
        // (its client gone before it: the body, and this with it, is dropped unrun).
        let delivery = Delivery { [engine, thread] in
            Task { _ = try? await thread.run { try engine.moveDeliveredNotifications(token: token, from: to, to: from, dropped: 0) } }
        }
        return Response(
            status: .ok,
            headers: headers,
            body: .init(contentLength: bytes.count) { writer in
                try await writer.write(ByteBuffer(bytes: bytes))
                try await writer.finish(nil)
                delivery.written()
            }
        )
    }

    /// A notification handed to an answer: its cursor's move is undone when this goes unless
    /// the answer was written whole.
    private final class Delivery: Sendable {
        private let done = NIOLockedValueBox(false)
        private let giveBack: @Sendable () -> Void
        init(giveBack: @escaping @Sendable () -> Void) { self.giveBack = giveBack }
        func written() { done.withLockedValue { $0 = true } }
        deinit { if !done.withLockedValue({ $0 }) { giveBack() } }
    }

    // MARK: Dispatch and wakes (serve)

    /// `serve`'s side of notifications: dispatches this node's committed changes off the
    /// writes' path (and another node's left past `takeoverSeconds`), and wakes held polls
    /// when another node's dispatch moved their inboxes (one read per commit signal).
    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in await dispatchLoop() }
            group.addTask { [self] in await wakeLoop() }
        }
    }

    private func dispatchLoop() async {
        while !Task.isCancelled {
            let g = dispatchBell.generation
            var more = true
            while more, !Task.isCancelled {
                do {
                    let report = try await thread.run { [engine] in try engine.dispatchNotifications(takeover: true) }
                    more = report.more
                    if report.notified > 0 { NodeMetrics.notificationsQueued.increment(by: report.notified) }
                } catch {
                    more = false
                }
            }
            if signal.isClosing { return }
            await dispatchBell.wait(after: g, upTo: .seconds(1))
        }
    }

    private func wakeLoop() async {
        while !Task.isCancelled {
            let g = signal.generation
            if signal.isClosing {
                waiters.close()
                return
            }
            let held = waiters.heldInboxes
            if !held.isEmpty, let positions = try? await thread.read({ [engine] in try engine.inboxPositions(held) }) {
                waiters.wake(positions: positions)
            }
            NodeMetrics.notificationPollsHeld.record(waiters.held)
            await signal.wait(after: g, upTo: .milliseconds(500))
        }
    }
}
