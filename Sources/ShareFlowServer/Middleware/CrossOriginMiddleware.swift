import Foundation
import HTTPTypes
import Hummingbird

/// CORS for the CloudKit routes (`/database/1/…`; SPEC §13 wave 4, §19 A5), so a web app on
/// another origin reads the answers: `serve --cors-origin ORIGIN`, repeatable, or `*` for
/// development. Without an origin configured nothing is added, and a request from an origin
/// not listed gets no CORS headers (the browser then keeps the answer from the page).
///
/// A preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered here, 204, before
/// any credential is read: it carries none. Every other answer, errors included, names the
/// origin, exposes `X-Apple-CloudKit-Web-Auth-Token` (where a rotated token would travel) and
/// says it varies by `Origin`. No cookies are involved (CloudKit JS sends none across
/// origins), so credentials are never allowed.
///
/// ```swift
/// router.add(middleware: CrossOriginMiddleware(origins: ["https://app.example.com"]))
/// ```
struct CrossOriginMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    /// The origins allowed, as `scheme://host[:port]` in lower case, or `*`.
    let origins: Set<String>

    init(origins: [String]) {
        self.origins = Set(origins.map { $0 == "*" ? $0 : Self.normalized($0) ?? $0 })
    }

    /// The paths that get CORS: the CloudKit routes (the admin routes and pages never do).
    static let prefixes = ["/database/1/", "/assets/1/", "/device/1/", "/webcourier/1/"]

    /// The request headers a CloudKit client sends across origins.
    static let allowedHeaders = [
        "content-type", "x-apple-cloudkit-request-keyid", "x-apple-cloudkit-request-iso8601date",
        "x-apple-cloudkit-request-signaturev1", "x-apple-cloudkit-web-auth-token", "last-event-id",
        // An asset's download by parts (SPEC §19 A5).
        "range",
    ]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard !origins.isEmpty, Self.prefixes.contains(where: { request.uri.path.hasPrefix($0) }) else { return try await next(request, context) }
        guard let origin = request.headers[.origin], let allowed = allow(origin) else {
            // The answer depends on the origin, whichever it was: a shared cache must not hand
            // an allowed origin's answer to another, nor this one to an allowed origin.
            var response = try await next(request, context)
            response.headers[.vary] = "Origin"
            return response
        }
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            var headers = HTTPFields()
            headers[.accessControlAllowOrigin] = allowed
            headers[.accessControlAllowMethods] = "GET, HEAD, POST, OPTIONS"
            headers[.accessControlAllowHeaders] = Self.allowedHeaders.joined(separator: ", ")
            headers[.accessControlMaxAge] = "600"
            headers[.vary] = "Origin, Access-Control-Request-Headers"
            return Response(status: .noContent, headers: headers)
        }
        var response = try await next(request, context)
        response.headers[.accessControlAllowOrigin] = allowed
        response.headers[.accessControlExposeHeaders] = "X-Apple-CloudKit-Web-Auth-Token, Retry-After, Content-Range, Accept-Ranges"
        response.headers[.vary] = "Origin"
        return response
    }

    /// What `Access-Control-Allow-Origin` says to `origin`: `*` when any is allowed, the
    /// origin itself when listed, nil otherwise.
    private func allow(_ origin: String) -> String? {
        if origins.contains("*") { return "*" }
        guard let normal = Self.normalized(origin), origins.contains(normal) else { return nil }
        return normal
    }

    /// An origin as `scheme://host[:port]`, lower case, without a default port; nil for
    /// anything that is no http or https origin (a path, a query, credentials, `null`).
    static func normalized(_ text: String) -> String? {
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = url.host?.lowercased(), !host.isEmpty, url.path.isEmpty || url.path == "/", url.query == nil, url.fragment == nil,
            url.user == nil, url.password == nil
        else { return nil }
        let port = url.port.flatMap { (scheme == "http" && $0 == 80) || (scheme == "https" && $0 == 443) ? nil : $0 }
        return scheme + "://" + host + (port.map { ":\($0)" } ?? "")
    }
}
