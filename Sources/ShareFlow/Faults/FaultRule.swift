/// A fault injection rule (SPEC §15 F1): what it matches, the CloudKit failure it injects, and
/// how often. One shape for every source — the config file, Lua (`sf.faults.add`) and the admin
/// route — each of which converts its table or JSON object to `FaultRule.Value`s first, so the
/// checks and their wording are the same everywhere:
///
/// ```swift
/// let rule = try FaultRule(["operation": .string("records/modify"), "fault": .string("requestRateLimited"),
///                           "probability": .number(0.5), "seed": .number(7)], name: "faults[1]")
/// let id = try engine.faults.add(rule)   // armed until `engine.faults.remove(id: id)`
/// ```
public struct FaultRule: Sendable, Equatable {
    /// The failures a rule can inject, by SPEC §15's names (F2):
    /// - `requestRateLimited`: the request's error, code 7, with `retryAfter`.
    /// - `serviceUnavailable`: the request's error, code 6, with `retryAfter`.
    /// - `zoneBusy`: code 23 with `retryAfter`, per item of a modify, per zone of a zone feed,
    ///   else the request's.
    /// - `partialFailure`: each matched item of a modify fails with `itemCode`.
    /// - `changeTokenExpired`: code 21, per zone of a zone feed or for the database feed, only
    ///   when a token was sent.
    /// - `quotaExceeded`: the request's error, code 25.
    /// - `zonePurged`: the database feed reports the zone purged; the data stay.
    /// - `authenticationFailed`: over HTTP only, a 401.
    /// - `networkFailure`: a lost connection, code 4, before or after commit (`when`).
    public enum Fault: String, CaseIterable, Sendable {
        case requestRateLimited, serviceUnavailable, zoneBusy, partialFailure, changeTokenExpired, quotaExceeded, zonePurged,
            authenticationFailed, networkFailure
    }

    /// `partialFailure`'s per-item code: `serverRecordChanged` (a save's carries the server's
    /// record when the caller can read it), `quotaExceeded`, `limitExceeded` or `zoneBusy`
    /// (with `retryAfter`).
    public enum ItemCode: String, CaseIterable, Sendable {
        case serverRecordChanged, quotaExceeded, limitExceeded, zoneBusy
    }

    /// When a `networkFailure` strikes: `beforeCommit`, before the operation runs, or
    /// `afterCommit`, after it committed (the write applied, the client told nothing).
    public enum When: String, CaseIterable, Sendable {
        case beforeCommit, afterCommit
    }

    /// A value as a source gives it, before it is checked.
    public enum Value: Sendable, Equatable {
        /// A string.
        case string(String)
        /// A number (Lua's and JSON's are doubles; integer keys must hold whole ones).
        case number(Double)
        /// A boolean (no key takes one: always refused, named).
        case boolean(Bool)
        /// Anything else (a table, a function, JSON null): named by its type in the error.
        case other(type: String)
    }

    /// The operation or HTTP subpath matched (`*`: any).
    public var operation = "*"
    /// The container identifier matched; nil: any.
    public var container: String?
    /// The environment matched; nil: any.
    public var environment: CloudEnvironment?
    /// `private`, `shared` or `public`.
    public var database: String?
    /// The zone name one of the request's items must have; nil: any.
    public var zone: String?
    /// The record type one of the request's items must have; nil: any.
    public var recordType: String?
    /// A glob over record names: `*` any run of characters, `?` one.
    public var recordName: String?
    /// An email address or a userRecordID.
    public var caller: String?
    /// Nil with a `latencyMs`: the rule only delays.
    public var fault: Fault?
    /// The seconds the error asks the client to wait, for the faults that carry it (0 to 86,400).
    public var retryAfter: Double = 3
    /// `partialFailure`'s per-item code.
    public var itemCode: ItemCode = .serverRecordChanged
    /// `networkFailure`'s moment: before the operation runs, or after it committed.
    public var when: When = .beforeCommit
    /// The chance, 0 to 1, that a match (past `after`) injects.
    public var probability: Double = 1
    /// The seed of the rule's own generator (`SplitMix64`), drawn at every match: the same
    /// seed, rules and requests give the same faults (F3).
    public var seed: UInt64 = 0
    /// How many matches pass untouched before the rule may inject.
    public var after = 0
    /// At most this many injections; nil: no limit.
    public var count: Int?
    /// A delay before the call, in milliseconds (0 to 60,000); with no `fault` the rule only delays.
    public var latencyMs: Double = 0

