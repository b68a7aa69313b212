import Foundation

/// A record field's value: CloudKit's types (R23), kept exactly.
///
/// ```swift
/// trip["title"] = .string("Lisbon")
/// trip["photo"] = .bytes(Data(png))
/// trip["start"] = .date(Date(timeIntervalSince1970: 1_790_000_000))
/// trip["where"] = .location(Location(latitude: 38.72, longitude: -9.14))
/// trip["owner"] = .reference(person.recordID, action: .none)
/// trip["tags"] = .list([.string("sun"), .string("sea")])
/// trip["plan"] = .asset(Asset(fileURL: URL(fileURLWithPath: "plan.pdf")))
/// ```
///
/// Only the large cases are boxed (`indirect`): with the whole enum indirect, every value was a
/// heap allocation of its own, three of a record's first-sync read of three fields beside the
/// one its 100-character string needs (issue 48, callgrind). Strings, numbers, bytes, dates and
/// lists (an array is already a reference) are held in place.
public enum FieldValue: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Text.
    case string(String)
    /// A 64-bit signed integer.
    case integer(Int64)
    /// Finite only (R23).
    case double(Double)
    /// True or false.
    case boolean(Bool)
    /// Bytes, byte for byte (a string is text: valid UTF-8).
    case bytes(Data)
    /// A moment in time; finite (R23).
    case date(Date)
    /// A place: latitude and longitude, in range (R23).
    indirect case location(Location)
    /// Another record, and what its deletion should do to this one (kept, never acted on).
    indirect case reference(RecordID, action: ReferenceAction)
    /// Values of one of the other types, all the same (R23): never a list of lists.
    case list([FieldValue])
    /// A value the client encrypted (CloudKit's `encryptedValues`; over HTTP `ENCRYPTED_BYTES`,
    /// or any field flagged `isEncrypted`): kept and returned as given. ShareFlow does not
    /// encrypt at rest and cannot read it either way: it is never matched by a query. It wraps
    /// a whole field, never a list's item or another encrypted value.
    indirect case encrypted(FieldValue)
    /// A file, kept beside the record's fields (SPEC §19 A2): see `Asset`.
    indirect case asset(Asset)

    /// The type's name, as errors and `sf` name it.
    public var typeName: String {
        switch self {
        case .string: "string"
        case .integer: "integer"
        case .double: "double"
        case .boolean: "boolean"
        case .bytes: "bytes"
        case .date: "date"
        case .location: "location"
        case .reference: "reference"
        case .list: "list"
        case .encrypted(let inner): "encrypted " + inner.typeName
        case .asset: "asset"
        }
    }

    /// Why this value cannot be stored in field `key` (R23), or nil when it can.
    public func problem(key: String) -> String? {
        switch self {
        case .string, .integer, .boolean, .bytes: return nil
        case .asset(let a):
            if case .stored(let sum, let size) = a.content, !AssetBlobs.isChecksum(sum) || size < 0 {
                return "field '\(key)' holds an asset whose checksum or size is not one (R23)"
            }
            return nil
        case .double(let d):
            return d.isFinite ? nil : "field '\(key)' holds \(d); a double must be finite (R23)"
        case .date(let date):
            return date.timeIntervalSince1970.isFinite ? nil : "field '\(key)' holds a date that is not finite (R23)"
        case .location(let l): return l.problem.map { "field '\(key)': \($0) (R23)" }
        case .encrypted(let inner):
            if case .encrypted = inner { return "field '\(key)' is encrypted twice; encrypt a value once (R23)" }
            if inner.holdsAsset { return "field '\(key)' wraps an asset in an encrypted value; an asset is kept as its bytes (R23)" }
            return inner.problem(key: key)
        case .reference(let id, _):
            return Naming.problem(recordName: id.recordName).map { "field '\(key)' references \($0) (R23)" }
        case .list(let items):
            guard let first = items.first else { return nil }
            for (n, item) in items.enumerated() {
                if case .list = item { return "field '\(key)' is a list of lists; a list holds values of one other type (R23)" }
                if case .encrypted = item { return "field '\(key)' holds an encrypted item; encrypt the whole field instead (R23)" }
                guard item.typeName == first.typeName else {
                    return "field '\(key)' mixes \(first.typeName) and \(item.typeName) (item \(n + 1)); a list holds values of one type (R23)"
                }
                if let p = item.problem(key: "\(key)[\(n + 1)]") { return p }
            }
            return nil
        }
    }

    private enum Key: String, CodingKey { case s, i, d, b, y, t, la, lo, r, z, o, a, l, ha, va, al, sp, co, ts, e, f, n }

    /// Reads the compact form `encode(to:)` writes.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        if let v = try c.decodeIfPresent(String.self, forKey: .s) {
            self = .string(v)
        } else if let v = try c.decodeIfPresent(Int64.self, forKey: .i) {
            self = .integer(v)
        } else if let v = try c.decodeIfPresent(Double.self, forKey: .d) {
            self = .double(v)
        } else if let v = try c.decodeIfPresent(Bool.self, forKey: .b) {
            self = .boolean(v)
        } else if let v = try c.decodeIfPresent(Data.self, forKey: .y) {
            self = .bytes(v)
        } else if let v = try c.decodeIfPresent(Double.self, forKey: .t) {
            self = .date(Date(timeIntervalSince1970: v))
        } else if let v = try c.decodeIfPresent(Double.self, forKey: .la) {
            var l = Location(latitude: v, longitude: try c.decode(Double.self, forKey: .lo))
            for detail in Location.Detail.allCases {
                l[detail] = try c.decodeIfPresent(Double.self, forKey: Key(rawValue: detail.storedKey)!)
            }
            l.timestamp = try c.decodeIfPresent(Double.self, forKey: .ts).map(Date.init(timeIntervalSince1970:))
            self = .location(l)
        } else if let v = try c.decodeIfPresent(String.self, forKey: .r) {
            self = .reference(
                RecordID(
                    recordName: v,
                    zoneID: RecordZoneID(
                        zoneName: try c.decode(String.self, forKey: .z),
                        ownerName: try c.decode(String.self, forKey: .o)
                    )
                ),
                action: try c.decodeIfPresent(ReferenceAction.self, forKey: .a) ?? .none
            )
        } else if let v = try c.decodeIfPresent(String.self, forKey: .f) {
            let size = try c.decode(Int64.self, forKey: .n)
            guard AssetBlobs.isChecksum(v), size >= 0 else {
                throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath, debugDescription: "an asset's checksum or size is damaged"))
            }
            self = .asset(Asset(checksum: v, size: size))
        } else if let v = try c.decodeIfPresent(FieldValue.self, forKey: .e) {
            self = .encrypted(v)
        } else {
            self = .list(try c.decode([FieldValue].self, forKey: .l))
        }
    }

    /// Writes the compact form: an object keyed by the type's short name (`s` string, `i` integer, …); a `none` action is left out.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch self {
        case .string(let v): try c.encode(v, forKey: .s)
        case .integer(let v): try c.encode(v, forKey: .i)
        case .double(let v): try c.encode(v, forKey: .d)
        case .boolean(let v): try c.encode(v, forKey: .b)
        case .bytes(let v): try c.encode(v, forKey: .y)
        case .date(let v): try c.encode(v.timeIntervalSince1970, forKey: .t)
        case .location(let v):
            try c.encode(v.latitude, forKey: .la)
            try c.encode(v.longitude, forKey: .lo)
            // Only what was given: a bare location keeps the two keys the store's fast reader reads.
            for detail in Location.Detail.allCases {
                try c.encodeIfPresent(v[detail], forKey: Key(rawValue: detail.storedKey)!)
            }
            try c.encodeIfPresent(v.timestamp?.timeIntervalSince1970, forKey: .ts)
        case .reference(let id, let action):
            try c.encode(id.recordName, forKey: .r)
            try c.encode(id.zoneID.zoneName, forKey: .z)
            try c.encode(id.zoneID.ownerName, forKey: .o)
            if action != .none { try c.encode(action, forKey: .a) }
        case .list(let v): try c.encode(v, forKey: .l)
        case .encrypted(let v): try c.encode(v, forKey: .e)
        case .asset(let a):
            // Only a saved asset is stored: the save turns every other kind into one first.
            guard case .stored(let sum, let size) = a.content else {
                throw EncodingError.invalidValue(a, .init(codingPath: c.codingPath, debugDescription: "an unsaved asset cannot be stored"))
            }
            try c.encode(sum, forKey: .f)
            try c.encode(size, forKey: .n)
        }
    }

    /// The value as the console shows it: strings quoted, bytes by count, dates in ISO 8601, references as `→name`.
    public var description: String {
        switch self {
        case .string(let s): return "\"\(s)\""
        case .integer(let i): return String(i)
        case .double(let d): return String(d)
        case .boolean(let b): return String(b)
        case .bytes(let d): return "Bytes(\(d.count) bytes)"
        case .date(let d): return "Date(\(d.timeIntervalSince1970.isFinite ? ISO8601DateFormatter().string(from: d) : "\(d.timeIntervalSince1970)"))"
        case .location(let l): return l.description
        case .reference(let r, let action): return "→\(r.recordName)\(action == .none ? "" : " (\(action.rawValue))")"
        case .list(let l): return "[" + l.map(\.description).joined(separator: ", ") + "]"
        case .encrypted(let v): return "Encrypted(\(v))"
        case .asset(let a): return a.description
        }
    }

    /// Whether the value is an asset or a list holding one.
    public var holdsAsset: Bool {
        switch self {
        case .asset: true
        case .list(let items): items.first.map { if case .asset = $0 { true } else { false } } ?? false
        default: false
        }
    }

    /// The checksums and sizes of the saved assets the value holds.
    package var storedAssets: [String: Int64] {
        var found: [String: Int64] = [:]
        _ = mappingAssets { asset in
            if case .stored(let sum, let size) = asset.content { found[sum] = size }
            return asset
        }
        return found
    }

    /// The value with every asset in it changed by `change` (lists item by item).
    package func mappingAssets(_ change: (Asset) throws -> Asset) rethrows -> FieldValue {
        switch self {
        case .asset(let a): return .asset(try change(a))
        case .list(let items) where holdsAsset:
            return .list(
                try items.map {
                    if case .asset(let a) = $0 { return .asset(try change(a)) }
                    return $0
                }
            )
        default: return self
        }
    }
}

