import Foundation

/// Markup that is safe by construction (SPEC §21 C4): the literals are the author's, and every
/// `String` interpolated into one is escaped. Record fields, names and reasons come from people
/// who may write `<script>`, so nothing a caller gave can become markup: there is no way to
/// interpolate a raw `String`, and links come only from `ConsoleLink` (a fixed path and an
/// encoded query, so a value can never become a `javascript:` scheme).
///
/// ```swift
/// let name = "<img src=x onerror=alert(1)>"
/// let row: HTML = "<td>\(name)</td>"   // <td>&lt;img src=x onerror=alert(1)&gt;</td>
/// ```
struct HTML: Sendable, ExpressibleByStringInterpolation {
    /// The markup, escaped where it came from a value.
    let markup: String

    init(stringLiteral value: String) { markup = value }

    init(stringInterpolation: StringInterpolation) { markup = stringInterpolation.markup }

    /// Markup this file's callers wrote themselves (the assets, a joined list): never a value.
    fileprivate init(author markup: String) { self.markup = markup }

    /// Nothing.
    static let empty: HTML = ""

    /// The items one after another.
    static func joined(_ items: [HTML], separator: HTML = "") -> HTML {
        HTML(author: items.map(\.markup).joined(separator: separator.markup))
    }

    /// `text` as it shows in an element or a double-quoted attribute: `& < > " '` as entities,
    /// control characters other than newline and tab as U+FFFD (a NUL or an escape sequence
    /// means nothing on a page and could confuse whatever reads it next).
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\n", "\t": out.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    struct StringInterpolation: StringInterpolationProtocol {
        fileprivate var markup = ""

        init(literalCapacity: Int, interpolationCount: Int) { markup.reserveCapacity(literalCapacity + 16 * interpolationCount) }

        mutating func appendLiteral(_ literal: String) { markup += literal }

        /// A value: escaped.
        mutating func appendInterpolation(_ text: String) { markup += HTML.escape(text) }

        /// A number: its digits.
        mutating func appendInterpolation<T: BinaryInteger>(_ n: T) { markup += String(n) }

        /// Markup made the same way: kept.
        mutating func appendInterpolation(_ html: HTML) { markup += html.markup }

        /// Markups made the same way, one after another.
        mutating func appendInterpolation(_ items: [HTML]) { for item in items { markup += item.markup } }

        /// A link's URL, escaped for the attribute it goes in.
        mutating func appendInterpolation(_ link: ConsoleLink) { markup += HTML.escape(link.href) }
    }
}

extension HTML {
    /// `text`, cut to `limit` characters with an ellipsis when longer (a 10 MB field shown whole
    /// would make every page that lists it 10 MB).
    static func cut(_ text: String, _ limit: Int = 2048) -> String {
        text.count > limit ? String(text.prefix(limit)) + "…" : text
    }
}
