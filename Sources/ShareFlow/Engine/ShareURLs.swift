import Foundation

/// Share URLs (R6, SPEC §13): `<public URL>/share/<token>`. The store keeps the token alone, so
/// the same share has the server's URL under `shareflow serve --public-url` and the default one
/// elsewhere, and a URL is recognised by its token whatever host it names.
extension Engine {
    /// Where share URLs point when nothing else is configured (`Options.publicURL`).
    public static let defaultPublicURL = "https://shareflow.invalid"

    /// The URL of the share whose token is `token`.
    ///
    /// ```swift
    /// engine.options.publicURL = "https://share.example.com"
    /// engine.shareURL(token: "Qm9i…")  // "https://share.example.com/share/Qm9i…"
    /// ```
    public func shareURL(token: String) -> String { options.publicURL + "/share/" + token }

    /// The token of a share URL: what follows its last `/share/`, without the query or the
    /// fragment (links from iOS carry the share's title as `#title`); nil when there is none, or
    /// when it holds what no token does (a control character, a space, anything not ASCII:
    /// PostgreSQL refuses a NUL outright, so such a URL is no share's on either store, R16).
    ///
    /// Read as bytes: Foundation's backwards search was a fifth of a share's metadata read
    /// past its participants (issue 48, callgrind).
    public static func shareToken(url: String) -> String? {
        var url = url
        return url.withUTF8 { bytes -> String? in
            let marker: [UInt8] = Array("/share/".utf8)
            guard bytes.count >= marker.count else { return nil }
            var start = bytes.count - marker.count
            while !bytes[start..<start + marker.count].elementsEqual(marker) {
                guard start > 0 else { return nil }
                start -= 1
            }
            let first = start + marker.count
            var end = first
            while end < bytes.count, bytes[end] != UInt8(ascii: "#"), bytes[end] != UInt8(ascii: "?"), bytes[end] != UInt8(ascii: "/") { end += 1 }
            let token = bytes[first..<end]
            guard !token.isEmpty, token.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
            return String(decoding: token, as: UTF8.self)
        }
    }

    /// R6: a new token, 192 random bits, URL-safe (base64url, 32 characters): also a short
    /// GUID as CloudKit clients expect one (at least 22 URL-safe characters).
    static func newShareToken() -> String {
        Data(RandomIdentifier.bytes(24)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
