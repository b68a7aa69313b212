import Foundation

/// What a `QueryOperation` looks for (O7): records of one type whose fields match a predicate,
/// in an order.
///
/// ```swift
/// let q = try Query(recordType: "Trip", predicate: "days >= %@ AND title BEGINSWITH %@",
///                   arguments: [.integer(3), .string("Lis")],
///                   sortDescriptors: [SortDescriptor(key: "days", ascending: false)])
/// ```
public struct Query: Sendable {
    /// The type of the records matched.
    public var recordType: String
    /// What the records must match; `.all` for every record of the type.
    public var predicate: Predicate
    /// The order, first descriptor first; ties, and a query without one, go by record name (R33).
    public var sortDescriptors: [SortDescriptor]

    /// The most sort descriptors a query runs with.
    public static let maxSortDescriptors = 16

    /// A query of `recordType` records matching `predicate` (every one by default).
    public init(recordType: String, predicate: Predicate = .all, sortDescriptors: [SortDescriptor] = []) {
        self.recordType = recordType
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
    }

    /// `predicate` in NSPredicate's format (the subset of O7), `%@` taking `arguments` in order.
    public init(
        recordType: String,
        predicate format: String,
        arguments: [FieldValue] = [],
        sortDescriptors: [SortDescriptor] = []
    ) throws {
        self.init(
            recordType: recordType,
            predicate: try Predicate(format: format, arguments: arguments),
            sortDescriptors: sortDescriptors
        )
    }
}

/// One key of a query's order, as `NSSortDescriptor`: a field or a system field (`Predicate.systemKeys`).
public struct SortDescriptor: Sendable, Equatable {
    /// The field or system field to sort by.
    public var key: String
    /// Smallest first when true (the default).
    public var ascending: Bool
    /// When set, `key` is a location field and records sort by their distance from here
    /// (`CKLocationSortDescriptor`; over HTTP `relativeLocation`); records without the field first.
    public var relativeLocation: Location?
    /// Sorts by `key`, ascending unless told otherwise.
    public init(key: String, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }

    /// Sorts by the distance of location field `key` from `location`, nearest first unless told otherwise.
    public init(key: String, relativeTo location: Location, ascending: Bool = true) {
        self.init(key: key, ascending: ascending)
        relativeLocation = location
    }
}

