import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ShareFlow

/// The console in a browser (SPEC §21): `shareflow serve --console` serves it under
/// `/console`, behind an admin token (`shareflow tokens admin`, the same as §15's fault
/// route). Server-rendered pages with a little plain JavaScript; every action an engine call
/// made as the account the operator acts as, so rules, policies and events apply as they do
/// to that account's own app.
///
/// The door: a page without a session is the sign-in form (a GET) or 403 (a POST); every
/// POST passes `RequestForgery` and carries the session's token; the console's cookies are
/// scoped to `/console` and its paths are outside the CloudKit routes' CORS.
///
/// ```sh
/// shareflow tokens admin --store app.sqlite      # prints the token to sign in with
/// shareflow serve --store app.sqlite --console   # then open http://127.0.0.1:8080/console
/// ```
struct WebConsole: Sendable {
    let engine: Engine
    let thread: EngineThread
    let signal: ChangeSignal
    let sessions: ConsoleSessions
    /// Whether the server speaks https: its cookies are then `Secure`.
    let secure: Bool

    /// The session's cookie and the sign-in form's nonce cookie.
    static let sessionCookie = "sf_console"
    static let loginCookie = "sf_console_login"

    init(engine: Engine, thread: EngineThread, signal: ChangeSignal, options: WebConsoleOptions, secure: Bool) {
        self.engine = engine
        self.thread = thread
        self.signal = signal
        self.sessions = ConsoleSessions(options: options)
        self.secure = secure
    }

    /// The console's routes, as `shareflow serve --console --routes` lists them.
    static let routes: [String] = {
        let gets: [ConsoleLink.Path] = [
            .home, .accounts, .account, .database, .zone, .publicRecords, .record, .share, .link, .decisions, .feed, .feedEvents, .faults,
            .stylesheet, .script,
        ]
        let posts: [ConsoleLink.Path] = [
            .session, .signOut, .shareCreate, .shareInvite, .sharePermission, .shareRemove, .shareRequesters, .shareUnblock, .shareSettings,
            .linkAccept, .linkRequest, .faultsArm, .faultsRemove, .faultsClear,
        ]
        return gets.map { "GET \($0.rawValue)" } + posts.map { "POST \($0.rawValue)" }
    }()

    func register(on router: Router<ServerRequestContext>) {
        router.get(RouterPath(ConsoleLink.Path.stylesheet.rawValue)) { _, _ in ConsoleAssets.stylesheet }
        router.get(RouterPath(ConsoleLink.Path.script.rawValue)) { _, _ in ConsoleAssets.script }
        router.get(RouterPath(ConsoleLink.Path.home.rawValue)) { request, context in await home(request, context) }
        router.post(RouterPath(ConsoleLink.Path.session.rawValue)) { request, context in await signIn(request, context) }
        action(.signOut, on: router) { call in
            sessions.end(call.sessionKey)
            return .signedOut
        }
        registerBrowsing(on: router)
        registerSharing(on: router)
        registerShareLinks(on: router)
        registerDecisions(on: router)
        registerFaults(on: router)
        registerFeed(on: router)
    }

    // MARK: - The door

    /// The session a request's cookie names, if it is open (and its admin token still stands).
    func session(of request: Request) async -> (key: String, session: ConsoleSessions.Session)? {
        // Every cookie of the name, not the first: a browser sends a cookie of a longer path
        // first, so one planted by a sibling site or another port of this host (cookies know no
        // port) under `/console/share` would otherwise hide the real one.
        guard let found = WebConsole.cookies(WebConsole.sessionCookie, in: request).lazy.compactMap({ self.sessions.find($0) }).first
        else { return nil }
        // A revocation anywhere moves the epoch: the admin token is looked up again, once.
        let epoch = signal.credentialsEpoch
        if found.session.epoch != epoch {
            let engine = self.engine
            let hash = found.session.adminTokenHash
            let stands =
                (try? await thread.run {
                    try engine.credentials.find(.adminToken, container: Credentials.adminScope, environment: .development, hash: hash) != nil
                }) ?? false
            guard stands else {
                sessions.endAll(adminTokenHash: hash)
                return nil
            }
            sessions.confirm(found.key, epoch: epoch)
        }
        return found
    }

