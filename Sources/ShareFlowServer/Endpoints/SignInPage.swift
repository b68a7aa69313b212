import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import ShareFlow

/// Where a 421's `redirectURL` leads (SPEC §13 wave 4): `<public URL>/signin`. CloudKit JS
/// opens it in a popup when a request needs a user.
///
/// Without the console (`serve` without `--console`) the page tells the person who sees it how
/// an operator makes them a token: a page that pretended to sign in and handed back nothing
/// would leave the app waiting. It is the same for everyone, takes no input and runs no
/// script: nothing on it comes from the request.
///
/// With the console (SPEC §21) it signs people in with a one-time code (`shareflow tokens
/// signin`, `SignInCodes`): `GET` is a form; `POST` checks that the form is this page's (the
/// `RequestForgery` checks and a double-submit nonce), trades the code for a web auth token of
/// the code's account and container, and answers a page whose script (`handback.js`) posts
/// `{ckSession: token}` to the window that opened it, as CloudKit JS's sign-in waits for
/// (WEB-SERVICES.md §4), addressed to each app origin the server lists (`--cors-origin`,
/// never `*`): the browser delivers it only to an opener of a listed origin. The page reads no
/// redirect, return or origin parameter and links nowhere, so it redirects no one anywhere.
struct SignInPage: Sendable {
    let engine: Engine
    let thread: EngineThread
    /// The server's `--cors-origin`s: those but `*` are where the token may be handed back.
    let corsOrigins: [String]
    /// Whether the console is on: without it only today's page is served.
    let console: Bool
    /// Whether the server speaks TLS (the nonce cookie is then `Secure`).
    let secure: Bool
    /// Failed code sign-ins by address, this minute.
    let attempts: SignInAttempts

    /// `console`: the server's console options (nil: off); its `failedSignInsPerMinute` bounds
    /// the codes an address may get wrong.
    init(engine: Engine, thread: EngineThread, corsOrigins: [String], console: WebConsoleOptions?, secure: Bool) {
        self.engine = engine
        self.thread = thread
        self.corsOrigins = corsOrigins
        self.console = console != nil
        self.secure = secure
        self.attempts = SignInAttempts(perMinute: console?.failedSignInsPerMinute ?? 10)
    }

    /// The sign-in page's URL under a public URL (`http://host:port` → `http://host:port/signin`).
    static func url(publicURL: String) -> String {
        var base = Substring(publicURL)
        while base.hasSuffix("/") { base = base.dropLast() }
        return base + "/signin"
    }

    /// The hand-back script's path.
    static let scriptPath = "/signin/handback.js"
    /// The nonce cookie's name.
    static let cookieName = "sf_signin"

    /// `GET /signin`; with the console, also `POST /signin` and the hand-back script.
    func register(on router: Router<ServerRequestContext>) {
        guard console else {
            router.get("/signin", use: SignInPage.answer)
            return
        }
        router.get("/signin") { _, _ in form() }
        router.post("/signin") { request, context in try await signIn(request, context: context) }
        router.get(RouterPath(SignInPage.scriptPath)) { _, _ in
            Response(
                status: .ok,
                headers: PageHeaders.asset(contentType: "text/javascript; charset=utf-8"),
                body: .init(byteBuffer: ByteBuffer(string: SignInPage.handbackScript))
            )
        }
    }

    /// The app origins a token may be handed back to: `--cors-origin`'s, but `*`.
    var handBackOrigins: [String] {
        var seen: [String] = []
        for origin in corsOrigins where origin != "*" {
            if let o = CrossOriginMiddleware.normalized(origin), !seen.contains(o) { seen.append(o) }
        }
        return seen
    }

    // MARK: The code form