/// The predicate subset of O7: comparisons (`==`, `!=`, `<`, `<=`, `>`, `>=`), `BEGINSWITH`,
/// `IN` and `AND`, over fields and the system fields `recordName` (or `recordID`), `modificationDate`, `creationDate`, `creatorUserRecordID` and `lastModifiedUserRecordID` (R31).
///
/// ```swift
/// let p = try Predicate(format: "ANY tags == %@ AND creationDate > %@", arguments: [.string("sun"), .date(since)])
/// // .and([.any(key: "tags", op: .equal, value: .string("sun")),
/// //       .compare(key: "creationDate", op: .greater, value: .date(since))])
/// ```
public indirect enum Predicate: Sendable, Equatable {
    /// Every record (`TRUEPREDICATE`).
    case all
    /// `key op value`. A record without `key` matches only `!=`; values that cannot be compared match nothing.
    case compare(key: String, op: Comparison, value: FieldValue)
    /// A string field starting with `prefix` (`BEGINSWITH`), case and diacritics counting.
    case beginsWith(key: String, prefix: String)
    /// A field equal to one of `values` (`IN`).
    case isIn(key: String, values: [FieldValue])
    /// A list field one of whose items compares true (`ANY tags == 'x'`, `tags CONTAINS 'x'`;
    /// over HTTP `LIST_CONTAINS`). A field that is not a list matches as a list of itself.
    case any(key: String, op: Comparison, value: FieldValue)
    /// Every part matches (`AND`, `&&`).
    case and([Predicate])
    /// The part does not match (`NOT`); over HTTP `NOT_IN`, `NOT_LIST_CONTAINS`,
    /// `NOT_BEGINS_WITH`. A record without the part's key matches.
    case not(Predicate)
    /// A list field holding one of `values` (`all` false: `LIST_CONTAINS_ANY`) or each of them
    /// (`all` true: `LIST_CONTAINS_ALL`). A field that is not a list counts as a list of itself.
    case listContains(key: String, values: [FieldValue], all: Bool)
    /// A string field (or list of strings) whose words include one of `tokens` (`all` false:
    /// `CONTAINS_ANY_TOKENS`) or each of them (`all` true: `CONTAINS_ALL_TOKENS`). Words are
    /// runs of letters and digits, compared ignoring case and diacritics (`Predicate.words`).
    case tokens(key: String, tokens: [String], all: Bool)
    /// A location field within `meters` of `center` on the Earth's surface (`NEAR`;
    /// `distanceToLocation:fromLocation:(key, center) < meters` in NSPredicate's format).
    case near(key: String, center: Location, meters: Double)

    /// A comparison operator, by its NSPredicate spelling; integers and doubles compare as numbers.
    public enum Comparison: String, Sendable, CaseIterable {
        /// `==` (also `=`).
        case equal = "=="
        /// `!=` (also `<>`).
        case notEqual = "!="
        /// `<`.
        case less = "<"
        /// `<=` (also `=<`).
        case lessOrEqual = "<="
        /// `>`.
        case greater = ">"
        /// `>=` (also `=>`).
        case greaterOrEqual = ">="

        func holds(_ order: ComparisonResult) -> Bool {
            switch self {
            case .equal: return order == .orderedSame
            case .notEqual: return order != .orderedSame
            case .less: return order == .orderedAscending
            case .lessOrEqual: return order != .orderedDescending
            case .greater: return order == .orderedDescending
            case .greaterOrEqual: return order != .orderedAscending
            }
        }
    }

    /// The system fields a predicate or a sort may name besides the record's own.
    public static let systemKeys: Set<String> = [
        "recordName", "recordID", "modificationDate", "creationDate",
        "creatorUserRecordID", "lastModifiedUserRecordID",
    ]

    /// Whether a record matches, `value` giving the value of each key it names (a field or a
    /// system field; nil when the record has none).
    public func matches(_ value: (String) -> FieldValue?) -> Bool {
        switch self {
        case .all: return true
        case .and(let parts): return parts.allSatisfy { $0.matches(value) }
        case .not(let part): return !part.matches(value)
        case let .listContains(key, values, all):
            guard let v = value(key) else { return false }
            let items: [FieldValue] = if case .list(let items) = v { items } else { [v] }
            let found = { (wanted: FieldValue) in items.contains { FieldValue.order($0, wanted) == .orderedSame } }
            return all ? values.allSatisfy(found) : values.contains(where: found)
        case let .tokens(key, tokens, all):
            guard let v = value(key) else { return false }
            let words = Predicate.words(in: v)
            let wanted = tokens.flatMap { Predicate.words(in: .string($0)) }
            return all ? wanted.allSatisfy(words.contains) : wanted.contains(where: words.contains)
        case let .near(key, center, meters):
            guard case .location(let l)? = value(key) else { return false }
            return Location.distance(l, center) <= meters
        case let .beginsWith(key, prefix):
            guard case .string(let s)? = value(key) else { return false }
            return s.hasPrefix(prefix)
        case let .isIn(key, values):
            guard let v = value(key) else { return false }
            return values.contains { FieldValue.order($0, v) == .orderedSame }
        case let .compare(key, op, expected):
            guard let v = value(key), let order = FieldValue.order(v, expected) else { return op == .notEqual && value(key) == nil }
            return op.holds(order)
        case let .any(key, op, expected):
            guard let v = value(key) else { return false }
            let items: [FieldValue] = if case .list(let items) = v { items } else { [v] }
            return items.contains { item in FieldValue.order(item, expected).map(op.holds) ?? false }
        }
    }

    /// The predicate made ready to test many records: an `IN` list becomes a hashed set, so a
    /// query costs the records it reads plus the values it sends, never their product.
    func compiled() -> ((String) -> FieldValue?) -> Bool {
        switch self {
        case let .isIn(key, values):
            let set = MatchSet(values)
            return { value in value(key).map(set.contains) ?? false }
        case .and(let parts):
            let tests = parts.map { $0.compiled() }
            return { value in tests.allSatisfy { $0(value) } }
        case .not(let part):
            let test = part.compiled()
            return { value in !test(value) }
        case let .listContains(key, values, false):
            let set = MatchSet(values)
            return { value in
                guard let v = value(key) else { return false }
                if case .list(let items) = v { return items.contains(where: set.contains) }
                return set.contains(v)
            }
        case let .tokens(key, tokens, all):
            // The words asked for, once; a record's words, once per record (and once per
            // record for every predicate evaluated under one `RecordMemo`).
            let wanted = Set(tokens.flatMap { Predicate.words(in: .string($0)) })
            return { value in
                guard let v = value(key) else { return false }
                let words = RecordMemo.current?.words(key, v) ?? Predicate.words(in: v)
                return all ? wanted.isSubset(of: words) : !wanted.isDisjoint(with: words)
            }
        case let .listContains(key, values, true):
            return { value in
                guard let v = value(key) else { return false }
                guard let memo = RecordMemo.current else { return self.matches(value) }
                let items = memo.items(key, v)
                return values.allSatisfy { items.set.contains($0) }
            }
        case let .any(key, op, expected) where op != .notEqual:
            // Under a memo a list is read once for every predicate: its items as a set (==),
            // its least and greatest (<, <=, >, >=).
            return { value in
                guard let memo = RecordMemo.current else { return self.matches(value) }
                guard let v = value(key) else { return false }
                let items = memo.items(key, v)
                switch op {
                case .equal: return items.set.contains(expected)
                case .less, .lessOrEqual: return items.least.flatMap { FieldValue.order($0, expected) }.map(op.holds) ?? false
                default: return items.greatest.flatMap { FieldValue.order($0, expected) }.map(op.holds) ?? false
                }
            }
        default:
            return { value in self.matches(value) }
        }
    }

    /// The words of a string value, or of a list of strings: runs of letters and digits,
    /// folded to lower case without diacritics (what the token comparators compare).
    static func words(in value: FieldValue) -> Set<String> {
        switch value {
        case .string(let s):
            let folded = s.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
            return Set(folded.split { !($0.isLetter || $0.isNumber) }.map(String.init))
        case .list(let items): return items.reduce(into: Set<String>()) { $0.formUnion(words(in: $1)) }
        default: return []
        }
    }

    /// The predicate with each record ID (a reference value) compared against a system key
    /// that holds a name — `recordName`, `recordID`, `creatorUserRecordID`,
    /// `lastModifiedUserRecordID` — taken as its record name: CloudKit compares
    /// `recordID == %@` given a `CKRecord.ID`, and clients send references over HTTP.
    func comparingNames() -> Predicate {
        let named: Set<String> = ["recordName", "recordID", "creatorUserRecordID", "lastModifiedUserRecordID"]
        func name(_ v: FieldValue) -> FieldValue {
            if case .reference(let id, _) = v { return .string(id.recordName) }
            return v
        }
        switch self {
        case let .compare(key, op, value) where named.contains(key): return .compare(key: key, op: op, value: name(value))
        case let .isIn(key, values) where named.contains(key): return .isIn(key: key, values: values.map(name))
        case .and(let parts): return .and(parts.map { $0.comparingNames() })
        case .not(let part): return .not(part.comparingNames())
        default: return self
        }
    }

    /// Parses `format`; an error names what it did not understand, and where.
    public init(format: String, arguments: [FieldValue] = []) throws {
        var parser = PredicateParser(text: format, arguments: arguments)
        self = try parser.parse()
    }
}

