import Foundation

/// A form's fields as a browser posts them (`application/x-www-form-urlencoded`), bounded: at
/// most `maxFields` fields, each name and value decoded once. A name given twice keeps its
/// first value (the console's forms name each field once; a second is a forgery's).
///
/// ```swift
/// let form = try FormFields(decoding: "csrf=ab&lookup=bob%40example.com")
/// form["lookup"]   // "bob@example.com"
/// ```
struct FormFields: Sendable {
    /// The most fields a form may carry.
    static let maxFields = 64
    /// The largest body a console form may have.
    static let maxBytes = 64 << 10

    private(set) var values: [String: String] = [:]

    init(_ values: [String: String] = [:]) { self.values = values }

    /// Decodes a body or a query. Throws `FormFields.Problem` naming what is wrong.
    init(decoding text: String) throws {
        guard !text.isEmpty else { return }
        let pairs = text.split(separator: "&", omittingEmptySubsequences: true)
        guard pairs.count <= FormFields.maxFields else {
            throw Problem(message: "the form has \(pairs.count) fields; at most \(FormFields.maxFields) are read")
        }
        for pair in pairs {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = FormFields.decode(parts[0]), let value = FormFields.decode(parts.count > 1 ? parts[1] : "") else {
                throw Problem(message: "the form is not URL-encoded text")
            }
            if values[name] == nil { values[name] = value }
        }
    }

    /// The field's value, or nil when the form has none.
    subscript(name: String) -> String? { values[name] }

    /// The field's value with surrounding white space removed; nil when absent or blank.
    func text(_ name: String) -> String? {
        guard let v = values[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !v.isEmpty else { return nil }
        return v
    }

    /// `+` as a space, then `%XX` escapes; nil when an escape is broken or the bytes are not UTF-8.
    static func decode(_ part: Substring) -> String? {
        let spaced = part.replacingOccurrences(of: "+", with: " ")
        guard spaced.contains("%") else { return spaced }
        return spaced.removingPercentEncoding
    }

    /// What is wrong with a form, for the page that answers it.
    struct Problem: Error, Sendable {
        let message: String
    }
}
