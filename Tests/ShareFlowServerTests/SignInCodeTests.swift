import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ShareFlowTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowServer

/// The sign-in page's one-time codes (SPEC §21, §13 wave 4; docs/reference/server.md, the sign-in page), in
/// process: without the console `/signin` is today's page to the byte; with it, a form whose
/// code, once, becomes a web auth token handed to the opener's listed origins.
final class SignInCodeTests: XCTestCase {
    private var engine: Engine!
    private var accounts: ServerTestAccounts!
    private var bob: Account!
    /// An API token of iCloud.signin (development), the container the codes are made for.
    private var api = ""
    private let container = "iCloud.signin"
    private let app = "https://app.example.com"

    override func setUpWithError() throws {
        engine = try Engine(store: Store(path: ":memory:"))
        accounts = try ServerTestAccounts(engine: engine)
        bob = try XCTUnwrap(engine.accounts.find("bob@example.com"))
        api = try Credentials.newAPIToken(container: container, engine: engine)
    }

    private struct Answer {
        let status: Int
        let headers: HTTPFields
        let text: String

        /// The `name` attribute's value of the element `marker` opens (escaped as on the page).
        func attribute(_ name: String, after marker: String = "") -> String? {
            guard let start = text.range(of: marker)?.upperBound ?? (marker.isEmpty ? text.startIndex : nil),
                let open = text.range(of: " \(name)=\"", range: start..<text.endIndex),
                let close = text.range(of: "\"", range: open.upperBound..<text.endIndex)
            else { return nil }
            return String(text[open.upperBound..<close.lowerBound])
        }

        /// The form's nonce and the cookie that carries it.
        var nonce: String? { attribute("value", after: "name=\"nonce\"") }
        var cookies: [String] { headers[values: .setCookie] }
    }

    /// Lines the server logged.
    private final class Lines: @unchecked Sendable {
        let lock = NSLock()
        var lines: [String] = []
        var all: String { lock.withLock { lines.joined(separator: "\n") } }
    }