extension FieldValue {
    /// How two values compare, or nil when they cannot be (different types, lists, bytes
    /// against anything but equality). Integers and doubles compare as numbers.
    static func order(_ a: FieldValue, _ b: FieldValue) -> ComparisonResult? {
        func cmp<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult { x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame }
        switch (a, b) {
        case let (.string(x), .string(y)): return cmp(x, y)
        case let (.integer(x), .integer(y)): return cmp(x, y)
        case let (.double(x), .double(y)): return cmp(x, y)
        case let (.integer(x), .double(y)): return cmp(Double(x), y)
        case let (.double(x), .integer(y)): return cmp(x, Double(y))
        case let (.date(x), .date(y)): return cmp(x, y)
        case let (.boolean(x), .boolean(y)): return x == y ? .orderedSame : (x ? .orderedDescending : .orderedAscending)
        case let (.reference(x, _), .reference(y, _)):
            // By zone (owner, then name), then record name: one order whichever way round two
            // references are compared, so a sort by a reference pages without gaps (R33).
            for (a, b) in [(x.zoneID.ownerName, y.zoneID.ownerName), (x.zoneID.zoneName, y.zoneID.zoneName), (x.recordName, y.recordName)]
            where a != b {
                return cmp(a, b)
            }
            return .orderedSame
        case let (.bytes(x), .bytes(y)): return x == y ? .orderedSame : nil
        case let (.location(x), .location(y)): return x == y ? .orderedSame : nil
        default: return nil
        }
    }
}

