import HTTPTypes
import Hummingbird
import NIOCore

/// The headers every console page and the sign-in pages are sent with (SPEC §21 C4): a strict
/// Content-Security-Policy (scripts and styles only from this server's own files, no inline
/// script, no style attribute, forms post only here, never framed), no sniffing,
/// never cached, no URL sent to another site. Even if escaping ever failed, an injected `<script>` would not run and an
/// injected form could not post elsewhere.
enum PageHeaders {
    /// What the console's pages may load.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    /// Whether a page's opener keeps its handle on it: the console's pages cut it
    /// (`same-origin`); the sign-in page must keep it, to hand the token to the app that opened it.
    enum Opener: String {
        case cut = "same-origin"
        case kept = "unsafe-none"
    }

    /// The headers of an HTML page.
    static func html(opener: Opener = .cut) -> HTTPFields {
        var headers = common(contentType: "text/html; charset=utf-8")
        headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] = opener.rawValue
        return headers
    }

    /// The headers of one of the console's own files (`console.css`, `console.js`).
    static func asset(contentType: String) -> HTTPFields {
        var headers = common(contentType: contentType)
        // The files never change while the server runs, and hold nothing secret.
        headers[.cacheControl] = "private, max-age=300"
        return headers
    }

    private static func common(contentType: String) -> HTTPFields {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        // Not `no-referrer`: under it a browser sends `Origin: null` with a form's POST, and
        // the console's own forms would fail `RequestForgery`'s origin check. `same-origin`
        // keeps the console's URLs (which name accounts) from every other site all the same.
        headers[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        headers[HTTPField.Name("Cross-Origin-Resource-Policy")!] = "same-origin"
        headers[.cacheControl] = "no-store"
        return headers
    }

    /// An HTML page with `status`.
    static func page(_ html: HTML, status: HTTPResponse.Status = .ok, opener: Opener = .cut, cookies: [String] = []) -> Response {
        var headers = PageHeaders.html(opener: opener)
        for cookie in cookies { headers.append(HTTPField(name: .setCookie, value: cookie)) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html.markup)))
    }

    /// A 303 to `location` (a console path: never a value a request gave).
    static func seeOther(_ location: ConsoleLink, cookies: [String] = []) -> Response {
        var headers = PageHeaders.html()
        headers[.location] = location.href
        for cookie in cookies { headers.append(HTTPField(name: .setCookie, value: cookie)) }
        return Response(status: .seeOther, headers: headers)
    }
}