    /// The native operations a rule can name.
    public static let operations = [
        "modifyRecords", "fetchRecords", "query", "fetchShareParticipants", "fetchShareMetadata", "acceptShares",
        "discoverAllUserIdentities", "discoverUserIdentities", "modifyRecordZones", "databaseChanges",
        "recordZoneChanges", "requestShareAccess",
    ]

    /// The HTTP subpaths a rule can name, each with the native operation it runs, if any: a
    /// request matches a rule naming either.
    public static let subpaths: [String: String?] = [
        "records/modify": "modifyRecords", "records/lookup": "fetchRecords", "records/query": "query",
        "records/resolve": "fetchShareMetadata", "records/accept": "acceptShares", "zones/modify": "modifyRecordZones",
        "changes/zone": "recordZoneChanges", "changes/database": "databaseChanges", "records/changes": "recordZoneChanges",
        "zones/changes": "databaseChanges", "users/discover": "discoverAllUserIdentities", "users/lookup/email": "discoverUserIdentities",
        "users/lookup/id": "discoverUserIdentities", "zones/list": nil, "zones/lookup": nil, "users/caller": nil, "users/current": nil,
        "changes/stream": nil, "records/requestAccess": "requestShareAccess",
    ]

    /// The keys a rule may have, in the order an error lists them.
    public static let keys = [
        "operation", "container", "environment", "database", "zone", "recordType", "recordName", "caller", "fault",
        "retryAfter", "itemCode", "when", "probability", "seed", "after", "count", "latencyMs",
    ]

    /// The longest glob or name a rule may hold: matching is bit-parallel (`Glob`), and past this a
    /// pattern is a mistake, not a rule.
    public static let maxTextLength = 1024

    /// A rule that matches every request and injects nothing yet: set `fault` or `latencyMs`.
    /// Nothing is checked here, unlike `init(_:name:)`.
    public init() {}

    /// A rule from a source's fields; `name` says where it came from in errors
    /// (`faults[2]`, `sf.faults.add`). Every key is checked: an unknown one, a value of the
    /// wrong type or out of its range is `invalidArguments` naming the key and what was given.
    public init(_ fields: [String: Value], name: String) throws {
        func fail(_ key: String, _ expected: String, _ value: Value) -> ShareFlowError {
            ShareFlowError(.invalidArguments, "\(name).\(key) must be \(expected), got \(FaultRule.describe(value))")
        }
        func text(_ key: String) throws -> String? {
            guard let value = fields[key] else { return nil }
            guard case .string(let s) = value, !s.isEmpty, s.utf8.count <= FaultRule.maxTextLength else {
                throw fail(key, "a non-empty string of at most \(FaultRule.maxTextLength) bytes", value)
            }
            return s
        }
        func word<T: RawRepresentable & CaseIterable>(_ key: String, _ type: T.Type) throws -> T? where T.RawValue == String {
            guard let value = fields[key] else { return nil }
            guard case .string(let s) = value, let word = T(rawValue: s) else {
                throw fail(key, "one of \(T.allCases.map(\.rawValue).joined(separator: ", "))", value)
            }
            return word
        }
        func number(_ key: String, _ range: ClosedRange<Double>, integer: Bool = false) throws -> Double? {
            guard let value = fields[key] else { return nil }
            guard case .number(let n) = value, n.isFinite, range.contains(n), !integer || n == n.rounded() else {
                throw fail(
                    key,
                    "a\(integer ? "n integer" : " number") from \(FaultRule.format(range.lowerBound)) to \(FaultRule.format(range.upperBound))",
                    value
                )
            }
            return n
        }

        for key in fields.keys.sorted() where !FaultRule.keys.contains(key) {
            throw ShareFlowError(
                .invalidArguments,
                "\(name): unknown key '\(FaultRule.excerpt(key))' (expected \(FaultRule.keys.joined(separator: ", ")))"
            )
        }
        if let operation = try text("operation") {
            guard operation == "*" || FaultRule.operations.contains(operation) || FaultRule.subpaths[operation] != nil else {
                throw fail(
                    "operation",
                    "*, an operation (\(FaultRule.operations.joined(separator: ", "))) or an HTTP subpath (\(FaultRule.subpaths.keys.sorted().joined(separator: ", ")))",
                    .string(operation)
                )
            }
            self.operation = operation
        }
        container = try text("container")
        environment = try word("environment", CloudEnvironment.self)
        if let database = fields["database"] {
            guard case .string(let s) = database, ["private", "shared", "public"].contains(s) else {
                throw fail("database", "one of private, shared, public", database)
            }
            self.database = s
        }
        zone = try text("zone")
        recordType = try text("recordType")
        recordName = try text("recordName")
        caller = try text("caller")
        fault = try word("fault", Fault.self)
        retryAfter = try number("retryAfter", 0...86_400) ?? retryAfter
        itemCode = try word("itemCode", ItemCode.self) ?? itemCode
        when = try word("when", When.self) ?? when
        probability = try number("probability", 0...1) ?? probability
        // Integers a double holds exactly: a seed from JSON or Lua is one.
        seed = UInt64(try number("seed", 0...9_007_199_254_740_991, integer: true) ?? 0)
        after = Int(try number("after", 0...1_000_000_000, integer: true) ?? 0)
        count = try number("count", 1...1_000_000_000, integer: true).map { Int($0) }
        latencyMs = try number("latencyMs", 0...60_000) ?? latencyMs

        // Keys that mean something only with another: said, not ignored.
        if fields["itemCode"] != nil, fault != .partialFailure {
            throw ShareFlowError(
                .invalidArguments,
                "\(name).itemCode applies to fault partialFailure only (the rule's fault is \(fault?.rawValue ?? "none"))"
            )
        }
        if fields["when"] != nil, fault != .networkFailure {
            throw ShareFlowError(
                .invalidArguments,
                "\(name).when applies to fault networkFailure only (the rule's fault is \(fault?.rawValue ?? "none"))"
            )
        }
        if fault == nil, latencyMs == 0 {
            throw ShareFlowError(.invalidArguments, "\(name) has no fault and no latencyMs: it would do nothing")
        }
    }