    /// The form, with a fresh nonce (or `nonce`, already checked, when the form comes back).
    func form(status: HTTPResponse.Status = .ok, message: String? = nil, nonce: String = ConsoleSessions.randomHex()) -> Response {
        let alert: HTML = message.map { "<p class=\"error\" role=\"alert\">\($0)</p>\n" } ?? .empty
        let page: HTML = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Sign in to ShareFlow</title><link rel="stylesheet" href="/console/static/console.css"></head>
            <body><main class="signin"><h1>Sign in to ShareFlow</h1>
            <p>Type the one-time sign-in code the person who runs this server gave you. A code signs in once, to the app it was made for, and lasts a few minutes.</p>
            \(alert)<form method="post" action="/signin">
            <label for="code">Sign-in code</label>
            <input id="code" name="code" type="text" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" maxlength="32" required autofocus>
            <input type="hidden" name="nonce" value="\(nonce)">
            <button type="submit">Sign in</button>
            </form></main></body></html>
            """
        return PageHeaders.page(page, status: status, opener: .kept, cookies: [cookie(nonce)])
    }

    /// The nonce cookie: this path only, never sent by another site's request, gone in 10 minutes.
    private func cookie(_ nonce: String) -> String {
        "\(SignInPage.cookieName)=\(nonce); Path=/signin; Max-Age=600; HttpOnly; SameSite=Strict" + secureAttribute
    }

    /// `; Secure` under TLS or behind a proxy that ends it (`--public-url https://…`).
    private var secureAttribute: String {
        WebConsole.secureCookies(tls: secure, publicURL: engine.options.publicURL) ? "; Secure" : ""
    }

    /// A page that only says why (a refused form, a server that cannot hand a token back).
    private func notice(_ status: HTTPResponse.Status, _ title: String, _ text: String) -> Response {
        let page: HTML = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title)</title><link rel="stylesheet" href="/console/static/console.css"></head>
            <body><main class="signin"><h1>\(title)</h1>
            <p role="alert">\(text)</p></main></body></html>
            """
        return PageHeaders.page(page, status: status, opener: .kept)
    }

    /// The one answer to a code that does not sign in, whatever the reason.
    static let wrongCode = "That code does not sign you in: it is mistyped, already used or expired. Check it, or ask for a new one."

    // MARK: Signing in

    private func signIn(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let address = context.remoteAddress?.ipAddress ?? "unknown"
        guard attempts.take(from: address) else {
            var response = notice(
                .tooManyRequests,
                "Too many tries",
                "Too many codes that did not sign in came from here. Wait a minute, then try again."
            )
            response.headers[.retryAfter] = "60"
            return response
        }
        // Counted before the form is read (a burst sent at once is held to the same number),
        // given back unless it was a wrong code.
        var wrongCode = false
        defer { if !wrongCode { attempts.giveBack(from: address) } }
        let own = RequestForgery.ownOrigins(of: request, secure: secure, publicURL: engine.options.publicURL)
        if RequestForgery.refusal(of: request, ownOrigins: own) != nil {
            return forged()
        }
        var request = request
        guard let body = try? await request.collectBody(upTo: FormFields.maxBytes),
            let fields = try? FormFields(decoding: String(decoding: body.readableBytesView, as: UTF8.self))
        else {
            return notice(.badRequest, "Sign-in failed", "The form could not be read. Reload the sign-in page and try again.")
        }
        // Any cookie of the name: one planted under a longer path (a sibling site, another port
        // of this host) is sent first and would otherwise hide the page's own.
        guard let nonce = fields["nonce"], nonce.utf8.count == 64,
            WebConsole.cookies(SignInPage.cookieName, in: request).contains(where: { ConsoleSessions.same(nonce, $0) })
        else {
            return forged()
        }
        // Before the code is taken: a code spent where no app can be handed the token is lost.
        let origins = handBackOrigins
        guard !origins.isEmpty else {
            return notice(
                .serviceUnavailable,
                "Sign-in is not set up",
                "This server lists no app origin to hand a sign-in back to (the operator starts it with --cors-origin https://app.example.com). Your code was not used."
            )
        }
        let typed = fields["code"] ?? ""
        let engine = self.engine
        let signedIn: SignInCodes.SignedIn?
        do {
            signedIn = try await thread.run { try SignInCodes.redeem(typed, engine: engine) }
        } catch {
            return notice(.serviceUnavailable, "Sign-in failed", "The server could not sign you in just now. Try again in a moment.")
        }
        guard let signedIn else {
            wrongCode = true
            return form(status: .badRequest, message: SignInPage.wrongCode, nonce: nonce)
        }
        context.notes.caller = signedIn.account.userRecordID
        return handBack(token: signedIn.token, origins: origins)
    }

