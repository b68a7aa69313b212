import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Where a 421's `redirectURL` leads (SPEC §13 wave 4): `<public URL>/signin`. CloudKit JS
/// opens it in a popup when a request needs a user. Until the console can sign people in
/// (§21), the page tells the person who sees it how an operator makes them a token: a page
/// that pretends to sign in and hands back nothing would leave the app waiting.
///
/// The page is the same for everyone, takes no input and runs no script: nothing on it comes
/// from the request.
enum SignInPage {
    /// The sign-in page's URL under a public URL (`http://host:port` → `http://host:port/signin`).
    static func url(publicURL: String) -> String {
        var base = Substring(publicURL)
        while base.hasSuffix("/") { base = base.dropLast() }
        return base + "/signin"
    }

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