    /// The rule as its keys and values, each key the rule sets (a default left out): what
    /// `sf.faults.list()` and the admin route's `GET` show, and what `init(_:name:)` reads back.
    public var fields: [(key: String, value: Value)] {
        var out: [(String, Value)] = [("operation", .string(operation))]
        func add(_ key: String, _ text: String?) { if let text { out.append((key, .string(text))) } }
        add("container", container)
        add("environment", environment?.rawValue)
        add("database", database)
        add("zone", zone)
        add("recordType", recordType)
        add("recordName", recordName)
        add("caller", caller)
        add("fault", fault?.rawValue)
        if [.requestRateLimited, .serviceUnavailable, .zoneBusy].contains(fault) || (fault == .partialFailure && itemCode == .zoneBusy) {
            out.append(("retryAfter", .number(retryAfter)))
        }
        if fault == .partialFailure { out.append(("itemCode", .string(itemCode.rawValue))) }
        if fault == .networkFailure { out.append(("when", .string(when.rawValue))) }
        out.append(("probability", .number(probability)))
        out.append(("seed", .number(Double(seed))))
        if after > 0 { out.append(("after", .number(Double(after)))) }
        if let count { out.append(("count", .number(Double(count)))) }
        if latencyMs > 0 { out.append(("latencyMs", .number(latencyMs))) }
        return out
    }

    /// Whether `glob` (`*` any run, `?` one character) matches the whole of `name`, by
    /// characters (`Glob`: compile a rule's once, match it many times).
    public static func globMatches(_ glob: String, _ name: String) -> Bool {
        Glob(glob).matches(name)
    }

    static func describe(_ value: Value) -> String {
        switch value {
        case .string(let s): return "\"\(excerpt(s))\" (a string)"
        case .number(let n): return format(n)
        case .boolean(let b): return "\(b) (a boolean)"
        case .other(let type): return "a \(type)"
        }
    }

    static func excerpt(_ s: String) -> String {
        s.count > 40 ? String(s.prefix(40)) + "…" : s
    }

    static func format(_ n: Double) -> String {
        n.isFinite && n == n.rounded() && abs(n) < 1e16 ? String(Int64(n)) : "\(n)"
    }
}

