import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import ShareFlow

/// `GET …/{private|shared}/changes/stream` (SPEC §14): the poke channel for live apps, as
/// server-sent events. Each event names a zone that changed for the caller:
///
/// ```
/// event: zone
/// id: <the database change token after this zone>
/// data: {"zoneID":{"zoneName":"Trips","ownerRecordName":"_…"}}
/// ```
///
/// (`"deleted":true` beside `zoneID` for a zone gone from the caller's database). The stream
/// follows the caller's database feed, one zone at a time, so each event's `id` is a token a
/// client can resume from: reconnecting with `Last-Event-ID` announces every zone changed
/// since it; without one the stream starts now, its first frame carrying the current token as
/// its `id`. The feeds stay the truth: a client fetches the zone's changes when poked.
///
/// Bounds, so a stream holds no more than a request does: the feed is looked at every half
/// second on the engine's thread; a comment goes out after 2 s of silence — a write is how a
/// stream learns its client has gone (and frees its place), and the connection's idle
/// deadline never sees a quiet stream as stalled; a stream ends after `lifetime` (the client
/// reconnects with its `Last-Event-ID`); an account has at most `perAccount` streams open: a
/// new one ends the account's oldest. A browser that reconnects does so before the server can
/// know its old connection is gone (a write tells, up to a heartbeat later), and `EventSource`
/// gives up for good on any answer but 200: a 429 there lost the client's live updates.
struct ChangeStream: Sendable {
    static let subpath = "changes/stream"
    let api: CloudKitAPI
    let thread: EngineThread
    var pollInterval: Duration = .milliseconds(500)
    /// The least time between two feed reads of one stream, however often it is woken.
    var minimumGap: Duration = .milliseconds(100)
    var heartbeat: Duration = .seconds(2)
    let lifetime: Duration
    var perAccount = 4
    /// Streams open, by account, oldest first.
    private let open = NIOLockedValueBox([Int64: [Ticket]]())

    /// Wakes the streams when the store changed (another node's write, on PostgreSQL).
    let signal: ChangeSignal

    init(api: CloudKitAPI, thread: EngineThread, signal: ChangeSignal) {
        self.api = api
        self.thread = thread
        self.signal = signal
        lifetime = .milliseconds(Int64(max(0, api.streamSeconds) * 1_000))
    }

