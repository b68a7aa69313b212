/// The store's SQL is written once, in SQLite's dialect, kept to what PostgreSQL reads too; this
/// rewrites the few forms that differ, once per statement text (`PostgresSession` caches it):
///
/// - placeholders: `?` and `?N` become `$N` (a bare `?` takes the highest number so far plus
///   one, as in SQLite);
/// - `MAX(a, b)` and `MIN(a, b)` with more than one argument (SQLite's scalar forms) become
///   `GREATEST` and `LEAST`; with one argument they are the aggregates both have;
/// - `CROSS JOIN … ON` (SQLite's way to fix a join's order) becomes `JOIN … ON`;
/// - a unary `+` before a column (`+r.name`, SQLite's way to keep an index out of a plan) goes.
///
/// A parameter that may be NULL where nothing else gives its type is cast in the statement
/// itself (`CAST(?2 AS BIGINT) IS NULL`): PostgreSQL must know every parameter's type.
///
/// String literals and quoted names pass untouched.
enum PostgresDialect {
    static func translate(_ sql: String) -> String {
        let chars = Array(sql.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(chars.count + 16)
        var highest = 0
        var i = 0
        let n = chars.count
        func isWordChar(_ c: UInt8) -> Bool {
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F
        }
        func matchesWord(_ word: String, at k: Int) -> Bool {
            let w = Array(word.utf8)
            guard k + w.count <= n, k == 0 || !isWordChar(chars[k - 1]) else { return false }
            for (j, c) in w.enumerated() where chars[k + j] | 0x20 != c | 0x20 { return false }
            return k + w.count == n || !isWordChar(chars[k + w.count])
        }
        /// Whether the parenthesised list opening at `open` has a comma at its own depth.
        func hasTopLevelComma(from open: Int) -> Bool {
            var depth = 0
            var k = open
            var quote: UInt8 = 0
            while k < n {
                let c = chars[k]
                if quote != 0 {
                    if c == quote { quote = 0 }
                } else if c == 0x27 || c == 0x22 {
                    quote = c
                } else if c == 0x28 {
                    depth += 1
                } else if c == 0x29 {
                    depth -= 1
                    if depth == 0 { return false }
                } else if c == 0x2C, depth == 1 {
                    return true
                }
                k += 1
            }
            return false
        }
        while i < n {
            let c = chars[i]
            if c == 0x27 || c == 0x22 {  // a literal or a quoted name, copied whole
                var k = i + 1
                while k < n, chars[k] != c { k += 1 }
                out.append(contentsOf: chars[i..<min(k + 1, n)])
                i = k + 1
                continue
            }
            if c == 0x3F {  // ?
                var k = i + 1
                var number = 0
                while k < n, chars[k] >= 0x30, chars[k] <= 0x39 {
                    number = number * 10 + Int(chars[k] - 0x30)
                    k += 1
                }
                if k == i + 1 {
                    highest += 1
                    number = highest
                } else {
                    highest = max(highest, number)
                }
                out.append(0x24)
                out.append(contentsOf: Array(String(number).utf8))
                i = k
                continue
            }
            if c == 0x2B, i + 1 < n, isWordChar(chars[i + 1]), !(chars[i + 1] >= 0x30 && chars[i + 1] <= 0x39) {
                var k = i - 1
                while k >= 0, chars[k] == 0x20 || chars[k] == 0x0A { k -= 1 }
                var start = k
                while start > 0, isWordChar(chars[start - 1]) { start -= 1 }
                let before = k >= 0 && isWordChar(chars[k]) ? String(decoding: chars[start...k], as: UTF8.self).uppercased() : ""
                let unary =
                    k < 0 || ["AND", "OR", "ON", "WHERE", "NOT", "BY", "SELECT", "WHEN", "THEN", "ELSE"].contains(before)
                    || !(isWordChar(chars[k]) || chars[k] == 0x29 || chars[k] == 0x27 || chars[k] == 0x22)
                if unary {
                    i += 1
                    continue
                }
            }
            if matchesWord("CROSS", at: i) {
                var k = i + 5
                while k < n, chars[k] == 0x20 || chars[k] == 0x0A { k += 1 }
                if matchesWord("JOIN", at: k) {
                    i = k
                    continue
                }
            }
            for (word, replacement) in [("MAX", "GREATEST"), ("MIN", "LEAST")] where matchesWord(word, at: i) {
                var k = i + 3
                while k < n, chars[k] == 0x20 { k += 1 }
                if k < n, chars[k] == 0x28, hasTopLevelComma(from: k) {
                    out.append(contentsOf: Array(replacement.utf8))
                    i += 3
                }
            }
            guard i < n else { break }
            if chars[i] == 0x3F || chars[i] == 0x27 || chars[i] == 0x22 { continue }
            out.append(chars[i])
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
