import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ShareFlow

/// C3: a zone's feed as the acted-as account sees it, live: the page, and its server-sent
/// events (`/console/feed/events`), one `change` per record saved or deleted (tombstones
/// included), each with the change token as its `id` so `EventSource` resumes where it was
/// (`Last-Event-ID`). A feed ends when its session does (expiry, sign-out, its admin token
/// revoked), when the server stops, or after `feedSeconds` (the page reconnects).
extension WebConsole {
    func registerFeed(on router: Router<ServerRequestContext>) {
        page(.feed, on: router) { call in
            let place = try ConsolePlace(call, needsZone: true)
            guard let zoneID = place.zone else { throw ConsoleProblem("zone is required") }
            let engine = self.engine
            // Read once as the account, so a zone it cannot see is refused here, not in the stream.
            _ = try await thread.read { try place.database(engine: engine).currentChangeToken(zoneID) }
            return ConsolePage(
                title: "Feed of \(zoneID.zoneName)",
                acting: place.who,
                body: """
                    <h1>Live feed of <code>\(zoneID.zoneName)</code></h1>
                    <p class="muted">As the \(place.scope.rawValue) database of the account shows it: every save and deletion from now on.
                    <a href="\(place.link(.zone))">The zone's records</a></p>
                    <p>Status: <span id="feed-state" role="status">connecting…</span></p>
                    <ul id="feed" class="feed" aria-live="polite" data-source="\(place.link(.feedEvents))"></ul>
                    """
            )
        }
        router.get(RouterPath(ConsoleLink.Path.feedEvents.rawValue)) { request, context -> Response in
            try await events(request, context)
        }
    }

    private func events(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        guard let (key, session) = await session(of: request) else {
            return PageHeaders.page("<p>Sign in again.</p>", status: .forbidden)
        }
        context.notes.caller = "console"
        let call = ConsoleCall(
            request: request,
            sessionKey: key,
            csrf: session.csrf,
            query: (try? FormFields(decoding: request.uri.query ?? "")) ?? FormFields(),
            form: FormFields()
        )
        let place: ConsolePlace
        do { place = try ConsolePlace(call, needsZone: true) } catch let p as ConsoleProblem {
            return PageHeaders.page("<p>\(p.message)</p>", status: .badRequest)
        }
        guard let zoneID = place.zone else { return PageHeaders.page("<p>zone is required</p>", status: .badRequest) }
        let resume = request.headers[HTTPField.Name("Last-Event-ID")!].map { $0.trimmingCharacters(in: .whitespaces) }
        let engine = self.engine
        let start: String
        do {
            start = try await thread.read { () -> String in
                let db = try place.database(engine: engine)
                if let resume, !resume.isEmpty, resume.utf8.count <= 4096 {
                    _ = try db.recordZoneChanges(zoneID, since: resume, resultsLimit: 1, desiredKeys: [])
                    return resume
                }
                return try db.currentChangeToken(zoneID)
            }
        } catch {
            let (status, message) = ConsoleLayout.describe(error)
            return PageHeaders.page("<p>\(message)</p>", status: status)
        }
        guard sessions.openFeed(key) else {
            return PageHeaders.page("<p>This session has \(sessions.options.feedsPerSession) live feeds open already.</p>", status: .tooManyRequests)
        }
        // The place is given back when the body lets go of it, written or not.
        let held = FeedPlace { [sessions] in sessions.closeFeed(key) }
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        let console = self
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                defer { withExtendedLifetime(held) {} }
                try await console.follow(place: place, zoneID: zoneID, from: start, key: key, request: request, writer: &writer)
                try await writer.finish(nil)
            }
        )
    }

    private func follow(
        place: ConsolePlace,
        zoneID: RecordZoneID,
        from start: String,
        key: String,
        request: Request,
        writer: inout any ResponseBodyWriter
    ) async throws {
        let clock = ContinuousClock()
        let ends = clock.now + .milliseconds(Int64(sessions.options.feedSeconds * 1000))
        var token = start
        var epoch = signal.credentialsEpoch
        var quietSince = clock.now
        let engine = self.engine
        try await writer.write(ChangeStream.frame(comment: "feed", id: nil))
        while clock.now < ends, !signal.isClosing, sessions.isOpen(key) {
            if signal.credentialsEpoch != epoch {
                epoch = signal.credentialsEpoch
                guard await session(of: request) != nil else { break }
            }
            let generation = signal.generation
            let since = token
            let (changes, next, more) = try await thread.read { () -> ([(String, String, Bool)], String, Bool) in
                let db = try place.database(engine: engine)
                let page = try db.recordZoneChanges(zoneID, since: since, resultsLimit: 50, desiredKeys: [])
                let saved = page.modifications.map { ($0.recordID.recordName, $0.recordType, false) }
                let deleted = page.deletions.map { ($0.recordID.recordName, $0.recordType, true) }
                return (saved + deleted, page.changeToken, page.moreComing)
            }
            for (name, type, deleted) in changes {
                let object: [String: Any] = ["recordName": name, "recordType": type, "deleted": deleted]
                let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
                try await writer.write(ChangeStream.frame(event: "change", id: next, data: Array(data)))
            }
            token = next
            if !changes.isEmpty { quietSince = clock.now }
            if more { continue }
            if clock.now - quietSince >= .seconds(2) {
                try await writer.write(ChangeStream.frame(comment: "heartbeat", id: nil))
                quietSince = clock.now
            }
            await signal.wait(after: generation, upTo: .seconds(1))
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

/// A live feed's place in its session, given back when the response lets go of it.
final class FeedPlace: Sendable {
    private let release: @Sendable () -> Void
    init(_ release: @escaping @Sendable () -> Void) { self.release = release }
    deinit { release() }
}