/// A place on Earth, as a location field holds it: its coordinates, and what else a
/// `CLLocation` says where it was given (CloudKit keeps all eight keys of a location).
///
/// ```swift
/// var here = Location(latitude: 38.72, longitude: -9.14)
/// here[.altitude] = 95
/// here.timestamp = Date()
/// ```
public struct Location: Hashable, Sendable, CustomStringConvertible {
    /// Degrees north of the equator, -90...90.
    public var latitude: Double
    /// Degrees east of Greenwich, -180...180.
    public var longitude: Double
    /// When the place was measured, if given.
    public var timestamp: Date?
    private var details: [Detail: Double] = [:]

    /// The numbers a location may carry beside its coordinates, named as CloudKit names them.
    /// ShareFlow keeps what it was given and judges nothing but that each is finite (a
    /// `CLLocation` gives a negative accuracy for "unknown").
    public enum Detail: String, CaseIterable, Sendable, Hashable {
        case horizontalAccuracy, verticalAccuracy, altitude, speed, course

        /// The key the store's compact form keeps it under.
        var storedKey: String {
            switch self {
            case .horizontalAccuracy: "ha"
            case .verticalAccuracy: "va"
            case .altitude: "al"
            case .speed: "sp"
            case .course: "co"
            }
        }
    }