    private struct Capture: LogHandler {
        let lines: Lines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            lines.lock.withLock { lines.lines.append("\(event.message) \(event.metadata ?? [:])") }
        }
    }

    private struct Client: Sendable {
        let client: any TestClientProtocol

        func call(_ method: HTTPRequest.Method, _ uri: String, headers: HTTPFields = [:], body: String? = nil) async throws -> Answer {
            try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { response in
                Answer(status: Int(response.status.code), headers: response.headers, text: String(buffer: response.body))
            }
        }

        /// `users/current` in `container` with `token` and `api`: the status and the user record name.
        func caller(token: String, container: String, api: String) async throws -> (Int, String?) {
            let r = try await call(.get, "/database/1/\(container)/development/public/users/current?ckAPIToken=\(api)&ckWebAuthToken=\(token)")
            let object = (try? JSONSerialization.jsonObject(with: Data(r.text.utf8))) as? [String: Any]
            return (r.status, object?["userRecordName"] as? String)
        }

        /// The form's nonce (a GET of the page).
        func nonce() async throws -> String {
            let form = try await call(.get, "/signin")
            return try XCTUnwrap(form.nonce)
        }

        /// The form's GET, then its POST with `code` (as a browser on the page sends it).
        func signIn(_ code: String, extra: HTTPFields = [:]) async throws -> Answer {
            let form = try await call(.get, "/signin")
            let nonce = try XCTUnwrap(form.nonce)
            return try await post(code, nonce: nonce, cookie: nonce, extra: extra)
        }

        func post(
            _ code: String,
            nonce: String?,
            cookie: String?,
            type: String = "application/x-www-form-urlencoded",
            extra: HTTPFields = [:]
        )
            async throws -> Answer
        {
            var headers: HTTPFields = [.contentType: type]
            if let cookie { headers[.cookie] = "other=1; sf_signin=\(cookie)" }
            headers.append(contentsOf: extra)
            var body = "code=" + ConsoleLink.encode(code)
            if let nonce { body += "&nonce=" + nonce }
            return try await call(.post, "/signin", headers: headers, body: body)
        }
    }

    private func withServer(
        console: Bool = true,
        corsOrigins: [String]? = nil,
        lines: Lines = Lines(),
        _ body: @escaping @Sendable (Client) async throws -> Void
    ) async throws {
        var server = CloudKitServer(engine: engine, host: "127.0.0.1", port: 0, logger: Logger(label: "test") { _ in Capture(lines: lines) })
        server.corsOrigins = corsOrigins ?? [app]
        if console { server.console = WebConsoleOptions() }
        let application = Application(router: server.router(thread: EngineThread()))
        try await application.test(.router) { client in try await body(Client(client: client)) }
    }

    // MARK: Codes

    func testACodeIsTwelveCrockfordDigitsAndReadsBackHoweverTyped() throws {
        var seen = Set<String>()
        for _ in 0..<50 {
            let minted = try SignInCodes.mint(container: container, account: bob, engine: engine)
            XCTAssertEqual(minted.code.count, 14, minted.code)
            XCTAssertNotNil(minted.code.wholeMatch(of: /[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}/), minted.code)
            XCTAssertEqual(minted.container, container)
            XCTAssertEqual(minted.expiresAt, Date().timeIntervalSince1970 + 600, accuracy: 5)
            seen.insert(minted.code)
        }
        XCTAssertEqual(seen.count, 50)
        XCTAssertEqual(SignInCodes.normalised("k7qm-9xd2-ht4p"), "K7QM9XD2HT4P")
        XCTAssertEqual(SignInCodes.normalised(" K7QM 9XD2\tHT4P "), "K7QM9XD2HT4P")
        XCTAssertEqual(SignInCodes.normalised("oOiI-lL00-1111"), "00111100" + "1111")
        XCTAssertNil(SignInCodes.normalised("K7QM-9XD2-HT4"), "too short")
        XCTAssertNil(SignInCodes.normalised("K7QM-9XD2-HT4PX"), "too long")
        XCTAssertNil(SignInCodes.normalised("K7QM-9XD2-HT4U"), "U is no digit")
        XCTAssertNil(SignInCodes.normalised("K7QM-9XD2-HT4É"))
        XCTAssertNil(SignInCodes.normalised(String(repeating: "-", count: 100) + "K7QM9XD2HT4P"))
        XCTAssertThrowsError(try SignInCodes.mint(container: container, account: bob, ttl: 3601, engine: engine))
        XCTAssertThrowsError(try SignInCodes.mint(container: container, account: bob, ttl: 0, engine: engine))
        XCTAssertThrowsError(try SignInCodes.mint(container: " ", account: bob, engine: engine))
        // Redeemed once, typed any way; the token opens the code's container as its account.
        let minted = try SignInCodes.mint(container: container, account: bob, engine: engine)
        let typed = minted.code.lowercased().replacingOccurrences(of: "-", with: " ").replacingOccurrences(of: "0", with: "o")
        let signedIn = try XCTUnwrap(try SignInCodes.redeem(typed, engine: engine))
        XCTAssertEqual(signedIn.container, container)
        XCTAssertEqual(signedIn.account.userRecordID, bob.userRecordID)
        XCTAssertNil(try SignInCodes.redeem(minted.code, engine: engine), "once")
        let stored = try XCTUnwrap(
            try engine.credentials.find(.webAuthToken, container: container, environment: .development, hash: Credentials.hash(signedIn.token))
        )
        XCTAssertEqual(stored.accountID, bob.id)
        XCTAssertEqual(try XCTUnwrap(stored.expiresAt), Date().timeIntervalSince1970 + 1800, accuracy: 5)
        XCTAssertEqual(try engine.store.check().problems, [])
    }

    // MARK: Without the console

    /// `serve` without `--console`: `/signin` is the page it was before the console, byte for
    /// byte and header for header, and nothing else answers there.
    func testWithoutTheConsoleThePageIsUnchanged() async throws {
        try await withServer(console: false, corsOrigins: ["*"]) { c in
            for query in ["", "?redirect=https://evil.example.com"] {
                let r = try await c.call(.get, "/signin" + query, headers: [.origin: "https://evil.example.com"])
                XCTAssertEqual(r.status, 200)
                XCTAssertEqual(Credentials.hash(r.text), "a1329d43f8199794fbb17755f919e1f0647c4ea7f53724c385b6fcc15634e915", r.text)
                XCTAssertEqual(
                    r.headers,
                    [
                        .contentType: "text/html; charset=utf-8",
                        .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
                        .cacheControl: "no-store", .contentLength: "748",
                    ]
                )
            }
            var r = try await c.post("K7QM-9XD2-HT4P", nonce: String(repeating: "a", count: 64), cookie: String(repeating: "a", count: 64))
            XCTAssertNotEqual(r.status, 200, "no code is taken without the console")
            XCTAssertFalse(r.text.contains("data-token"))
            r = try await c.call(.get, SignInPage.scriptPath)
            XCTAssertEqual(r.status, 404)
        }
    }

    // MARK: The form

    func testTheFormAndItsNonceCookie() async throws {
        try await withServer { c in
            let r = try await c.call(.get, "/signin")
            XCTAssertEqual(r.status, 200)
            XCTAssertTrue(r.text.contains(#"<label for="code">"#), r.text)
            XCTAssertTrue(r.text.contains(#"<input id="code" name="code" type="text" autocomplete="one-time-code""#), r.text)
            XCTAssertTrue(r.text.contains(#"<form method="post" action="/signin">"#), r.text)
            XCTAssertTrue(r.text.contains(#"<link rel="stylesheet" href="/console/static/console.css">"#), r.text)
            XCTAssertFalse(r.text.contains("<script"), "the form runs nothing")
            XCTAssertFalse(r.text.contains("<a "), "and links nowhere")
            let nonce = try XCTUnwrap(r.nonce)
            XCTAssertNotNil(nonce.wholeMatch(of: /[0-9a-f]{64}/), nonce)
            XCTAssertEqual(r.cookies, ["sf_signin=\(nonce); Path=/signin; Max-Age=600; HttpOnly; SameSite=Strict"])
            XCTAssertEqual(r.headers[HTTPField.Name("Cross-Origin-Opener-Policy")!], "unsafe-none", "the opener keeps its handle")
            XCTAssertEqual(r.headers[.contentSecurityPolicy], PageHeaders.contentSecurityPolicy)
            XCTAssertEqual(r.headers[HTTPField.Name("X-Frame-Options")!], "DENY")
            XCTAssertEqual(r.headers[.cacheControl], "no-store")
            XCTAssertEqual(r.headers[.contentType], "text/html; charset=utf-8")
            let again = try await c.call(.get, "/signin")
            XCTAssertNotEqual(again.nonce, nonce, "each form its own nonce")

            // No parameter is read: the same page, no redirect, nothing of the query on it.
            let plain = r.text.replacingOccurrences(of: nonce, with: "NONCE")
            for query in [
                "?redirect=https://evil.example.com", "?return=https://evil.example.com&origin=https://evil.example.com", "?code=AAAA-BBBB-CCCC",
            ] {
                let q = try await c.call(.get, "/signin" + query)
                XCTAssertEqual(q.status, 200)
                XCTAssertNil(q.headers[.location])
                XCTAssertEqual(q.text.replacingOccurrences(of: try XCTUnwrap(q.nonce), with: "NONCE"), plain, query)
            }
        }
        // Under TLS the cookie is Secure.
        let page = SignInPage(engine: engine, thread: EngineThread(), corsOrigins: [app], console: WebConsoleOptions(), secure: true)
        XCTAssertEqual(page.form().headers[values: .setCookie].first?.hasSuffix("; HttpOnly; SameSite=Strict; Secure"), true)
    }

    // MARK: Signing in

    func testAGoodCodeHandsTheTokenToTheListedOriginsOnly() async throws {
        let minted = try SignInCodes.mint(container: container, account: bob, engine: engine)
        let lines = Lines()
        let engine = engine!
        let box = NIOLockedValueBox("")
        let (container, api, bob, testAPI) = (container, api, bob!, accounts.api)
        try await withServer(corsOrigins: ["*", "https://APP.example.com:443/", "http://localhost:3000"], lines: lines) { c in
            let r = try await c.signIn(minted.code, extra: [.origin: "http://localhost", HTTPField.Name("Sec-Fetch-Site")!: "same-origin"])
            XCTAssertEqual(r.status, 200, r.text)
            XCTAssertEqual(r.headers[.cacheControl], "no-store")
            XCTAssertEqual(r.headers[HTTPField.Name("Cross-Origin-Opener-Policy")!], "unsafe-none")
            XCTAssertEqual(r.headers[.contentSecurityPolicy], PageHeaders.contentSecurityPolicy, "no inline script may run")
            XCTAssertEqual(r.cookies, ["sf_signin=; Path=/signin; Max-Age=0; HttpOnly; SameSite=Strict"], "the nonce is spent")
            XCTAssertTrue(r.text.contains(#"<main id="handback""#), r.text)
            XCTAssertEqual(
                r.attribute("data-origins"),
                "[&quot;https://app.example.com&quot;,&quot;http://localhost:3000&quot;]",
                "listed, normalised, never *"
            )
            let token = try XCTUnwrap(r.attribute("data-token"))
            XCTAssertGreaterThanOrEqual(token.count, 100)
            XCTAssertNotNil(token.wholeMatch(of: /[A-Za-z0-9_-]+/), "nothing in it to escape")
            XCTAssertEqual(r.text.components(separatedBy: "<script").count, 2, "one script")
            XCTAssertTrue(r.text.contains(#"<script src="/signin/handback.js"></script>"#), r.text)
            XCTAssertFalse(r.text.contains("<a "), "links nowhere")
            box.withLockedValue { $0 = token }

            // The token is Bob's in the code's container, and no other's.
            var (status, name) = try await c.caller(token: token, container: container, api: api)
            XCTAssertEqual(status, 200)
            XCTAssertEqual(name, bob.userRecordID)
            (status, name) = try await c.caller(token: token, container: "iCloud.test", api: testAPI)
            XCTAssertEqual(status, 401, "a token opens the container its code was made for")
            let stored = try XCTUnwrap(
                try engine.credentials.find(.webAuthToken, container: container, environment: .development, hash: Credentials.hash(token))
            )
            XCTAssertEqual(try XCTUnwrap(stored.expiresAt), Date().timeIntervalSince1970 + 1800, accuracy: 5)

            let script = try await c.call(.get, SignInPage.scriptPath)
            XCTAssertEqual(script.status, 200)
            XCTAssertEqual(script.headers[.contentType], "text/javascript; charset=utf-8")
            XCTAssertEqual(script.headers[HTTPField.Name("X-Content-Type-Options")!], "nosniff")
            XCTAssertTrue(script.text.contains("window.opener.postMessage({ ckSession: token }, origin)"), script.text)
            XCTAssertTrue(script.text.contains("no app window is waiting"), script.text)
            XCTAssertFalse(script.text.contains(#", "*")"#), "never to any origin")
            XCTAssertFalse(script.text.contains("innerHTML"))
            XCTAssertFalse(script.text.contains("location"), "goes nowhere")
        }
        // Neither the code nor the token is in the log.
        let log = lines.all
        XCTAssertTrue(log.contains("POST /signin 200"), log)
        XCTAssertFalse(log.contains(minted.code), log)
        XCTAssertFalse(log.contains(SignInCodes.normalised(minted.code)!), log)
        XCTAssertFalse(log.contains(box.withLockedValue { $0 }), log)
    }

    /// A code used, expired, mistyped or no code at all: one answer, the form again, 400.
    func testAUsedExpiredOrWrongCodeGetsOneAnswer() async throws {
        let used = try SignInCodes.mint(container: container, account: bob, engine: engine)
        _ = try XCTUnwrap(try SignInCodes.redeem(used.code, engine: engine))
        let expired = "EXP1-RED0-C0DE"
        try engine.credentials.add(
            .signInCode,
            container: container,
            hash: Credentials.hash(SignInCodes.normalised(expired)!),
            accountID: bob.id,
            expiresAt: Date().timeIntervalSince1970 - 1
        )
        let engine = engine!
        try await withServer { c in
            let nonce = try await c.nonce()
            var answers: [String: Answer] = [:]
            for (what, code) in [("used", used.code), ("expired", expired), ("wrong", "ABCD-EFGH-JKMN"), ("not a code", "hello <b>"), ("empty", "")] {
                let r = try await c.post(code, nonce: nonce, cookie: nonce)
                XCTAssertEqual(r.status, 400, what)
                XCTAssertTrue(r.text.contains(SignInPage.wrongCode), "\(what): \(r.text)")
                XCTAssertTrue(r.text.contains(#"name="code""#), "\(what): the form again")
                XCTAssertFalse(r.text.contains("data-token"))
                XCTAssertFalse(r.text.contains("hello"), "nothing typed is shown back")
                answers[what] = r
            }
            let first = try XCTUnwrap(answers["used"])
            for (what, r) in answers {
                XCTAssertEqual(r.text, first.text, "\(what) answers as a used code does")
                XCTAssertEqual(r.headers, first.headers, what)
            }
        }
        let left = try engine.store.read { try $0.fetchInteger("SELECT COUNT(*) FROM credential WHERE kind = 'signInCode'") }
        XCTAssertEqual(left, 0, "the expired code was deleted as it was tried")
    }

    /// A server that lists no app origin (`--cors-origin`, or only `*`) cannot hand a token back
    /// to anyone: it says so before it takes the code, which then still signs in elsewhere.
    func testWithNoListedOriginTheCodeIsRefusedAndKept() async throws {
        let minted = try SignInCodes.mint(container: container, account: bob, engine: engine)
        for origins in [[], ["*"]] {
            try await withServer(corsOrigins: origins) { c in
                let r = try await c.signIn(minted.code)
                XCTAssertEqual(r.status, 503, r.text)
                XCTAssertTrue(r.text.contains("--cors-origin"), r.text)
                XCTAssertTrue(r.text.contains("not used"), r.text)
                XCTAssertFalse(r.text.contains("data-token"))
            }
        }
        try await withServer { c in
            let r = try await c.signIn(minted.code)
            XCTAssertEqual(r.status, 200, r.text)
            XCTAssertNotNil(r.attribute("data-token"))
        }
    }

    /// A form that is not this page's changes nothing: another origin's, another site's, one
    /// without the nonce, or with a nonce its cookie does not carry.
    func testAForgedFormIsRefusedAndTakesNoCode() async throws {
        let minted = try SignInCodes.mint(container: container, account: bob, engine: engine)
        try await withServer { c in
            let nonce = try await c.nonce()
            let other = String(repeating: "0", count: 64)
            let forged: [(String, Answer)] = [
                ("foreign Origin", try await c.post(minted.code, nonce: nonce, cookie: nonce, extra: [.origin: "https://evil.example.com"])),
                ("Origin null", try await c.post(minted.code, nonce: nonce, cookie: nonce, extra: [.origin: "null"])),
                ("cross-site", try await c.post(minted.code, nonce: nonce, cookie: nonce, extra: [HTTPField.Name("Sec-Fetch-Site")!: "cross-site"])),
                ("same-site", try await c.post(minted.code, nonce: nonce, cookie: nonce, extra: [HTTPField.Name("Sec-Fetch-Site")!: "same-site"])),
                ("no nonce", try await c.post(minted.code, nonce: nil, cookie: nonce)),
                ("no cookie", try await c.post(minted.code, nonce: nonce, cookie: nil)),
                ("another nonce", try await c.post(minted.code, nonce: other, cookie: nonce)),
                ("empty nonces", try await c.post(minted.code, nonce: "", cookie: "")),
                ("not a form", try await c.post(minted.code, nonce: nonce, cookie: nonce, type: "text/plain")),
            ]
            for (what, r) in forged {
                XCTAssertEqual(r.status, 403, "\(what): \(r.text)")
                XCTAssertFalse(r.text.contains("data-token"), what)
                XCTAssertEqual(r.headers[HTTPField.Name("Cross-Origin-Opener-Policy")!], "unsafe-none", what)
            }
            let r = try await c.post(minted.code, nonce: nonce, cookie: nonce, extra: [.origin: "http://localhost"])
            XCTAssertEqual(r.status, 200, "the code was never taken: \(r.text)")
        }
    }

    /// Codes that do not sign in are counted by address: past 10 in a minute the page answers
    /// 429 before it reads a code, a good one included, which stays good.
    func testTooManyWrongCodesAreRefusedBeforeTheCodeIsRead() async throws {
        let minted = try SignInCodes.mint(container: container, account: bob, engine: engine)
        try await withServer { c in
            let nonce = try await c.nonce()
            for n in 0..<10 {
                let r = try await c.post("ABCD-EFGH-JK\(n % 10)M", nonce: nonce, cookie: nonce)
                XCTAssertEqual(r.status, 400, "try \(n)")
            }
            let r = try await c.post(minted.code, nonce: nonce, cookie: nonce)
            XCTAssertEqual(r.status, 429, r.text)
            XCTAssertEqual(r.headers[.retryAfter], "60")
        }
        try await withServer { c in
            let r = try await c.signIn(minted.code)
            XCTAssertEqual(r.status, 200, "the code was not read: \(r.text)")
        }
    }

    /// Codes still being checked count: many sent at once (each let in before its form was
    /// read) are held to the same ten a minute; a code that signs in is given back.
    func testWrongCodesSentAtOnceAreHeldToTheSameLimit() async throws {
        let attempts = SignInAttempts(perMinute: 3)
        XCTAssertEqual((0..<6).map { _ in attempts.take(from: "10.0.0.1") }, [true, true, true, false, false, false])
        attempts.giveBack(from: "10.0.0.1")
        XCTAssertTrue(attempts.take(from: "10.0.0.1"))
        XCTAssertFalse(attempts.take(from: "10.0.0.1"))
        let minted = try SignInCodes.mint(container: container, account: bob, engine: engine)
        try await withServer { c in
            var nonces: [String] = []
            for _ in 0..<30 { nonces.append(try await c.nonce()) }
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for (n, nonce) in nonces.enumerated() {
                    group.addTask { try await c.post("ABCD-EFGH-JK\(n % 10)M", nonce: nonce, cookie: nonce).status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            XCTAssertLessThanOrEqual(statuses.filter { $0 == 400 }.count, 10, "\(statuses)")
            XCTAssertEqual(statuses.filter { $0 == 429 }.count, 30 - statuses.filter { $0 == 400 }.count, "\(statuses)")
        }
        // Forged forms are given back: they take no try from a person who then types a code.
        try await withServer { c in
            for _ in 0..<12 {
                let r = try await c.post("ABCD-EFGH-JK1M", nonce: nil, cookie: nil)
                XCTAssertEqual(r.status, 403)
            }
            let r = try await c.signIn(minted.code)
            XCTAssertEqual(r.status, 200, r.text)
        }
    }

    /// A nonce cookie planted under a longer path (a sibling site, another port of this host)
    /// is sent before the page's own: it hides it not.
    func testAPlantedNonceCookieHidesNotThePagesOwn() async throws {
        let minted = try SignInCodes.mint(container: container, account: bob, engine: engine)
        try await withServer { c in
            let nonce = try await c.nonce()
            let planted = String(repeating: "e", count: 64)
            let r = try await c.post(minted.code, nonce: nonce, cookie: "\(planted); sf_signin=\(nonce)")
            XCTAssertEqual(r.status, 200, r.text)
            let alone = try await c.post(minted.code, nonce: nonce, cookie: planted)
            XCTAssertEqual(alone.status, 403)
        }
    }

    /// The sign-in pages are no CloudKit route: no CORS header, whatever `--cors-origin` says,
    /// preflight included (a page of another origin never reads them).
    func testNoCrossOriginHeadersOnTheSignInPages() async throws {
        let minted = try SignInCodes.mint(container: container, account: bob, engine: engine)
        try await withServer(corsOrigins: ["*", app]) { c in
            let from: HTTPFields = [.origin: "https://app.example.com"]
            var answers = [
                try await c.call(.get, "/signin", headers: from),
                try await c.call(.get, SignInPage.scriptPath, headers: from),
                try await c.call(.options, "/signin", headers: [.origin: "https://app.example.com", .accessControlRequestMethod: "POST"]),
                try await c.call(.options, SignInPage.scriptPath, headers: [.origin: "https://app.example.com", .accessControlRequestMethod: "GET"]),
                try await c.post(minted.code, nonce: "a", cookie: "a", extra: from),
            ]
            answers.append(try await c.signIn(minted.code))
            XCTAssertEqual(answers.last?.status, 200)
            for (n, r) in answers.enumerated() {
                for field in r.headers where field.name.canonicalName.lowercased().hasPrefix("access-control-") {
                    XCTFail("answer \(n) has \(field.name): \(field.value)")
                }
            }
        }
    }
}