    func respond(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let database = context.database else {
            throw CloudKitError(status: 500, code: "INTERNAL_ERROR", reason: "changes/stream ran before its request was read")
        }
        guard database.scope != .public else {
            throw CloudKitError.badRequest("badDatabase: the public database has no change feeds; use the private or shared database")
        }
        let resume = request.headers[HTTPField.Name("Last-Event-ID")!].map { $0.trimmingCharacters(in: .whitespaces) }
        guard resume.map({ $0.utf8.count <= 4_096 }) ?? true else {
            throw CloudKitError.badRequest("Last-Event-ID is longer than a change token can be")
        }
        let caller = context.caller
        let api = self.api
        // SPEC §15: the stream is one request, its fault decided here, on its connection, as
        // any endpoint's (nothing it does commits, so a drop after commit is a drop after its
        // start is read); its start and its polls run in a scope that asks no rule again (a
        // poll deciding natively slept on the engine's one thread and spent counts by time).
        let fault = try await RequestFaults.admit(
            ChangeStream.subpath,
            database,
            body: [:],
            context: context,
            engine: api.engine,
            thread: thread
        )
        let scope =
            fault.map { FaultScope(operation: $0.scope.operation, subpath: $0.scope.subpath, asksRules: false) }
            ?? FaultScope(operation: ChangeStream.subpath, subpath: ChangeStream.subpath, asksRules: false)
        // The start, read before the response begins: a bad Last-Event-ID, or no user, is an
        // ordinary error answer, not a stream that ends at once.
        let (account, start) = try await thread.run {
            try FaultScope.run(scope) {
                do {
                    let call = EndpointCall(api: api, request: database, current: try api.current(caller), body: [:])
                    let me = try call.requireUser()
                    let db = try call.database(as: me)
                    if let resume, !resume.isEmpty {
                        _ = try db.databaseChanges(since: resume, resultsLimit: 1)
                        return (me.id, resume)
                    }
                    return (me.id, try db.currentDatabaseChangeToken())
                } catch {
                    throw CloudKitError.from(error)
                }
            }
        }
        // A drop after commit: the stream's start was read, the client reads no answer.
        try await RequestFaults.finish(fault, context: context)
        // The place is given back when the body lets go of it: after the stream, or if the
        // body is never written at all (the response dropped before its head went out).
        let ticket = Ticket()
        let place = Place { [open] in
            open.withLockedValue { streams in
                streams[account]?.removeAll { $0 === ticket }
                if streams[account]?.isEmpty == true { streams[account] = nil }
            }
        }
        let perAccount = self.perAccount
        open.withLockedValue { streams in
            var tickets = streams[account, default: []]
            while tickets.count >= perAccount { tickets.removeFirst().end() }
            tickets.append(ticket)
            streams[account] = tickets
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        let stream = self
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                defer { withExtendedLifetime(place) {} }
                try await stream.follow(
                    from: start,
                    resuming: !(resume ?? "").isEmpty,
                    database: database,
                    caller: caller,
                    scope: scope,
                    ticket: ticket,
                    writer: &writer
                )
                try await writer.finish(nil)
            }
        )
    }

    /// One of an account's stream places, given back when released.
    private final class Place: Sendable {
        let giveBack: @Sendable () -> Void
        init(_ giveBack: @escaping @Sendable () -> Void) { self.giveBack = giveBack }
        deinit { giveBack() }
    }

    /// A stream as its account's list holds it: `end()` asks the stream to end (a newer stream
    /// of the account took its place).
    final class Ticket: Sendable {
        private let ended = NIOLockedValueBox(false)
        func end() { ended.withLockedValue { $0 = true } }
        var isEnded: Bool { ended.withLockedValue { $0 } }
    }

    /// Writes the events from `start` until the stream's lifetime ends, the client goes, or
    /// the feed cannot be read (an `error` event says why).
    private func follow(
        from start: String,
        resuming: Bool,
        database: DatabaseRequest,
        caller: Caller?,
        scope: FaultScope,
        ticket: Ticket,
        writer: inout any ResponseBodyWriter
    ) async throws {
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: lifetime)
        var token = start
        var quietSince = clock.now
        if !resuming { try await writer.write(Self.frame(comment: "shareflow change stream", id: token)) }
        let api = self.api
        let epoch = signal.credentialsEpoch
        var lastRead = clock.now
        // SPEC §20: the caller's notifications of this database, from now on, as
        // `notification` events without an `id` (the webcourier poll's queue is the reliable
        // path; a stream resumed with Last-Event-ID resumes its feed, not these).
        var inboxSeq: Int64?
        while clock.now < end, !Task.isCancelled {
            // A token revoked on the store: this stream's may be it (it was checked when the
            // stream opened). End; the client resumes, authenticated again.
            if signal.credentialsEpoch != epoch || signal.isClosing || ticket.isEnded { return }
            // The web auth token expired: the stream ends then, not at its lifetime (checked
            // before every read and event; the wait below is at most `pollInterval`).
            if caller?.hasExpired == true {
                let expired = CloudKitError.authenticationRequired(publicURL: api.engine.options.publicURL, reason: "ckWebAuthToken has expired")
                try await writer.write(Self.frame(event: "error", id: nil, data: WireObject(expired.body).json))
                return
            }
            let step: (event: WireObject?, token: String, inboxSeq: Int64, notes: [WireObject])
            let generation = signal.generation
            lastRead = clock.now
            do {
                let (from, seen) = (token, inboxSeq)
                step = try await thread.run {
                    try FaultScope.run(scope) {
                        let call = EndpointCall(api: api, request: database, current: try api.current(caller), body: [:])
                        let me = try call.requireUser()
                        let db = try call.database(as: me)
                        let page = try db.databaseChanges(since: from, resultsLimit: 1)
                        let told = try api.engine.inboxNotifications(
                            account: me.id,
                            container: ContainerID(database.container, database.environment),
                            scope: database.scope,
                            after: seen
                        )
                        return (
                            ChangeEndpoints.zones(page).first.map(WireObject.init), page.changeToken, told.seq,
                            told.notifications.map { WireObject(SubscriptionWire.notification($0)) }
                        )
                    }
                }
            } catch {
                let e = CloudKitError.from(error)
                try await writer.write(Self.frame(event: "error", id: nil, data: WireObject(e.body).json))
                return
            }
            token = step.token
            if caller?.hasExpired == true { continue }  // said at the top of the loop
            let moreNotes = inboxSeq != nil && step.inboxSeq > inboxSeq!
            inboxSeq = step.inboxSeq
            for note in step.notes { try await writer.write(Self.frame(event: "notification", id: nil, data: note.json)) }
            if let event = step.event {
                try await writer.write(Self.frame(event: "zone", id: token, data: event.json))
                quietSince = clock.now
                continue  // the next zone at once: a backlog goes out without waiting
            }
            if moreNotes { continue }
            if clock.now - quietSince >= heartbeat {
                try await writer.write(Self.frame(comment: "keep-alive", id: nil))
                quietSince = clock.now
            }
            await signal.wait(after: generation, upTo: pollInterval)
            // Woken by a commit anywhere on the store (most are not this stream's): at most
            // one feed read per `minimumGap`, so a burst of commits, or of outside NOTIFYs,
            // costs each idle stream a bounded number of reads.
            let since = clock.now - lastRead
            if since < minimumGap { try await Task.sleep(for: minimumGap - since) }
            try Task.checkCancellation()
        }
    }

    /// One server-sent event: fields one per line, a blank line after.
    static func frame(event: String? = nil, comment: String? = nil, id: String?, data: [UInt8]? = nil) -> ByteBuffer {
        var text = ""
        if let comment { text += ": \(comment)\n" }
        if let event { text += "event: \(event)\n" }
        if let id { text += "id: \(id)\n" }
        var buffer = ByteBuffer(string: text)
        if let data {
            // JSON as WireJSON writes it holds no raw newline: one data line.
            buffer.writeString("data: ")
            buffer.writeBytes(data)
            buffer.writeString("\n")
        }
        buffer.writeString("\n")
        return buffer
    }
}