extension Location {
    /// The great-circle distance between two places in meters (haversine, on a sphere of the
    /// Earth's mean radius): what `NEAR` and a sort by distance measure.
    public static func distance(_ a: Location, _ b: Location) -> Double {
        let radius = 6_371_008.8
        let (lat1, lat2) = (a.latitude * .pi / 180, b.latitude * .pi / 180)
        let dLat = lat2 - lat1
        let dLon = (b.longitude - a.longitude) * .pi / 180
        let h = sin(dLat / 2) * sin(dLat / 2) + cos(lat1) * cos(lat2) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * radius * asin(min(1, h.squareRoot()))
    }
}

/// Values looked up by hash with exactly `FieldValue.order(a, b) == .orderedSame` as equality:
/// integers against integers exactly, a double against integers and doubles as numbers,
/// references by zone and name, and no match for a list or for values of different types.
/// What many predicates evaluated on one record read of it once (SPEC §20: a change is
/// evaluated against every subscription of its zone): a field's words, and a list's items as a
/// set with their least and greatest. Set for the evaluations of one record (`$current`).
final class RecordMemo: @unchecked Sendable {  // one thread: bound around one synchronous evaluation
    @TaskLocal static var current: RecordMemo?

    struct Items {
        let set: MatchSet
        let least: FieldValue?
        let greatest: FieldValue?
    }
    private var words: [String: Set<String>] = [:]
    private var items: [String: Items] = [:]

    func words(_ key: String, _ v: FieldValue) -> Set<String> {
        if let known = words[key] { return known }
        let made = Predicate.words(in: v)
        words[key] = made
        return made
    }

    func items(_ key: String, _ v: FieldValue) -> Items {
        if let known = items[key] { return known }
        let list: [FieldValue] = if case .list(let l) = v { l } else { [v] }
        var least: FieldValue?
        var greatest: FieldValue?
        for item in list {
            if least.map({ FieldValue.order(item, $0) == .orderedAscending }) ?? (FieldValue.order(item, item) != nil) { least = item }
            if greatest.map({ FieldValue.order(item, $0) == .orderedDescending }) ?? (FieldValue.order(item, item) != nil) { greatest = item }
        }
        let made = Items(set: MatchSet(list), least: least, greatest: greatest)
        items[key] = made
        return made
    }
}

struct MatchSet {
    private var integers = Set<Int64>()
    private var doubles = Set<Double>()
    private var integersAsDoubles = Set<Double>()
    private var hasNaN = false
    private var strings = Set<String>()
    private var dates = Set<Date>()
    private var booleans = Set<Bool>()
    private var references = Set<RecordID>()
    private var others: [FieldValue] = []

    init(_ values: [FieldValue]) {
        for v in values {
            switch v {
            case .integer(let i):
                integers.insert(i)
                integersAsDoubles.insert(Double(i))
            case .double(let d): if d.isNaN { hasNaN = true } else { doubles.insert(d) }
            case .string(let s): strings.insert(s)
            case .date(let d): dates.insert(d)
            case .boolean(let b): booleans.insert(b)
            case .reference(let id, _): references.insert(id)
            case .list: break  // a list compares with nothing
            case .bytes, .location: others.append(v)
            case .encrypted: break  // what the server cannot read, it cannot match
            case .asset: break  // assets are not indexed (CloudKit's neither): they match nothing
            }
        }
    }

    func contains(_ v: FieldValue) -> Bool {
        switch v {
        // NaN is neither less nor greater than any number, so `order` calls it the same as each.
        case .integer(let i): return hasNaN || integers.contains(i) || doubles.contains(Double(i))
        case .double(let d):
            if d.isNaN { return hasNaN || !integers.isEmpty || !doubles.isEmpty }
            return hasNaN || doubles.contains(d) || integersAsDoubles.contains(d)
        case .string(let s): return strings.contains(s)
        case .date(let d): return dates.contains(d)
        case .boolean(let b): return booleans.contains(b)
        case .reference(let id, _): return references.contains(id)
        case .list: return false
        case .bytes, .location: return others.contains { FieldValue.order($0, v) == .orderedSame }
        case .encrypted, .asset: return false
        }
    }
}

/// A small recursive-descent parser for the predicate subset.
private struct PredicateParser {
    let chars: [Character]
    var pos = 0
    var arguments: [FieldValue]
    var nextArgument = 0
    let text: String

    init(text: String, arguments: [FieldValue]) {
        self.text = text
        self.chars = Array(text)
        self.arguments = arguments
    }

