import Foundation

/// A predicate as a query subscription keeps it (SPEC §20 N1): JSON, each case an object named
/// by one short key, values in `FieldValue`'s compact form.
extension Predicate: Codable {
    private enum Key: String, CodingKey { case all, cmp, begins, `in`, any, and, not, contains, tokens, near }

    /// The predicate as kept; `encode(to:)` wrote it.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        func comparison(_ text: String) throws -> Comparison {
            guard let op = Comparison(rawValue: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath, debugDescription: "no comparison \(text)"))
            }
            return op
        }
        if c.contains(.all) {
            self = .all
        } else if var p = try? c.nestedUnkeyedContainer(forKey: .cmp) {
            self = .compare(key: try p.decode(String.self), op: try comparison(try p.decode(String.self)), value: try p.decode(FieldValue.self))
        } else if var p = try? c.nestedUnkeyedContainer(forKey: .any) {
            self = .any(key: try p.decode(String.self), op: try comparison(try p.decode(String.self)), value: try p.decode(FieldValue.self))
        } else if var p = try? c.nestedUnkeyedContainer(forKey: .begins) {
            self = .beginsWith(key: try p.decode(String.self), prefix: try p.decode(String.self))
        } else if var p = try? c.nestedUnkeyedContainer(forKey: .in) {
            self = .isIn(key: try p.decode(String.self), values: try p.decode([FieldValue].self))
        } else if let parts = try c.decodeIfPresent([Predicate].self, forKey: .and) {
            self = .and(parts)
        } else if let part = try c.decodeIfPresent(Predicate.self, forKey: .not) {
            self = .not(part)
        } else if var p = try? c.nestedUnkeyedContainer(forKey: .contains) {
            self = .listContains(key: try p.decode(String.self), values: try p.decode([FieldValue].self), all: try p.decode(Bool.self))
        } else if var p = try? c.nestedUnkeyedContainer(forKey: .tokens) {
            self = .tokens(key: try p.decode(String.self), tokens: try p.decode([String].self), all: try p.decode(Bool.self))
        } else {
            var p = try c.nestedUnkeyedContainer(forKey: .near)
            let key = try p.decode(String.self)
            guard case .location(let center) = try p.decode(FieldValue.self) else {
                throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath, debugDescription: "near needs a location"))
            }
            self = .near(key: key, center: center, meters: try p.decode(Double.self))
        }
    }

    /// Writes the kept form.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch self {
        case .all:
            try c.encode(true, forKey: .all)
        case let .compare(key, op, value):
            var p = c.nestedUnkeyedContainer(forKey: .cmp)
            try p.encode(key)
            try p.encode(op.rawValue)
            try p.encode(value)
        case let .any(key, op, value):
            var p = c.nestedUnkeyedContainer(forKey: .any)
            try p.encode(key)
            try p.encode(op.rawValue)
            try p.encode(value)
        case let .beginsWith(key, prefix):
            var p = c.nestedUnkeyedContainer(forKey: .begins)
            try p.encode(key)
            try p.encode(prefix)
        case let .isIn(key, values):
            var p = c.nestedUnkeyedContainer(forKey: .in)
            try p.encode(key)
            try p.encode(values)
        case .and(let parts):
            try c.encode(parts, forKey: .and)
        case .not(let part):
            try c.encode(part, forKey: .not)
        case let .listContains(key, values, all):
            var p = c.nestedUnkeyedContainer(forKey: .contains)
            try p.encode(key)
            try p.encode(values)
            try p.encode(all)
        case let .tokens(key, tokens, all):
            var p = c.nestedUnkeyedContainer(forKey: .tokens)
            try p.encode(key)
            try p.encode(tokens)
            try p.encode(all)
        case let .near(key, center, meters):
            var p = c.nestedUnkeyedContainer(forKey: .near)
            try p.encode(key)
            try p.encode(FieldValue.location(center))
            try p.encode(meters)
        }
    }

    /// How much evaluating it costs: its parts and the size of the values they compare (a
    /// list counts its items, text and bytes a unit per 64 bytes), bounded by
    /// `Subscription.maxPredicateCost`; and how deep its parts nest.
    var cost: (parts: Int, depth: Int) {
        func size(_ v: FieldValue) -> Int {
            switch v {
            case .string(let s): return 1 + s.utf8.count / 64
            case .bytes(let d): return 1 + d.count / 64
            case .list(let items): return items.reduce(1) { $0 + size($1) }
            case .encrypted(let inner): return size(inner)
            default: return 1
            }
        }
        // A part that reads a whole field of the record (its words, its list's items) costs
        // more than one that reads a value: `scan` units (a record's words and items are read
        // once for every subscription of a change, `RecordMemo`; this bounds what is left).
        let scan = 10
        switch self {
        case .all: return (1, 1)
        case .compare(_, _, let value): return (1 + size(value), 1)
        case .any(_, let op, let value): return ((op == .notEqual ? 4 * scan : scan) + size(value), 1)
        case .beginsWith(_, let prefix): return (2 + prefix.utf8.count / 64, 1)
        case .near: return (2, 1)
        case .isIn(_, let values): return (values.reduce(1) { $0 + size($1) }, 1)
        case .listContains(_, let values, _): return (values.reduce(scan) { $0 + size($1) }, 1)
        case .tokens(_, let tokens, _): return (tokens.reduce(scan) { $0 + 1 + $1.utf8.count / 64 }, 1)
        case .not(let part):
            let c = part.cost
            return (c.parts + 1, c.depth + 1)
        case .and(let parts):
            let costs = parts.map(\.cost)
            return (costs.reduce(1) { $0 + $1.parts }, 1 + (costs.map(\.depth).max() ?? 0))
        }
    }
}