/// A record-name glob compiled once (`*` any run, `?` one character, by characters), matched
/// bit-parallel: one pass over the name, each character a few word operations per 64
/// characters of pattern — O(name × pattern / 64), with no backtracking — after a name too
/// short (or, with no `*`, not exactly as long) is refused at once. (A two-pointer walk with
/// one backtrack point is O(name × pattern) on `*aaa…ab`: a thousand such rules held a modify
/// of a few hundred items for minutes.) A printable-ASCII name is walked by its bytes.
public struct Glob: Sendable {
    /// The pattern's length, runs of `*` counted once.
    private let length: Int
    private let words: Int
    /// The characters a name needs (the pattern's other than `*`), and whether it has a `*`.
    private let needs: Int
    private let hasStar: Bool
    /// Bit i: the pattern's character i is `*`.
    private let star: [UInt64]
    /// Per character, bit i: the pattern's character i consumes it (it, or `?`); `other` for
    /// a character the pattern does not name; `ascii` the same by byte, 128 rows of `words`.
    private let masks: [Character: [UInt64]]
    private let other: [UInt64]
    private let ascii: [UInt64]

    /// Compiles `glob`; runs of `*` count as one.
    public init(_ glob: String) {
        var p: [Character] = []
        for c in glob where !(c == "*" && p.last == "*") { p.append(c) }
        length = p.count
        // Bits 0…length: "the first i characters of the pattern are matched".
        let words = (p.count + 1 + 63) / 64
        self.words = words
        needs = p.filter { $0 != "*" }.count
        hasStar = p.contains("*")
        var star = [UInt64](repeating: 0, count: words)
        var any = star
        var masks: [Character: [UInt64]] = [:]
        for (i, c) in p.enumerated() {
            let bit = UInt64(1) << UInt64(i % 64)
            switch c {
            case "*": star[i / 64] |= bit
            case "?": any[i / 64] |= bit
            default: masks[c, default: [UInt64](repeating: 0, count: words)][i / 64] |= bit
            }
        }
        for (c, m) in masks { masks[c] = zip(m, any).map { $0 | $1 } }
        var ascii = [UInt64](repeating: 0, count: 128 * words)
        for byte in 0..<128 {
            let m = masks[Character(Unicode.Scalar(UInt8(byte)))] ?? any
            for w in 0..<words { ascii[byte * words + w] = m[w] }
        }
        self.star = star
        self.masks = masks
        self.other = any
        self.ascii = ascii
    }

    /// Whether the glob matches the whole of `name`.
    public func matches(_ name: String) -> Bool {
        let utf8 = name.utf8
        // Printable ASCII: one character per byte (no CR LF pair to count as one).
        let printable = utf8.allSatisfy { (0x20..<0x7F).contains($0) }
        let count = printable ? utf8.count : name.count
        guard count >= needs, hasStar || count == needs else { return false }
        var d = [UInt64](repeating: 0, count: words)
        d[0] = 1
        close(&d)
        if printable {
            for byte in utf8 {
                guard step(&d, { ascii[Int(byte) * words + $0] }) else { return false }
            }
        } else {
            for c in name {
                let m = masks[c] ?? other
                guard step(&d, { m[$0] }) else { return false }
            }
        }
        return (d[length / 64] >> UInt64(length % 64)) & 1 == 1
    }

    /// One character: from each matched prefix i, to i + 1 where the pattern's character i
    /// consumes it, staying at i on a star; false when no prefix is left.
    @inline(__always)
    private func step(_ d: inout [UInt64], _ mask: (Int) -> UInt64) -> Bool {
        var carry: UInt64 = 0
        var alive: UInt64 = 0
        for w in 0..<words {
            let advance = d[w] & mask(w)
            let next = (advance << 1) | carry | (d[w] & star[w])
            carry = advance >> 63
            d[w] = next
            alive |= next
        }
        guard alive != 0 else { return false }
        close(&d)
        return true
    }

    /// A star matches the empty run too: from i, i + 1 (never a star again: runs collapsed).
    @inline(__always)
    private func close(_ d: inout [UInt64]) {
        var carry: UInt64 = 0
        for w in 0..<words {
            let s = d[w] & star[w]
            d[w] |= (s << 1) | carry
            carry = s >> 63
        }
    }
}