    mutating func parse() throws -> Predicate {
        skipSpace()
        if matchWord("TRUEPREDICATE") {
            try end()
            return .all
        }
        let p = try conjunction()
        try end()
        guard nextArgument == arguments.count else {
            throw fail("\(arguments.count) arguments given, \(nextArgument) used")
        }
        return p
    }

    mutating func end() throws {
        skipSpace()
        guard pos == chars.count else { throw fail("unexpected '\(String(chars[pos...].prefix(20)))'") }
    }

    mutating func conjunction() throws -> Predicate {
        var parts = [try clause()]
        while true {
            skipSpace()
            if matchWord("AND") || match("&&") { parts.append(try clause()) } else { break }
        }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    /// How deep `NOT` and parentheses nest now: bounded, so a hostile text (a plugin's, a
    /// console's) is an error rather than a stack overflow (3,000 `NOT`s overflowed it).
    var depth = 0
    static let maxDepth = 64

    mutating func clause() throws -> Predicate {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maxDepth else { throw fail("nested deeper than \(Self.maxDepth) (NOT and parentheses)") }
        skipSpace()
        if matchWord("NOT") || match("!") { return .not(try clause()) }
        // distanceToLocation:fromLocation:(key, %@) < meters: CloudKit's NEAR.
        if match("distanceToLocation:fromLocation:(") {
            let key = try identifier()
            skipSpace()
            guard match(",") else { throw fail("',' expected after '\(key)'") }
            guard case .location(let center) = try value() else { throw fail("distanceToLocation:fromLocation: takes a location") }
            skipSpace()
            guard match(")") else { throw fail("')' expected") }
            skipSpace()
            guard let op = comparison(), op == .less || op == .lessOrEqual else {
                throw fail("distanceToLocation:fromLocation: is compared with < or <= a distance in meters")
            }
            let meters = try value()
            let radius: Double
            switch meters {
            case .integer(let i): radius = Double(i)
            case .double(let d) where d.isFinite: radius = d
            default: throw fail("a distance in meters expected")
            }
            return .near(key: key, center: center, meters: radius)
        }
        if match("(") {
            let p = try conjunction()
            skipSpace()
            guard match(")") else { throw fail("')' expected") }
            return p
        }
        // ANY list == value (NSPredicate's aggregate form): one of the list's items compares true.
        if matchWord("ANY") {
            let key = try identifier()
            skipSpace()
            guard let op = comparison() else { throw fail("a comparison (==, !=, <, <=, >, >=) expected after 'ANY \(key)'") }
            return .any(key: key, op: op, value: try value())
        }
        let key = try identifier()
        skipSpace()
        if matchWord("CONTAINS") {
            return .any(key: key, op: .equal, value: try value())
        }
        if matchWord("BEGINSWITH") {
            guard case .string(let prefix) = try value() else { throw fail("BEGINSWITH takes a string") }
            return .beginsWith(key: key, prefix: prefix)
        }
        if matchWord("IN") {
            skipSpace()
            if match("{") {
                var values: [FieldValue] = []
                skipSpace()
                if !match("}") {
                    repeat {
                        values.append(try value())
                        skipSpace()
                    } while match(",")
                    guard match("}") else { throw fail("'}' expected") }
                }
                return .isIn(key: key, values: values)
            }
            guard case .list(let values) = try value() else { throw fail("IN takes a list") }
            return .isIn(key: key, values: values)
        }
        if let op = comparison() {
            return .compare(key: key, op: op, value: try value())
        }
        throw fail("an operator (==, !=, <, <=, >, >=, BEGINSWITH, IN, CONTAINS) expected after '\(key)'")
    }

    /// A comparison operator, NSPredicate's spellings included (`=>`, `=<`, `<>`, `=`).
    mutating func comparison() -> Predicate.Comparison? {
        for op in [
            ("==", Predicate.Comparison.equal), ("!=", .notEqual), ("<>", .notEqual), ("<=", .lessOrEqual),
            (">=", .greaterOrEqual), ("=>", .greaterOrEqual), ("=<", .lessOrEqual), ("=", .equal), ("<", .less),
            (">", .greater),
        ] where match(op.0) {
            return op.1
        }
        return nil
    }

    mutating func identifier() throws -> String {
        skipSpace()
        let start = pos
        while pos < chars.count, chars[pos].isLetter || chars[pos].isNumber || chars[pos] == "_" { pos += 1 }
        guard pos > start, chars[start].isLetter else { throw fail("a field name expected") }
        return String(chars[start..<pos])
    }

    mutating func value() throws -> FieldValue {
        skipSpace()
        if match("%@") {
            guard nextArgument < arguments.count else { throw fail("more %@ than arguments (\(arguments.count))") }
            nextArgument += 1
            return arguments[nextArgument - 1]
        }
        if pos < chars.count, chars[pos] == "'" || chars[pos] == "\"" {
            let quote = chars[pos]
            pos += 1
            var s = ""
            while pos < chars.count, chars[pos] != quote {
                if chars[pos] == "\\", pos + 1 < chars.count { pos += 1 }
                s.append(chars[pos])
                pos += 1
            }
            guard pos < chars.count else { throw fail("unterminated string") }
            pos += 1
            return .string(s)
        }
        if matchWord("TRUE") || matchWord("YES") { return .boolean(true) }
        if matchWord("FALSE") || matchWord("NO") { return .boolean(false) }
        let start = pos
        if pos < chars.count, chars[pos] == "-" || chars[pos] == "+" { pos += 1 }
        while pos < chars.count, chars[pos].isNumber || chars[pos] == "." || chars[pos] == "e" || chars[pos] == "E" { pos += 1 }
        let number = String(chars[start..<pos])
        if let i = Int64(number) { return .integer(i) }
        if let d = Double(number), d.isFinite { return .double(d) }
        pos = start
        throw fail("a value expected (%@, a quoted string, a number, TRUE or FALSE)")
    }

    mutating func skipSpace() { while pos < chars.count, chars[pos].isWhitespace { pos += 1 } }

    mutating func match(_ s: String) -> Bool {
        let c = Array(s)
        guard pos + c.count <= chars.count, Array(chars[pos..<pos + c.count]) == c else { return false }
        pos += c.count
        return true
    }

    /// A keyword, case-insensitive, not followed by a name character.
    mutating func matchWord(_ word: String) -> Bool {
        let c = Array(word)
        guard pos + c.count <= chars.count,
            String(chars[pos..<pos + c.count]).uppercased() == word,
            pos + c.count == chars.count || !(chars[pos + c.count].isLetter || chars[pos + c.count].isNumber || chars[pos + c.count] == "_")
        else { return false }
        pos += c.count
        return true
    }

    func fail(_ reason: String) -> ShareFlowError {
        ShareFlowError.invalid("predicate '\(Naming.printable(text))': \(reason) at character \(pos + 1) (O7)")
    }
}

/// Where a query's page ended (R33): the last record's sort values and name. The next page
/// starts strictly after it in the query's order (its sort keys, then the record name), so a
/// record deleted or inserted between two pages neither hides nor repeats another.
package struct QueryPosition: Codable, Sendable, Equatable {
    package var values: [FieldValue?]
    package var name: String

    package init(values: [FieldValue?], name: String) {
        self.values = values
        self.name = name
    }

    /// `a` against `b` in the order of `sorts` (nil first, as a missing key), then by name.
    static func order(_ a: QueryPosition, _ b: QueryPosition, _ sorts: [SortDescriptor]) -> ComparisonResult {
        for (i, s) in sorts.enumerated() where i < a.values.count && i < b.values.count {
            let o: ComparisonResult =
                switch (a.values[i], b.values[i]) {
                case (nil, nil): .orderedSame
                case (nil, _): .orderedAscending
                case (_, nil): .orderedDescending
                case let (x?, y?): FieldValue.order(x, y) ?? .orderedSame
                }
            if o != .orderedSame { return s.ascending ? o : (o == .orderedAscending ? .orderedDescending : .orderedAscending) }
        }
        return a.name == b.name ? .orderedSame : a.name < b.name ? .orderedAscending : .orderedDescending
    }
}

/// Where a query stopped (O7, R33): give it to a new `QueryOperation` to go on.
public final class QueryCursor: Sendable, CustomStringConvertible {
    let query: Query
    let zoneID: RecordZoneID?
    let scope: DatabaseScope
    let containerID: ContainerID
    let after: QueryPosition

    init(query: Query, zoneID: RecordZoneID?, scope: DatabaseScope, containerID: ContainerID, after: QueryPosition) {
        self.query = query
        self.zoneID = zoneID
        self.scope = scope
        self.containerID = containerID
        self.after = after
    }

    /// The query's record type and the record name it stops after, for logs.
    public var description: String { "QueryCursor(\(query.recordType) after \(after.name))" }
}
