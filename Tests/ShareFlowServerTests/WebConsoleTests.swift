import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import ShareFlowTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowServer

/// The web console (SPEC §21) in process, through the server's own router: its door (sessions,
/// CSRF, headers, no CORS), acting as an account (R12, R15, R37, R40 as the account's own app
/// sees them), sharing by hand, escaping, decisions, faults and the live feed.
final class WebConsoleTests: XCTestCase, @unchecked Sendable {
    private var engine: Engine!
    private var admin = ""
    private var aliceID = "", bobID = "", carolID = ""

    /// What the corpus tries in every field a user controls.
    static let hostile = [
        "<script>alert(1)</script>", "\"><img src=x onerror=alert(2)>", "javascript:alert(3)", "</textarea><svg onload=alert(4)>",
        "'onmouseover='alert(5)", "{{7*7}}",
    ]

    override func setUpWithError() throws {
        engine = try Engine(store: Store(path: ":memory:"))
        admin = try Credentials.newAdminToken(engine: engine)
        aliceID = try engine.accounts.create(emails: ["alice@example.com"], name: NameComponents(givenName: "Alice"), discoverable: true).userRecordID
        bobID = try engine.accounts.create(emails: ["bob@example.com"], name: NameComponents(givenName: "Bob"), discoverable: true).userRecordID
        carolID = try engine.accounts.create(emails: ["carol@example.com"], name: NameComponents(givenName: "Carol"), discoverable: true)
            .userRecordID
    }

    private func withConsole(
        options: WebConsoleOptions = WebConsoleOptions(),
        corsOrigins: [String] = [],
        signal: ChangeSignal = ChangeSignal(),
        _ body: @escaping @Sendable (ConsoleClient) async throws -> Void
    ) async throws {
        var server = CloudKitServer(engine: engine, host: "127.0.0.1", port: 0, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        server.corsOrigins = corsOrigins
        server.console = options
        let app = Application(router: server.router(thread: EngineThread(), signal: signal))
        try await app.test(.router) { client in try await body(ConsoleClient(client: client)) }
    }

    private func signedIn(_ client: ConsoleClient) async throws -> ConsoleClient {
        var c = client
        try await c.signIn(admin)
        return c
    }

    /// Alice's zone Trips with one record, shared (a hierarchy share) with nobody yet.
    @discardableResult
    private func aliceSharesATrip(title: String = "Lisbon", name: String = "trip-1") throws -> (Record, Share) {
        let db = try engine.session(for: "alice@example.com").container("iCloud.test").privateCloudDatabase
        try db.saveZone("Trips")
        let trip = Record(recordType: "Trip", recordID: RecordID(recordName: name, zoneID: try db.zoneID("Trips")), fields: ["title": .string(title)])
        let share = Share(rootRecord: trip)
        share.title = title
        let result = try db.modifyRecords(saving: [trip, share])
        XCTAssertNil(result.error)
        return (trip, share)
    }

    private func place(_ who: String, database: String = "private", zone: String? = "Trips", owner: String? = nil) -> String {
        var q: [(String, String)] = [("as", who), ("container", "iCloud.test"), ("environment", "development"), ("database", database)]
        if let zone { q += [("zone", zone), ("owner", owner ?? aliceID)] }
        return ConsoleClient.encode(q)
    }

    // MARK: - The door

    func testWithoutASessionAPageIsTheSignInFormAndAPostIsRefused() async throws {
        try aliceSharesATrip()
        try await withConsole { c in
            let form = try await c.get("/console")
            XCTAssertEqual(form.status, 200)
            XCTAssertTrue(form.text.contains("name=\"token\""))
            let cookie = try XCTUnwrap(form.cookies.first { $0.hasPrefix("sf_console_login=") })
            XCTAssertTrue(cookie.contains("Path=/console") && cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), cookie)
            for path in ["/console/accounts", "/console/decisions", "/console/faults", "/console/record?as=x"] {
                let page = try await c.get(path)
                XCTAssertEqual(page.status, 303, path)
                XCTAssertEqual(page.location, "/console", path)
            }
            let post = try await c.post("/console/faults/arm", [("operation", "records/modify"), ("fault", "requestRateLimited")], csrf: "x")
            XCTAssertEqual(post.status, 403)
            XCTAssertTrue(self.engine.faults.list().isEmpty)
            // A guessed or made-up session cookie is no session.
            var forged = c
            forged.cookie = "sf_console=" + String(repeating: "a", count: 64)
            let page = try await forged.get("/console/accounts")
            XCTAssertEqual(page.status, 303)
        }
    }

