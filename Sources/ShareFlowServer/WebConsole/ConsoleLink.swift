import Foundation

/// A URL of the console: one of its fixed paths and a query whose every value is encoded
/// (SPEC §21 C4). Identifiers (zone names, record names, addresses) travel as query values,
/// never as path segments, so a name holding `/`, `?`, `#` or `%` reads back exactly and can
/// never change which page is meant; and since the path is always ours, no value can become
/// a scheme (`javascript:`) or another host.
///
/// ```swift
/// let link = ConsoleLink(.record, ["as": "_alice", "record": "a/b?c"])
/// link.href   // "/console/record?as=_alice&record=a%2Fb%3Fc"
/// ```
struct ConsoleLink: Sendable, Equatable {
    /// The console's pages and actions.
    enum Path: String, Sendable, CaseIterable {
        case home = "/console"
        case session = "/console/session"
        case signOut = "/console/session/end"
        case accounts = "/console/accounts"
        case account = "/console/account"
        case database = "/console/database"
        case zone = "/console/zone"
        case publicRecords = "/console/public"
        case record = "/console/record"
        case share = "/console/share"
        case shareCreate = "/console/share/create"
        case shareInvite = "/console/share/invite"
        case sharePermission = "/console/share/permission"
        case shareRemove = "/console/share/remove"
        case shareRequesters = "/console/share/requesters"
        case shareUnblock = "/console/share/unblock"
        case shareSettings = "/console/share/settings"
        case link = "/console/link"
        case linkAccept = "/console/link/accept"
        case linkRequest = "/console/link/request"
        case decisions = "/console/decisions"
        case feed = "/console/feed"
        case feedEvents = "/console/feed/events"
        case faults = "/console/faults"
        case faultsArm = "/console/faults/arm"
        case faultsRemove = "/console/faults/remove"
        case faultsClear = "/console/faults/clear"
        case stylesheet = "/console/static/console.css"
        case script = "/console/static/console.js"
    }

    let path: Path
    let query: [(String, String)]

    init(_ path: Path, _ query: KeyValuePairs<String, String> = [:]) {
        self.path = path
        self.query = query.map { ($0.key, $0.value) }
    }

    init(_ path: Path, pairs: [(String, String)]) {
        self.path = path
        self.query = pairs
    }

    /// The path and the encoded query.
    var href: String {
        guard !query.isEmpty else { return path.rawValue }
        return path.rawValue + "?" + query.map { ConsoleLink.encode($0.0) + "=" + ConsoleLink.encode($0.1) }.joined(separator: "&")
    }

    /// Every byte but the unreserved ones (RFC 3986) percent-encoded: `/`, `?`, `#`, `&`, `=`, `+`
    /// and `%` included.
    static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    static func == (a: ConsoleLink, b: ConsoleLink) -> Bool { a.href == b.href }
}