    /// A cookie's value from the request's `Cookie` headers (the first of the name).
    static func cookie(_ name: String, in request: Request) -> String? {
        cookies(name, in: request).first
    }

    /// Every value the request's `Cookie` headers give the name, in their order (at most 16:
    /// a browser sends one per path and domain that matches).
    static func cookies(_ name: String, in request: Request) -> [String] {
        var values: [String] = []
        for header in request.headers[values: .cookie] {
            for part in header.split(separator: ";") {
                let pair = part.split(separator: "=", maxSplits: 1)
                if pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces) == name {
                    values.append(pair[1].trimmingCharacters(in: .whitespaces))
                    if values.count == 16 { return values }
                }
            }
        }
        return values
    }

    /// A `Set-Cookie` value scoped to the console.
    func cookie(_ name: String, _ value: String, maxAge: Int? = nil) -> String {
        var text = "\(name)=\(value); Path=/console; HttpOnly; SameSite=Strict"
        if let maxAge { text += "; Max-Age=\(maxAge)" }
        if WebConsole.secureCookies(tls: secure, publicURL: engine.options.publicURL) { text += "; Secure" }
        return text
    }

    /// Whether the console's cookies are `Secure`: under TLS, and behind a proxy that ends TLS
    /// for it (`--public-url https://…`), where the server itself speaks http but browsers reach
    /// it over https only; else a plain-http request to the same host (a link, a redirect, a
    /// network attacker's injection) would carry the session cookie in the clear.
    /// (The engine's placeholder URL, before `serve` names its own, says nothing.)
    static func secureCookies(tls: Bool, publicURL: String) -> Bool {
        tls || (publicURL != Engine.defaultPublicURL && publicURL.lowercased().hasPrefix("https://"))
    }

    /// This server's origins, as a POST's `Origin` must name one.
    func ownOrigins(of request: Request) -> [String] {
        RequestForgery.ownOrigins(of: request, secure: secure, publicURL: engine.options.publicURL)
    }

    /// `GET /console`: signed in, the accounts; otherwise the sign-in form with a fresh nonce.
    private func home(_ request: Request, _ context: ServerRequestContext) async -> Response {
        if await session(of: request) != nil { return PageHeaders.seeOther(ConsoleLink(.accounts)) }
        return signInForm(message: nil, status: .ok)
    }

    private func signInForm(message: String?, status: HTTPResponse.Status) -> Response {
        let nonce = ConsoleSessions.randomHex()
        let body: HTML = """
            <h1>Sign in to the ShareFlow console</h1>
            \(message.map { m -> HTML in "<p class=\"flash bad\" role=\"alert\">\(m)</p>" } ?? .empty)
            <form method="post" action="\(ConsoleLink(.session))" class="signin">
            <input type="hidden" name="nonce" value="\(nonce)">
            <label for="token">Admin token</label>
            <input id="token" name="token" type="password" autocomplete="off" required>
            <p class="hint">Made by <code>shareflow tokens admin --store STORE</code> on the server.</p>
            <button type="submit">Sign in</button>
            </form>
            """
        return PageHeaders.page(
            ConsoleLayout.document(title: "Sign in", body: body),
            status: status,
            cookies: [cookie(WebConsole.loginCookie, nonce, maxAge: 600)]
        )
    }

    /// `POST /console/session`: an admin token and the form's nonce make a new session (never
    /// one the browser named: no fixation).
    private func signIn(_ request: Request, _ context: ServerRequestContext) async -> Response {
        let address = context.remoteAddress?.ipAddress ?? "unknown"
        if let refusal = RequestForgery.refusal(of: request, ownOrigins: ownOrigins(of: request)) {
            return ConsoleLayout.refused(refusal)
        }
        guard sessions.signIns.take(from: address) else {
            return signInForm(message: "Too many failed sign-ins from this address; wait a minute.", status: .tooManyRequests)
        }
        // Counted before the form is read, given back unless it was a wrong token.
        var wrongToken = false
        defer { if !wrongToken { sessions.signIns.giveBack(from: address) } }
        var request = request
        guard let body = try? await request.collectBody(upTo: FormFields.maxBytes),
            let form = try? FormFields(decoding: String(buffer: body))
        else {
            return ConsoleLayout.refused("the form could not be read")
        }
        let nonce = form["nonce"] ?? ""
        guard WebConsole.cookies(WebConsole.loginCookie, in: request).contains(where: { ConsoleSessions.same($0, nonce) }) else {
            return ConsoleLayout.refused("the sign-in form expired or came from elsewhere; open the console again")
        }
        let token = (form["token"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        var found = false
        if token.utf8.count == 64, token.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) {
            let engine = self.engine
            let hash = Credentials.hash(token)
            found =
                (try? await thread.run {
                    try engine.credentials.find(.adminToken, container: Credentials.adminScope, environment: .development, hash: hash) != nil
                }) ?? false
            if found {
                let epoch = signal.credentialsEpoch
                let session = sessions.open(adminTokenHash: hash, epoch: epoch)
                context.notes.caller = "console"
                return PageHeaders.seeOther(
                    ConsoleLink(.accounts),
                    cookies: [cookie(WebConsole.sessionCookie, session), cookie(WebConsole.loginCookie, "", maxAge: 0)]
                )
            }
        }
        wrongToken = true
        return signInForm(message: "That is not an admin token of this server.", status: .unauthorized)
    }
}