    /// A form that is not this page's: another site's, or one without its nonce.
    private func forged() -> Response {
        notice(
            .forbidden,
            "Sign-in refused",
            "This form did not come from this server's sign-in page. Open the sign-in page again and type your code there."
        )
    }

    /// The page that hands the token to the opener: data only, the script is `handback.js`.
    private func handBack(token: String, origins: [String]) -> Response {
        let list =
            (try? JSONSerialization.data(withJSONObject: origins, options: [.withoutEscapingSlashes])).map { String(decoding: $0, as: UTF8.self) }
            ?? "[]"
        let page: HTML = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Signing in to ShareFlow</title><link rel="stylesheet" href="/console/static/console.css"></head>
            <body><main id="handback" class="signin" data-origins="\(list)" data-token="\(token)"><h1>Sign in to ShareFlow</h1>
            <p id="status" role="status">Handing your sign-in to the app…</p>
            <noscript><p>This page needs JavaScript to hand your sign-in to the app.</p></noscript></main>
            <script src="\(SignInPage.scriptPath)"></script></body></html>
            """
        // The nonce has been used: the browser forgets it.
        return PageHeaders.page(
            page,
            opener: .kept,
            cookies: ["\(SignInPage.cookieName)=; Path=/signin; Max-Age=0; HttpOnly; SameSite=Strict" + secureAttribute]
        )
    }

    /// Hands the token to the window that opened this one, addressed to each listed origin
    /// (never `*`: the browser delivers only to an opener of that origin), then closes.
    /// Without an opener it hands nothing to anyone.
    static let handbackScript = """
        "use strict";
        (function () {
          var main = document.getElementById("handback");
          var status = document.getElementById("status");
          if (!main || !status) { return; }
          var token = main.getAttribute("data-token");
          var origins = JSON.parse(main.getAttribute("data-origins") || "[]");
          main.removeAttribute("data-token");
          if (!window.opener || !token) {
            status.textContent = "Signed in, but no app window is waiting; close this window.";
            return;
          }
          origins.forEach(function (origin) {
            if (origin === "*") { return; }
            try { window.opener.postMessage({ ckSession: token }, origin); } catch (e) { /* not an origin: skipped */ }
          });
          status.textContent = "Signed in. You may close this window.";
          window.close();
        })();

        """

    // MARK: Without the console

    @Sendable static func answer(_ request: Request, context: ServerRequestContext) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        // No script, no frame, no form: the page only informs.
        headers[.contentSecurityPolicy] = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
        headers[.cacheControl] = "no-store"
        let page = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in to ShareFlow</title></head>
            <body><main><h1>Sign in to ShareFlow</h1>
            <p>This server does not sign people in in the browser yet. The app you came from asked for
            a web auth token: the person who runs this server makes you one.</p>
            <p>On the server, the operator runs:</p>
            <pre>shareflow tokens user --store STORE --container CONTAINER --as you@example.com</pre>
            <p>and gives you the token it prints. The app passes it as <code>ckWebAuthToken</code>
            (CloudKit JS: its <code>authTokenStore</code>, or the cookie named after the container).
            A token lasts 30 minutes unless the operator gives <code>--ttl SECONDS</code>.</p>
            <p>You may close this window.</p></main></body></html>
            """
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page)))
    }
}