    /// A place at these coordinates, unchecked: `problem` says whether it is one.
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    /// One of the numbers beside the coordinates, or nil where it was not given.
    public subscript(detail: Detail) -> Double? {
        get { details[detail] }
        set { details[detail] = newValue }
    }

    /// The coordinates, then each other key given in one fixed order: a query's text (its
    /// continuation marker names it) is the same in every process.
    public var description: String {
        var parts = ["\(latitude)", "\(longitude)"]
        for detail in Detail.allCases { if let v = details[detail] { parts.append("\(detail.rawValue): \(v)") } }
        if let t = timestamp { parts.append("timestamp: \(t.timeIntervalSince1970)") }
        return "Location(" + parts.joined(separator: ", ") + ")"
    }

    /// Whether the location holds more than its coordinates.
    public var hasDetails: Bool { !details.isEmpty || timestamp != nil }

    /// Why this is no place, or nil.
    public var problem: String? {
        guard latitude.isFinite, (-90...90).contains(latitude) else { return "latitude \(latitude) is not within -90...90" }
        guard longitude.isFinite, (-180...180).contains(longitude) else { return "longitude \(longitude) is not within -180...180" }
        for detail in Detail.allCases {
            if let v = details[detail], !v.isFinite { return "\(detail.rawValue) \(v) is not a finite number" }
        }
        if let t = timestamp, !t.timeIntervalSince1970.isFinite { return "timestamp \(t.timeIntervalSince1970) is not a finite time" }
        return nil
    }
}

/// What happens to a record when the record its reference field names is deleted
/// (`CKRecord.ReferenceAction`). Kept with the value; ShareFlow does not cascade deletes.
public enum ReferenceAction: String, Sendable, CaseIterable, Codable {
    case none, deleteSelf
}