/// One request to the console from a signed-in browser: its query, its form (a POST's, checked
/// by `RequestForgery` and the session's token), and its session.
struct ConsoleCall: Sendable {
    let request: Request
    let sessionKey: String
    /// The session's form token: every form a page renders carries it.
    let csrf: String
    let query: FormFields
    let form: FormFields

    /// A parameter from the form (a POST) or the query (a GET).
    func value(_ name: String) -> String? { form[name] ?? query[name] }

    /// A parameter with surrounding white space removed; nil when absent or blank.
    func text(_ name: String) -> String? { form.text(name) ?? query.text(name) }

    /// A parameter that must be there: a 400 naming it otherwise.
    func required(_ name: String) throws -> String {
        guard let v = value(name), !v.isEmpty else { throw ConsoleProblem("\(name) is required") }
        return v
    }

    /// The hidden field every form carries.
    var csrfField: HTML { "<input type=\"hidden\" name=\"csrf\" value=\"\(csrf)\">" }
}

/// A request the console cannot act on: a 400 page (or a refused action's message) in these words.
struct ConsoleProblem: Error, Sendable {
    let message: String
    init(_ message: String) { self.message = message }
}

/// What an action did: its message for the next page, and where the browser goes.
struct ActionOutcome: Sendable {
    let message: String
    let next: ConsoleLink?

    static let signedOut = ActionOutcome("", next: ConsoleLink(.home))

    init(_ message: String, next: ConsoleLink? = nil) {
        self.message = message
        self.next = next
    }
}

extension WebConsole {
    /// Registers a page: a GET that only reads, rendered in the console's layout. Without a
    /// session it is the sign-in form; an error is a page that says what went wrong (an
    /// unknown one by incident only: the operator's words stay in the log).
    func page(
        _ path: ConsoleLink.Path,
        on router: Router<ServerRequestContext>,
        _ body: @escaping @Sendable (ConsoleCall) async throws -> ConsolePage
    ) {
        router.get(RouterPath(path.rawValue)) { request, context -> Response in
            guard let (key, session) = await self.session(of: request) else { return PageHeaders.seeOther(ConsoleLink(.home)) }
            context.notes.caller = "console"
            let query: FormFields
            do { query = try FormFields(decoding: request.uri.query ?? "") } catch let p as FormFields.Problem {
                return ConsoleLayout.errorPage(status: .badRequest, p.message, csrf: session.csrf)
            } catch { return ConsoleLayout.errorPage(status: .badRequest, "the query could not be read", csrf: session.csrf) }
            let call = ConsoleCall(request: request, sessionKey: key, csrf: session.csrf, query: query, form: FormFields())
            do {
                var page = try await body(call)
                // The banner names the account as a person knows it (its name and address).
                if let who = page.acting {
                    let engine = self.engine
                    page.acting = (try? await thread.read { WebConsole.label(try ConsolePlace.account(who, engine: engine)) }) ?? who
                }
                return PageHeaders.page(ConsoleLayout.render(page, call: call, flash: sessions.takeFlash(key)))
            } catch {
                let (status, message) = ConsoleLayout.describe(error)
                return ConsoleLayout.errorPage(status: status, message, csrf: session.csrf)
            }
        }
    }