    func testSignInMakesAFreshSessionAndRefusesWrongTokens() async throws {
        try await withConsole { c in
            // A wrong token: 401, the form again, no session cookie.
            let form = try await c.get("/console")
            let nonce = try XCTUnwrap(ConsoleClient.field("nonce", in: form.text))
            let login = String(try XCTUnwrap(form.cookies.first { $0.hasPrefix("sf_console_login=") }).split(separator: ";")[0])
            // A cookie the browser was given by someone else is never adopted (fixation).
            let planted = "sf_console=" + String(repeating: "b", count: 64)
            let wrong = try await c.client.execute(
                uri: "/console/session",
                method: .post,
                headers: [.contentType: "application/x-www-form-urlencoded", .cookie: login + "; " + planted],
                body: ByteBuffer(string: "nonce=\(nonce)&token=" + String(repeating: "0", count: 64))
            ) { r in ConsoleClient.Page(status: Int(r.status.code), headers: r.headers, text: String(buffer: r.body)) }
            XCTAssertEqual(wrong.status, 401)
            XCTAssertFalse(wrong.cookies.contains { $0.hasPrefix("sf_console=") })
            // Without the nonce cookie (a cross-site login form): refused before the token is looked at.
            let noNonce = try await c.client.execute(
                uri: "/console/session",
                method: .post,
                headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: "nonce=\(nonce)&token=\(self.admin)")
            ) { r in ConsoleClient.Page(status: Int(r.status.code), headers: r.headers, text: String(buffer: r.body)) }
            XCTAssertEqual(noNonce.status, 403)
            XCTAssertFalse(noNonce.cookies.contains { $0.hasPrefix("sf_console=") })
            // The right token: a new session, its cookie scoped and never the planted one.
            let right = try await c.client.execute(
                uri: "/console/session",
                method: .post,
                headers: [.contentType: "application/x-www-form-urlencoded", .cookie: login + "; " + planted],
                body: ByteBuffer(string: "nonce=\(nonce)&token=\(self.admin)")
            ) { r in ConsoleClient.Page(status: Int(r.status.code), headers: r.headers, text: String(buffer: r.body)) }
            XCTAssertEqual(right.status, 303)
            let session = try XCTUnwrap(right.cookies.first { $0.hasPrefix("sf_console=") })
            XCTAssertFalse(session.hasPrefix(planted))
            for part in ["Path=/console", "HttpOnly", "SameSite=Strict"] { XCTAssertTrue(session.contains(part), session) }
            XCTAssertFalse(session.contains("Max-Age"), "a session cookie ends with the browser")
            // Two sign-ins: two sessions, each its own token.
            var a = c
            try await a.signIn(self.admin)
            var b = c
            try await b.signIn(self.admin)
            XCTAssertNotEqual(a.cookie, b.cookie)
            XCTAssertNotEqual(a.csrf, b.csrf)
        }
    }

    func testFailedSignInsFromOneAddressAreThrottled() async throws {
        var options = WebConsoleOptions()
        options.failedSignInsPerMinute = 3
        try await withConsole(options: options) { c in
            var statuses: [Int] = []
            for _ in 0..<5 {
                let form = try await c.get("/console")
                let nonce = try XCTUnwrap(ConsoleClient.field("nonce", in: form.text))
                let login = String(try XCTUnwrap(form.cookies.first { $0.hasPrefix("sf_console_login=") }).split(separator: ";")[0])
                let r = try await c.client.execute(
                    uri: "/console/session",
                    method: .post,
                    headers: [.contentType: "application/x-www-form-urlencoded", .cookie: login],
                    body: ByteBuffer(string: "nonce=\(nonce)&token=" + String(repeating: "1", count: 64))
                ) { r in Int(r.status.code) }
                statuses.append(r)
            }
            XCTAssertEqual(statuses, [401, 401, 401, 429, 429])
        }
    }

    /// Tries still being answered count: a burst sent at once (each checked before its form
    /// was read) is held to the same number as tries one after another; a try that was not a
    /// wrong token is given back.
    func testSignInTriesInFlightCountAgainstTheLimit() async throws {
        var options = WebConsoleOptions()
        options.failedSignInsPerMinute = 3
        let sessions = ConsoleSessions(options: options)
        let tries = (0..<10).map { _ in sessions.signIns.take(from: "10.0.0.1") }
        XCTAssertEqual(tries, [true, true, true] + Array(repeating: false, count: 7))
        XCTAssertTrue(sessions.signIns.take(from: "10.0.0.2"), "another address is its own")
        sessions.signIns.giveBack(from: "10.0.0.1")
        XCTAssertTrue(sessions.signIns.take(from: "10.0.0.1"))
        XCTAssertFalse(sessions.signIns.take(from: "10.0.0.1"))
        // Through the door: twenty wrong tokens sent at once, at most three answered 401.
        try await withConsole(options: options) { c in
            var forms: [(String, String)] = []
            for _ in 0..<20 {
                let form = try await c.get("/console")
                let nonce = try XCTUnwrap(ConsoleClient.field("nonce", in: form.text))
                forms.append((nonce, String(try XCTUnwrap(form.cookies.first { $0.hasPrefix("sf_console_login=") }).split(separator: ";")[0])))
            }
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for (nonce, login) in forms {
                    group.addTask {
                        try await c.client.execute(
                            uri: "/console/session",
                            method: .post,
                            headers: [.contentType: "application/x-www-form-urlencoded", .cookie: login],
                            body: ByteBuffer(string: "nonce=\(nonce)&token=" + String(repeating: "1", count: 64))
                        ) { r in Int(r.status.code) }
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            XCTAssertLessThanOrEqual(statuses.filter { $0 == 401 }.count, 3, "\(statuses)")
            XCTAssertEqual(statuses.filter { $0 == 429 }.count, 20 - statuses.filter { $0 == 401 }.count, "\(statuses)")
        }
        // A refused form (no nonce) and a right token are given back: the wrong ones alone count.
        try await withConsole(options: options) { c in
            for _ in 0..<5 {
                let r = try await c.client.execute(
                    uri: "/console/session",
                    method: .post,
                    headers: [.contentType: "application/x-www-form-urlencoded"],
                    body: ByteBuffer(string: "nonce=x&token=" + String(repeating: "1", count: 64))
                ) { r in Int(r.status.code) }
                XCTAssertEqual(r, 403)
            }
            for _ in 0..<5 {
                var a = c
                try await a.signIn(self.admin)
            }
        }
    }

    /// Behind a proxy that ends TLS (`--public-url https://…`) the server speaks http, but its
    /// cookies are `Secure` all the same: a plain-http request to the host never carries them.
    func testCookiesAreSecureBehindAnHTTPSPublicURL() async throws {
        engine.options.publicURL = "https://console.example.com"
        try await withConsole(corsOrigins: ["https://app.example.com"]) { c in
            let form = try await c.get("/console")
            let login = try XCTUnwrap(form.cookies.first { $0.hasPrefix("sf_console_login=") })
            XCTAssertTrue(login.hasSuffix("; Secure"), login)
            let nonce = try XCTUnwrap(ConsoleClient.field("nonce", in: form.text))
            let answer = try await c.client.execute(
                uri: "/console/session",
                method: .post,
                headers: [
                    .contentType: "application/x-www-form-urlencoded", .cookie: String(login.split(separator: ";")[0]),
                    HTTPField.Name("Origin")!: "https://console.example.com",
                ],
                body: ByteBuffer(string: "nonce=\(nonce)&token=\(self.admin)")
            ) { r in ConsoleClient.Page(status: Int(r.status.code), headers: r.headers, text: String(buffer: r.body)) }
            XCTAssertEqual(answer.status, 303, answer.text)
            let session = try XCTUnwrap(answer.cookies.first { $0.hasPrefix("sf_console=") })
            XCTAssertTrue(session.contains("; Secure"), session)
            let signin = try await c.get("/signin")
            let nonceCookie = try XCTUnwrap(signin.cookies.first { $0.hasPrefix("sf_signin=") })
            XCTAssertTrue(nonceCookie.hasSuffix("; Secure"), nonceCookie)
        }
        // Plain http everywhere (the default public URL): no `Secure`, or no browser would keep them.
        engine.options.publicURL = "http://127.0.0.1:8080"
        try await withConsole { c in
            let form = try await c.get("/console")
            XCTAssertFalse(try XCTUnwrap(form.cookies.first { $0.hasPrefix("sf_console_login=") }).contains("Secure"))
        }
    }

    /// A cookie of the session's name planted under a longer path (by a sibling site, or a page
    /// on another port of this host: cookies know no port) is sent first; it hides neither the
    /// real session nor the sign-in form's nonce.
    func testAPlantedCookieUnderALongerPathHidesNoSession() async throws {
        try await withConsole { c in
            var c = try await self.signedIn(c)
            let real = c.cookie
            let planted = "sf_console=" + String(repeating: "c", count: 64)
            c.cookie = planted + "; " + real
            let page = try await c.get("/console/accounts")
            XCTAssertEqual(page.status, 200, "the real session, not the planted one")
            let post = try await c.post("/console/faults/arm", [("operation", "records/modify"), ("fault", "requestRateLimited")])
            XCTAssertEqual(post.status, 303, post.text)
            XCTAssertEqual(self.engine.faults.list().count, 1)
            // The sign-in form's nonce cookie, with a planted one before it.
            let form = try await ConsoleClient(client: c.client).get("/console")
            let nonce = try XCTUnwrap(ConsoleClient.field("nonce", in: form.text))
            let login = String(try XCTUnwrap(form.cookies.first { $0.hasPrefix("sf_console_login=") }).split(separator: ";")[0])
            let signIn = try await c.client.execute(
                uri: "/console/session",
                method: .post,
                headers: [
                    .contentType: "application/x-www-form-urlencoded",
                    .cookie: "sf_console_login=" + String(repeating: "d", count: 64) + "; " + login,
                ],
                body: ByteBuffer(string: "nonce=\(nonce)&token=\(self.admin)")
            ) { r in Int(r.status.code) }
            XCTAssertEqual(signIn, 303)
            // Planted cookies alone are still no session.
            c.cookie = planted
            let alone = try await c.get("/console/accounts")
            XCTAssertEqual(alone.status, 303)
        }
    }

    func testEveryPostNeedsTheSessionsTokenFromThisSite() async throws {
        try await withConsole { c in
            let c = try await self.signedIn(c)
            let arm = [("operation", "records/modify"), ("fault", "requestRateLimited")]
            let refused: [(String, ConsoleClient.Page)] = [
                ("no token", try await c.post("/console/faults/arm", arm, csrf: "")),
                ("another token", try await c.post("/console/faults/arm", arm, csrf: String(repeating: "f", count: 64))),
                ("another origin", try await c.post("/console/faults/arm", arm, headers: [HTTPField.Name("Origin")!: "https://evil.example"])),
                ("a null origin", try await c.post("/console/faults/arm", arm, headers: [HTTPField.Name("Origin")!: "null"])),
                ("another site", try await c.post("/console/faults/arm", arm, headers: [HTTPField.Name("Sec-Fetch-Site")!: "cross-site"])),
                ("a sibling site", try await c.post("/console/faults/arm", arm, headers: [HTTPField.Name("Sec-Fetch-Site")!: "same-site"])),
                ("not a form", try await c.post("/console/faults/arm", arm, headers: [.contentType: "text/plain"])),
                ("JSON", try await c.post("/console/faults/arm", arm, headers: [.contentType: "application/json"])),
            ]
            for (why, page) in refused { XCTAssertEqual(page.status, 403, why) }
            XCTAssertTrue(self.engine.faults.list().isEmpty)
            // The same form from this site, with the token: armed.
            let ok = try await c.post("/console/faults/arm", arm, headers: [HTTPField.Name("Sec-Fetch-Site")!: "same-origin"])
            XCTAssertEqual(ok.status, 303)
            XCTAssertEqual(self.engine.faults.list().count, 1)
            // No GET changes anything: every page read twice leaves the store as it was.
            let before = try self.engine.store.read { try $0.fetchInteger("SELECT COUNT(*) FROM credential") }
            for path in WebConsole.routes where path.hasPrefix("GET ") && !path.contains("events") {
                _ = try await c.get(String(path.dropFirst(4)) + "?as=alice@example.com&container=iCloud.test&op=clear&decision=block")
            }
            XCTAssertEqual(self.engine.faults.list().count, 1)
            XCTAssertEqual(try self.engine.store.read { try $0.fetchInteger("SELECT COUNT(*) FROM credential") }, before)
        }
    }

    func testPagesCarryStrictHeadersAndTheConsoleHasNoCORS() async throws {
        try aliceSharesATrip()
        try await withConsole(corsOrigins: ["*"]) { c in
            let c = try await self.signedIn(c)
            for path in [
                "/console", "/console/accounts", "/console/account?as=alice@example.com", "/console/zone?" + self.place("alice@example.com"),
                "/console/faults",
            ] {
                let page = try await c.get(path, headers: [HTTPField.Name("Origin")!: "https://app.example"])
                let csp = page.headers[.contentSecurityPolicy] ?? ""
                for part in ["default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'", "base-uri 'none'"] {
                    XCTAssertTrue(csp.contains(part), "\(path): \(csp)")
                }
                XCTAssertFalse(csp.contains("unsafe-inline"), path)
                XCTAssertEqual(page.headers[HTTPField.Name("X-Frame-Options")!], "DENY", path)
                XCTAssertEqual(page.headers[HTTPField.Name("X-Content-Type-Options")!], "nosniff", path)
                XCTAssertEqual(page.headers[.cacheControl], "no-store", path)
                XCTAssertNil(page.headers[.accessControlAllowOrigin], path)
                XCTAssertFalse(page.text.contains("<script>"), "no inline script: \(path)")
                XCTAssertFalse(page.text.contains(" style="), path)
            }
            let preflight = try await c.client.execute(
                uri: "/console/faults/arm",
                method: .options,
                headers: [HTTPField.Name("Origin")!: "https://evil.example", .accessControlRequestMethod: "POST"],
                body: nil
            ) { r in r.headers }
            XCTAssertNil(preflight[.accessControlAllowOrigin])
            let css = try await c.get("/console/static/console.css")
            XCTAssertEqual(css.headers[.contentType], "text/css; charset=utf-8")
            let js = try await c.get("/console/static/console.js")
            XCTAssertEqual(js.headers[.contentType], "text/javascript; charset=utf-8")
            XCTAssertFalse(js.text.contains("innerHTML"))
        }
    }

    func testSessionsEndWhenIdleAtSignOutAndWhenTheirTokenIsRevoked() async throws {
        var options = WebConsoleOptions()
        options.idleSeconds = 0.5
        let signal = ChangeSignal()
        try await withConsole(options: options, signal: signal) { c in
            // Idle past its limit: the next page is the sign-in form.
            let idle = try await self.signedIn(c)
            try await Task.sleep(for: .milliseconds(800))
            let after = try await idle.get("/console/accounts")
            XCTAssertEqual(after.status, 303)
            // Sign-out ends it, and expires its cookie.
            let out = try await self.signedIn(c)
            let bye = try await out.post("/console/session/end", [])
            XCTAssertEqual(bye.status, 303)
            XCTAssertTrue(bye.cookies.contains { $0.hasPrefix("sf_console=;") && $0.contains("Max-Age=0") })
            let gone = try await out.get("/console/accounts")
            XCTAssertEqual(gone.status, 303)
            // The admin token revoked (shareflow tokens revoke; StoreWatch moves the epoch): ended.
            let live = try await self.signedIn(c)
            _ = try self.engine.credentials.revoke(hash: Credentials.hash(self.admin))
            signal.credentialsChanged()
            let revoked = try await live.get("/console/accounts")
            XCTAssertEqual(revoked.status, 303)
        }
    }

    // MARK: - Acting as an account

    func testActingAsAnAccountShowsWhatItsAppWouldSee() async throws {
        try aliceSharesATrip()
        try await withConsole { c in
            let c = try await self.signedIn(c)
            let accounts = try await c.get("/console/accounts")
            XCTAssertTrue(accounts.text.contains(self.aliceID) && accounts.text.contains(self.bobID))
            // Alice: her container, her zone, her record and its share.
            let alice = try await c.get("/console/account?as=alice@example.com")
            XCTAssertTrue(alice.text.contains("iCloud.test"), alice.text)
            let zones = try await c.get("/console/database?" + self.place("alice@example.com", zone: nil))
            XCTAssertTrue(zones.text.contains(">Trips<"), zones.text)
            let zone = try await c.get("/console/zone?" + self.place("alice@example.com"))
            XCTAssertTrue(zone.text.contains(">trip-1<"), zone.text)
            let record = try await c.get("/console/record?" + self.place("alice@example.com") + "&record=trip-1")
            XCTAssertTrue(record.text.contains("Lisbon") && record.text.contains("/console/share?"), record.text)
            // Bob: not his zone (R37: a zone he cannot see is zoneNotFound), nothing shared yet (R12).
            let bobsPrivate = try await c.get("/console/database?" + self.place("bob@example.com", zone: nil))
            XCTAssertFalse(bobsPrivate.text.contains(">Trips<"))
            let bobsShared = try await c.get("/console/database?" + self.place("bob@example.com", database: "shared", zone: nil))
            XCTAssertFalse(bobsShared.text.contains(">Trips<"))
            let probe = try await c.get("/console/zone?" + self.place("bob@example.com", database: "shared"))
            XCTAssertEqual(probe.status, 404, probe.text)
            XCTAssertTrue(probe.text.contains("ZONE_NOT_FOUND"), probe.text)
            XCTAssertFalse(probe.text.contains("trip-1"))
            let record2 = try await c.get("/console/record?" + self.place("bob@example.com", database: "shared") + "&record=trip-1")
            XCTAssertFalse(record2.text.contains("Lisbon"))
            // An unknown account or a bad parameter is a 400 naming it.
            let nobody = try await c.get("/console/account?as=nobody@example.com")
            XCTAssertEqual(nobody.status, 400)
            XCTAssertTrue(nobody.text.contains("no account is nobody@example.com"))
            let badEnv = try await c.get("/console/database?as=alice@example.com&container=iCloud.test&environment=staging")
            XCTAssertEqual(badEnv.status, 400)
            XCTAssertTrue(badEnv.text.contains("environment must be development or production"))
        }
    }

    /// The link page lists the shares the account is on: not one it was removed from (R16:
    /// its link names nothing to the account), though the operator's audit still holds it.
    func testTheLinkPageListsNoShareTheAccountWasRemovedFrom() async throws {
        let (_, share) = try aliceSharesATrip(title: "Removed-From")
        let alice = try engine.session(for: "alice@example.com").container("iCloud.test")
        let carol = try XCTUnwrap(try alice.fetchShareParticipantResults([LookupRequest(emailAddress: "carol@example.com")]).0.first?.1.get())
        share.addParticipant(carol)
        XCTAssertNil(try alice.privateCloudDatabase.modifyRecords(saving: [share]).error)
        let url = ConsoleLink.encode(try XCTUnwrap(share.url))
        try await withConsole { c in
            let c = try await self.signedIn(c)
            let invited = try await c.get("/console/link?as=carol@example.com")
            XCTAssertTrue(invited.text.contains("Removed-From") && invited.text.contains(url), invited.text)
        }
        let fetched = try XCTUnwrap(try alice.privateCloudDatabase.fetchRecord(share.recordID) as? Share)
        fetched.removeParticipant(try XCTUnwrap(fetched.participants.first { $0.userIdentity.userRecordID == carolID }))
        XCTAssertNil(try alice.privateCloudDatabase.modifyRecords(saving: [fetched]).error)
        XCTAssertFalse(try engine.auditShares(participant: carolID).isEmpty, "the audit keeps it")
        try await withConsole { c in
            let c = try await self.signedIn(c)
            let removed = try await c.get("/console/link?as=carol@example.com")
            XCTAssertEqual(removed.status, 200)
            XCTAssertFalse(removed.text.contains("Removed-From"), removed.text)
            XCTAssertFalse(removed.text.contains(url), removed.text)
        }
    }

    func testADefaultZonesRecordsAreListedByType() async throws {
        let db = try engine.session(for: "alice@example.com").container("iCloud.test").privateCloudDatabase
        let id = RecordID(recordName: "note-1", zoneID: try db.zoneID(RecordZoneID.defaultZoneName))
        XCTAssertNil(try db.modifyRecords(saving: [Record(recordType: "Note", recordID: id)]).error)
        try await withConsole { c in
            let c = try await self.signedIn(c)
            let base = "/console/zone?" + self.place("alice@example.com", zone: RecordZoneID.defaultZoneName)
            let form = try await c.get(base)
            XCTAssertEqual(form.status, 200, form.text)
            XCTAssertTrue(form.text.contains("name=\"type\""), form.text)
            XCTAssertFalse(form.text.contains("/console/feed?"), "a default zone has no feed")
            let listed = try await c.get(base + "&type=Note")
            XCTAssertTrue(listed.text.contains(">note-1<"), listed.text)
        }
    }

    func testEveryValueAUserControlsIsShownAsText() async throws {
        // The corpus in record names and fields, the zone name, an account's name, the share's
        // title, a requester, a policy's reason, and a fault rule's record name.
        let db = try engine.session(for: "alice@example.com").container("iCloud.test").privateCloudDatabase
        let zoneName = "z<script>alert(9)</script>"
        try db.saveZone(zoneName)
        var records: [Record] = []
        for (i, text) in WebConsoleTests.hostile.enumerated() {
            records.append(
                Record(
                    recordType: "T",
                    recordID: RecordID(recordName: "r\(i)" + text, zoneID: try db.zoneID(zoneName)),
                    fields: ["text": .string(text), "list": .list([.string(text)])]
                )
            )
        }
        let share = Share(rootRecord: records[0])
        share.title = WebConsoleTests.hostile[1]
        share.allowsAccessRequests = true
        XCTAssertNil(try db.modifyRecords(saving: records + [share]).error)
        let evil = try engine.accounts.create(
            emails: ["evil@example.com"],
            name: NameComponents(givenName: WebConsoleTests.hostile[0]),
            discoverable: true
        )
        let request = try engine.session(for: evil).container("iCloud.test").requestShareAccessResults([try XCTUnwrap(share.url)])
        XCTAssertNil(request.1)
        _ = try engine.faults.add(
            FaultRule(
                ["operation": .string("records/modify"), "recordName": .string(WebConsoleTests.hostile[3]), "latencyMs": .number(1)],
                name: "r"
            )
        )
        _ = engine.policies.add(.participantAdd, name: WebConsoleTests.hostile[1], location: WebConsoleTests.hostile[0]) { _ in
            .deny(WebConsoleTests.hostile[1])
        }
        let (shareName, shareTag) = (share.recordID.recordName, share.recordChangeTag ?? "")
        let recordNames = records.map(\.recordID.recordName)
        try await withConsole { c in
            let c = try await self.signedIn(c)
            // A denial logged, so the decisions page shows the policy's words.
            _ = try await c.post(
                "/console/share/invite",
                [
                    ("as", "alice@example.com"), ("container", "iCloud.test"), ("database", "private"), ("zone", zoneName), ("owner", self.aliceID),
                    ("share", shareName), ("tag", shareTag), ("lookup", "bob@example.com"),
                ]
            )
            let base = self.place("alice@example.com", zone: zoneName)
            var pages = [
                "/console/accounts", "/console/account?as=evil@example.com", "/console/database?" + self.place("alice@example.com", zone: nil),
                "/console/zone?" + base, "/console/share?" + base + "&share=" + ConsoleLink.encode(shareName),
                "/console/decisions", "/console/faults", "/console/accounts?q=" + ConsoleLink.encode(WebConsoleTests.hostile[0]),
                "/console/link?as=alice@example.com",
            ]
            for name in recordNames { pages.append("/console/record?" + base + "&record=" + ConsoleLink.encode(name)) }
            var seen = 0
            for path in pages {
                let page = try await c.get(path)
                XCTAssertTrue([200, 400, 404].contains(page.status), "\(path): \(page.status)")
                for needle in ["<script>alert", "<img", "<svg", "'onmouseover='", "href=\"javascript", "</textarea>"] {
                    XCTAssertFalse(page.text.contains(needle), "\(path) holds \(needle) unescaped")
                }
                if page.text.contains("&lt;script&gt;alert") { seen += 1 }
            }
            XCTAssertGreaterThan(seen, 5, "the corpus was shown, escaped")
        }
    }

    // MARK: - Sharing by hand

    func testSharingByHandIsTheEnginesOwnSharing() async throws {
        let (_, made) = try aliceSharesATrip()
        let shareName = made.recordID.recordName
        let shareID = made.recordID
        let firstTag = made.recordChangeTag ?? ""
        let added = Counter()
        engine.events.observe(.participantAdded) { _ in added.add() }
        try await withConsole { c in
            let c = try await self.signedIn(c)
            let at = [
                ("as", "alice@example.com"), ("container", "iCloud.test"), ("environment", "development"), ("database", "private"),
                ("zone", "Trips"), ("owner", self.aliceID), ("share", shareName),
            ]
            func tag() throws -> String {
                let db = try self.engine.session(for: "alice@example.com").container("iCloud.test").privateCloudDatabase
                return try db.fetchRecord(shareID).recordChangeTag ?? ""
            }
            func shareNow() throws -> Share {
                let db = try self.engine.session(for: "alice@example.com").container("iCloud.test").privateCloudDatabase
                return try XCTUnwrap(try db.fetchRecord(shareID) as? Share)
            }
            // Invite Bob read-only.
            var r = try await c.post("/console/share/invite", at + [("tag", try tag()), ("lookup", "bob@example.com"), ("permission", "readOnly")])
            XCTAssertEqual(r.status, 303)
            var page = try await c.follow(r)
            XCTAssertTrue(page.text.contains("Invited bob@example.com"), page.text)
            let bob = try XCTUnwrap(try shareNow().participants.first { $0.userIdentity.userRecordID == self.bobID })
            XCTAssertEqual(bob.permission, .readOnly)
            XCTAssertEqual(bob.acceptanceStatus, .pending)
            // A form made before that change is stale: nothing is saved.
            let stale = firstTag
            r = try await c.post("/console/share/permission", at + [("tag", stale), ("participant", bob.participantID), ("permission", "readWrite")])
            page = try await c.follow(r)
            XCTAssertTrue(page.text.contains("the share changed since this page was made"), page.text)
            XCTAssertEqual(try shareNow().participants.first { $0.participantID == bob.participantID }?.permission, .readOnly)
            // Read-write (A19: a changed permission is saved by the share's save).
            r = try await c.post(
                "/console/share/permission",
                at + [("tag", try tag()), ("participant", bob.participantID), ("permission", "readWrite")]
            )
            _ = try await c.follow(r)
            XCTAssertEqual(try shareNow().participants.first { $0.participantID == bob.participantID }?.permission, .readWrite)
            // Bob opens the link and accepts; his shared database then has the zone.
            let url = try XCTUnwrap(try shareNow().url)
            let link = try await c.get(
                "/console/link?as=bob@example.com&container=iCloud.test&environment=development&url=" + ConsoleLink.encode(url)
            )
            XCTAssertTrue(link.text.contains("pending") && link.text.contains("readWrite"), link.text)
            r = try await c.post(
                "/console/link/accept",
                [("as", "bob@example.com"), ("container", "iCloud.test"), ("environment", "development"), ("database", "private"), ("url", url)]
            )
            page = try await c.follow(r)
            XCTAssertTrue(page.text.contains("Accepted"), page.text)
            let bobsShared = try await c.get("/console/zone?" + self.place("bob@example.com", database: "shared"))
            XCTAssertTrue(bobsShared.text.contains(">trip-1<"), bobsShared.text)
            // As Bob, the share shows no requesters or blocked list (R40) and no forms to change it.
            let asBob = try await c.get("/console/share?" + self.place("bob@example.com", database: "shared") + "&share=" + shareName)
            XCTAssertTrue(asBob.text.contains("shown to the owner and administrators only"), asBob.text)
            XCTAssertFalse(asBob.text.contains("/console/share/remove"))
            // Alice removes him: his shared zone is gone (R12).
            r = try await c.post("/console/share/remove", at + [("tag", try tag()), ("participant", bob.participantID)])
            page = try await c.follow(r)
            XCTAssertTrue(page.text.contains("Removed bob@example.com"), page.text)
            let after = try await c.get("/console/zone?" + self.place("bob@example.com", database: "shared"))
            XCTAssertEqual(after.status, 404)
            // Requests: the owner allows them; Carol asks; approve, then deny and block, then unblock.
            r = try await c.post("/console/share/settings", at + [("tag", try tag()), ("publicPermission", "none"), ("allowsAccessRequests", "1")])
            _ = try await c.follow(r)
            XCTAssertTrue(try shareNow().allowsAccessRequests)
            func carolAsks() async throws {
                let r = try await c.post(
                    "/console/link/request",
                    [
                        ("as", "carol@example.com"), ("container", "iCloud.test"), ("environment", "development"), ("database", "private"),
                        ("url", url),
                    ]
                )
                let page = try await c.follow(r)
                XCTAssertTrue(page.text.contains("Access requested"), page.text)
            }
            try await carolAsks()
            var request = try XCTUnwrap(try shareNow().requesters.first)
            r = try await c.post("/console/share/requesters", at + [("tag", try tag()), ("requester", request.requestID), ("decision", "approve")])
            page = try await c.follow(r)
            XCTAssertTrue(page.text.contains("Approved carol@example.com"), page.text)
            let carol = try XCTUnwrap(try shareNow().participants.first { $0.userIdentity.userRecordID == self.carolID })
            XCTAssertTrue(carol.isApprovedRequester)
            r = try await c.post("/console/share/remove", at + [("tag", try tag()), ("participant", carol.participantID)])
            _ = try await c.follow(r)
            try await carolAsks()
            request = try XCTUnwrap(try shareNow().requesters.first)
            r = try await c.post("/console/share/requesters", at + [("tag", try tag()), ("requester", request.requestID), ("decision", "deny")])
            _ = try await c.follow(r)
            XCTAssertTrue(try shareNow().requesters.isEmpty)
            try await carolAsks()
            request = try XCTUnwrap(try shareNow().requesters.first)
            r = try await c.post("/console/share/requesters", at + [("tag", try tag()), ("requester", request.requestID), ("decision", "block")])
            _ = try await c.follow(r)
            let blocked = try XCTUnwrap(try shareNow().blockedIdentities.first)
            r = try await c.post("/console/share/unblock", at + [("tag", try tag()), ("blocked", blocked.blockID)])
            page = try await c.follow(r)
            XCTAssertTrue(page.text.contains("Unblocked"), page.text)
            XCTAssertTrue(try shareNow().blockedIdentities.isEmpty)
        }
        XCTAssertEqual(added.value, 2, "participant.added for Bob and for Carol approved")
    }

    func testAPolicysDenialIsShownWithItsPolicyReasonAndLocation() async throws {
        let (_, made) = try aliceSharesATrip()
        let (shareName, shareTag) = (made.recordID.recordName, made.recordChangeTag ?? "")
        _ = engine.policies.add(.participantAdd, name: "gate/invite", location: "Plugins/gate/init.lua:12") { request in
            .deny("nobody is invited on Mondays")
        }
        try await withConsole { c in
            let c = try await self.signedIn(c)
            let r = try await c.post(
                "/console/share/invite",
                [
                    ("as", "alice@example.com"), ("container", "iCloud.test"), ("database", "private"), ("zone", "Trips"), ("owner", self.aliceID),
                    ("share", shareName), ("tag", shareTag), ("lookup", "bob@example.com"),
                ]
            )
            let page = try await c.follow(r)
            for part in ["gate/invite", "nobody is invited on Mondays", "Plugins/gate/init.lua:12", "participant.add"] {
                XCTAssertTrue(page.text.contains(part), "\(part) in \(page.text)")
            }
            let decisions = try await c.get("/console/decisions?denied=1&point=participant.add")
            XCTAssertTrue(decisions.text.contains("nobody is invited on Mondays") && decisions.text.contains("bob@example.com"), decisions.text)
            let bad = try await c.get("/console/decisions?point=nope")
            XCTAssertEqual(bad.status, 400)
        }
    }

    // MARK: - Faults and the feed

    func testFaultsArmedOnThePageInjectAndConfigRulesStay() async throws {
        _ = try engine.faults.add(FaultRule(["operation": .string("query"), "latencyMs": .number(1)], name: "c"), owner: .config)
        try await withConsole { c in
            let c = try await self.signedIn(c)
            var r = try await c.post(
                "/console/faults/arm",
                [("operation", "records/modify"), ("fault", "requestRateLimited"), ("retryAfter", "7"), ("count", "1"), ("zone", "")]
            )
            var page = try await c.follow(r)
            XCTAssertTrue(page.text.contains("Armed rule"), page.text)
            let armed = try XCTUnwrap(self.engine.faults.list().first { $0.owner == .runtime })
            XCTAssertEqual(armed.rule.fields.first { $0.key == "retryAfter" }?.value, .number(7))
            // A bad key's value is named.
            r = try await c.post("/console/faults/arm", [("operation", "records/modify"), ("fault", "explode")])
            page = try await c.follow(r)
            XCTAssertTrue(page.text.contains("fault"), page.text)
            XCTAssertEqual(self.engine.faults.list().count, 2)
            r = try await c.post("/console/faults/arm", [("operation", "records/modify"), ("probability", "NaN")])
            page = try await c.follow(r)
            XCTAssertTrue(page.text.contains("probability"), page.text)
            // The config file's rule cannot be removed from the page; clearing leaves it.
            let config = try XCTUnwrap(self.engine.faults.list().first { $0.owner == .config })
            r = try await c.post("/console/faults/remove", [("id", String(config.id))])
            page = try await c.follow(r)
            XCTAssertTrue(page.text.contains("config file"), page.text)
            r = try await c.post("/console/faults/clear", [])
            _ = try await c.follow(r)
            XCTAssertEqual(self.engine.faults.list().map(\.owner), [.config])
        }
    }

    func testTheFeedSendsSavesAndTombstonesAsTheAccountSeesThem() async throws {
        let (trip, share) = try aliceSharesATrip()
        let alice = try engine.session(for: "alice@example.com").container("iCloud.test")
        // Bob on the share, accepted.
        let bobC = try engine.session(for: "bob@example.com").container("iCloud.test")
        let p = try alice.fetchShareParticipantResults([LookupRequest(emailAddress: "bob@example.com")]).0[0].1.get()
        p.permission = .readWrite
        share.addParticipant(p)
        XCTAssertNil(try alice.privateCloudDatabase.modifyRecords(saving: [share]).error)
        let md = try bobC.fetchShareMetadataResults([try XCTUnwrap(share.url)]).0[0].1.get()
        _ = try bobC.acceptShareResults([md]).0[0].1.get()
        let start = try bobC.sharedCloudDatabase.currentChangeToken(trip.recordID.zoneID)
        let zoneID = trip.recordID.zoneID
        // Then a child saved and the trip deleted.
        let child = Record(recordType: "Stop", recordID: RecordID(recordName: "stop<b>1", zoneID: zoneID), parent: trip.recordID)
        XCTAssertNil(try alice.privateCloudDatabase.modifyRecords(saving: [child]).error)
        XCTAssertNil(try alice.privateCloudDatabase.modifyRecords(deleting: [child.recordID]).error)
        var options = WebConsoleOptions()
        options.feedSeconds = 0.5
        try await withConsole(options: options) { c in
            let c = try await self.signedIn(c)
            let page = try await c.get("/console/feed?" + self.place("bob@example.com", database: "shared"))
            XCTAssertEqual(page.status, 200, page.text)
            XCTAssertTrue(page.text.contains("data-source=\"/console/feed/events?"), page.text)
            let stream = try await c.get(
                "/console/feed/events?" + self.place("bob@example.com", database: "shared"),
                headers: [HTTPField.Name("Last-Event-ID")!: start]
            )
            XCTAssertEqual(stream.headers[.contentType], "text/event-stream")
            XCTAssertTrue(stream.text.contains("event: change"), stream.text)
            XCTAssertTrue(stream.text.contains(#""deleted":true,"recordName":"stop<b>1""#), stream.text)
            // A stranger's feed of the zone is refused as the zone is to them.
            let carol = try await c.get("/console/feed/events?" + self.place("carol@example.com", database: "shared"))
            XCTAssertEqual(carol.status, 404)
        }
    }
}

/// A count observers add to from any thread.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() { lock.withLock { n += 1 } }
    var value: Int { lock.withLock { n } }
}
