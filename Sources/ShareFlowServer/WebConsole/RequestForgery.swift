import Foundation
import HTTPTypes
import Hummingbird

/// The checks every state-changing request to the console and the sign-in page passes before
/// it is read further (SPEC §21 C4, CSRF): a form a browser posts (URL-encoded, at most
/// `FormFields.maxBytes`), sent from this server's own pages (`Sec-Fetch-Site`, when the browser
/// sends it, is `same-origin` or `none`; `Origin`, when sent, is this server's), carrying the
/// session's token. Any one failing refuses the request before it changes anything.
enum RequestForgery {
    /// Why `request` is refused, or nil when it passes the checks that need no body.
    static func refusal(of request: Request, ownOrigins: [String]) -> String? {
        let type = request.headers[.contentType]?.lowercased() ?? ""
        guard type.hasPrefix("application/x-www-form-urlencoded") else {
            return "the console takes forms (application/x-www-form-urlencoded) only"
        }
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site != "same-origin", site != "none" {
            return "the request came from another site (Sec-Fetch-Site: \(site.prefix(20)))"
        }
        if let origin = request.headers[HTTPField.Name("Origin")!] {
            guard let normalized = CrossOriginMiddleware.normalized(origin), ownOrigins.contains(normalized) else {
                return "the request came from another origin"
            }
        }
        return nil
    }

    /// This server's origins as a browser names them: the `Host` the request came to, with the
    /// connection's scheme, and the public URL's (a console behind a proxy).
    static func ownOrigins(of request: Request, secure: Bool, publicURL: String) -> [String] {
        var origins: [String] = []
        if let host = request.head.authority, !host.isEmpty,
            let o = CrossOriginMiddleware.normalized((secure ? "https://" : "http://") + host)
        {
            origins.append(o)
        }
        if var url = URLComponents(string: publicURL) {
            url.path = ""
            url.query = nil
            url.fragment = nil
            if let text = url.string, let o = CrossOriginMiddleware.normalized(text) { origins.append(o) }
        }
        return origins
    }
}