    /// Registers an action: a POST that passes `RequestForgery` and carries the session's
    /// token, then changes something and sends the browser on (303) with a message. A refusal
    /// (a rule, a policy) is that message, with the policy's decision when one denied it.
    func action(
        _ path: ConsoleLink.Path,
        on router: Router<ServerRequestContext>,
        back: @escaping @Sendable (ConsoleCall) -> ConsoleLink = { _ in ConsoleLink(.accounts) },
        _ body: @escaping @Sendable (ConsoleCall) async throws -> ActionOutcome
    ) {
        router.post(RouterPath(path.rawValue)) { request, context -> Response in
            guard let (key, session) = await self.session(of: request) else {
                return ConsoleLayout.refused("no console session: sign in again")
            }
            if let refusal = RequestForgery.refusal(of: request, ownOrigins: ownOrigins(of: request)) {
                return ConsoleLayout.refused(refusal)
            }
            var request = request
            let form: FormFields
            do {
                let bytes = try await request.collectBody(upTo: FormFields.maxBytes)
                form = try FormFields(decoding: String(buffer: bytes))
            } catch {
                return ConsoleLayout.refused("the form could not be read (at most \(FormFields.maxBytes / 1024) KiB of URL-encoded fields)")
            }
            guard ConsoleSessions.same(form["csrf"] ?? "", session.csrf) else {
                return ConsoleLayout.refused("the form's token is not this session's: reload the page and try again")
            }
            context.notes.caller = "console"
            let query = (try? FormFields(decoding: request.uri.query ?? "")) ?? FormFields()
            let call = ConsoleCall(request: request, sessionKey: key, csrf: session.csrf, query: query, form: form)
            do {
                let outcome = try await body(call)
                if path == .signOut {
                    return PageHeaders.seeOther(ConsoleLink(.home), cookies: [cookie(WebConsole.sessionCookie, "", maxAge: 0)])
                }
                sessions.flash(key, .init(ok: true, text: outcome.message))
                return PageHeaders.seeOther(outcome.next ?? back(call))
            } catch {
                let (_, message) = ConsoleLayout.describe(error)
                let denial = await self.denial(for: error, as: call.value("as"))
                sessions.flash(key, .init(ok: false, text: message, denial: denial))
                return PageHeaders.seeOther(back(call))
            }
        }
    }

    /// The decision behind a policy's refusal, read from the decision log: the acting
    /// account's newest denial.
    func denial(for error: any Error, as who: String?) async -> ConsoleSessions.Denial? {
        guard let e = error as? ShareFlowError, e.message.contains("denied by policy") || (e.clientMessage ?? "").contains("denied by policy")
        else { return nil }
        let engine = self.engine
        return try? await thread.run { () -> ConsoleSessions.Denial? in
            let caller = who.flatMap { try? ConsolePlace.account($0, engine: engine).userRecordID }
            guard let d = engine.policies.decisions(DecisionFilter(limit: 1, denied: true, caller: caller)).last,
                let deciding = d.consulted.last(where: { $0.verdict != "allow" })
            else { return nil }
            return ConsoleSessions.Denial(
                decision: d.id,
                point: d.point,
                policy: deciding.policy,
                reason: deciding.reason ?? "",
                location: deciding.location ?? ""
            )
        }
    }
}
