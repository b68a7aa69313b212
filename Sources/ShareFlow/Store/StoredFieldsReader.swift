import Foundation

/// Reads a record's stored fields in the one form ShareFlow writes them (`StoredFields`:
/// `JSONEncoder`'s compact output of `[String: FieldValue]`), in place from the column's bytes.
///
/// A fetch of a small record spent more on `JSONDecoder` (its generic `Decodable` machinery, a
/// keyed container per value) than on everything else it did. This reader knows the shapes
/// `FieldValue.encode(to:)` writes and nothing more: at anything else — whitespace, an unknown
/// or repeated key, a number it would have to round, a value of another shape — it returns nil
/// and the caller decodes with `JSONDecoder`, which gives the same value or names the damage.
/// So it can only be faster, never different: `StoredFieldsReaderTests` holds the two against
/// each other on every value type and on the inputs where they part.
struct StoredFieldsReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    /// Where the reading is: `StoredFieldsChecker` reads scalars through this reader and
    /// carries on from here.
    private(set) var at = 0

    /// The fields `json` holds, or nil when it is not in ShareFlow's own form.
    static func read(_ json: UnsafeBufferPointer<UInt8>) -> [String: FieldValue]? {
        var reader = StoredFieldsReader(bytes: json)
        guard let fields = reader.object(), reader.at == json.count else { return nil }
        return fields
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// A reader of one scalar at `at` (`StoredFieldsChecker`: the same grammar, not a copy of it).
    init(bytes: UnsafeBufferPointer<UInt8>, at: Int) {
        self.bytes = bytes
        self.at = at
    }

    private var next: UInt8? { at < bytes.count ? bytes[at] : nil }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard next == byte else { return false }
        at += 1
        return true
    }

    /// `{"name":value,…}`: the fields.
    private mutating func object() -> [String: FieldValue]? {
        guard take(UInt8(ascii: "{")) else { return nil }
        if take(UInt8(ascii: "}")) { return [:] }
        // Sized once: each field is a name then `:{`, which nothing else in the form holds
        // outside a string (so this counts each field, and a few more at worst).
        var fields = [String: FieldValue](minimumCapacity: fieldCountEstimate())
        repeat {
            guard let name = string(), take(UInt8(ascii: ":")), let value = value(depth: 0),
                fields.updateValue(value, forKey: name) == nil
            else { return nil }
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "}")) ? fields : nil
    }

    /// The keys a field value's object may hold (`FieldValue.encode(to:)`), each one bit.
    private enum ValueKey: UInt32 {
        case s = 1
        case y = 2
        case r = 4
        case z = 8
        case o = 16
        case a = 32
        case i = 64
        case d = 128
        case t = 256
        case la = 512
        case lo = 1024
        case b = 2048
        case l = 4096
        case e = 8192
        // A location's keys beside its coordinates (`Location.Detail.storedKey`, `ts`).
        case ha = 16384
        case va = 32768
        case al = 65536
        case sp = 131_072
        case co = 262_144
        case ts = 524_288
        // A saved asset's checksum and size.
        case f = 1_048_576
        case n = 2_097_152

        /// The detail a location key holds, or nil for the timestamp and every other key.
        var detail: Location.Detail? {
            switch self {
            case .ha: .horizontalAccuracy
            case .va: .verticalAccuracy
            case .al: .altitude
            case .sp: .speed
            case .co: .course
            default: nil
            }
        }
    }

    /// A value's key, read from its bytes without making a string (a first sync reads one a
    /// field); anything longer than two letters, or escaped, is no key of ours.
    private mutating func valueKey() -> ValueKey? {
        guard take(UInt8(ascii: "\"")), bytes.count - at >= 2 else { return nil }
        let first = bytes[at]
        if bytes[at + 1] == UInt8(ascii: "\"") {
            at += 2
            switch first {
            case UInt8(ascii: "s"): return .s
            case UInt8(ascii: "y"): return .y
            case UInt8(ascii: "r"): return .r
            case UInt8(ascii: "z"): return .z
            case UInt8(ascii: "o"): return .o
            case UInt8(ascii: "a"): return .a
            case UInt8(ascii: "i"): return .i
            case UInt8(ascii: "d"): return .d
            case UInt8(ascii: "t"): return .t
            case UInt8(ascii: "b"): return .b
            case UInt8(ascii: "l"): return .l
            case UInt8(ascii: "e"): return .e
            case UInt8(ascii: "f"): return .f
            case UInt8(ascii: "n"): return .n
            default: return nil
            }
        }
        guard bytes.count - at >= 3, bytes[at + 2] == UInt8(ascii: "\"") else { return nil }
        let second = bytes[at + 1]
        at += 3
        switch (first, second) {
        case (UInt8(ascii: "l"), UInt8(ascii: "a")): return .la
        case (UInt8(ascii: "l"), UInt8(ascii: "o")): return .lo
        case (UInt8(ascii: "h"), UInt8(ascii: "a")): return .ha
        case (UInt8(ascii: "v"), UInt8(ascii: "a")): return .va
        case (UInt8(ascii: "a"), UInt8(ascii: "l")): return .al
        case (UInt8(ascii: "s"), UInt8(ascii: "p")): return .sp
        case (UInt8(ascii: "c"), UInt8(ascii: "o")): return .co
        case (UInt8(ascii: "t"), UInt8(ascii: "s")): return .ts
        default: return nil
        }
    }

    /// How many `":{` the bytes hold from here: at least the fields left (`memchr` finds
    /// each colon, so a long string value costs next to nothing).
    private func fieldCountEstimate() -> Int {
        guard let base = bytes.baseAddress else { return 1 }
        var n = 0
        var i = at
        while i + 1 < bytes.count, let hit = memchr(base + i, Int32(UInt8(ascii: ":")), bytes.count - i - 1) {
            i = UnsafePointer<UInt8>(hit.assumingMemoryBound(to: UInt8.self)) - base
            if i > 0, base[i - 1] == UInt8(ascii: "\""), base[i + 1] == UInt8(ascii: "{") { n += 1 }
            i += 1
        }
        return max(n, 1)
    }

    /// One field value: an object of the keys `FieldValue.encode(to:)` writes for its case.
    /// `wrapped`: inside an encrypted value, which holds no other.
    private mutating func value(depth: Int, wrapped: Bool = false) -> FieldValue? {
        // Lists hold no lists (R23); a stored one is left to the decoder, as is any depth.
        guard depth < 2, take(UInt8(ascii: "{")) else { return nil }
        var seen: UInt32 = 0
        var count = 0
        var first = ValueKey.s
        var s: String?
        var number: Double?
        var integer: Int64?
        var boolean: Bool?
        var list: [FieldValue]?
        var latitude: Double?
        var longitude: Double?
        var location: Location?
        var encrypted: FieldValue?
        var zone: String?
        var owner: String?
        var action: String?
        repeat {
            guard let key = valueKey(), take(UInt8(ascii: ":")), seen & key.rawValue == 0, count < 8 else { return nil }
            if count == 0 { first = key }
            seen |= key.rawValue
            count += 1
            switch key {
            case .s, .y, .r, .f:
                s = string()
                if s == nil { return nil }
            case .z:
                zone = string()
                if zone == nil { return nil }
            case .o:
                owner = string()
                if owner == nil { return nil }
            case .a:
                action = string()
                if action == nil { return nil }
            case .i, .n:
                integer = self.integer()
                if integer == nil { return nil }
            case .d, .t:
                number = double()
                if number == nil { return nil }
            case .e:
                // An encrypted value wraps a whole field: read at the top only, once.
                guard depth == 0, !wrapped, let inner = value(depth: depth, wrapped: true) else { return nil }
                encrypted = inner
            case .ha, .va, .al, .sp, .co, .ts:
                guard let v = double() else { return nil }
                var l = location ?? Location(latitude: 0, longitude: 0)
                if let detail = key.detail { l[detail] = v } else { l.timestamp = Date(timeIntervalSince1970: v) }
                location = l
            case .la:
                latitude = double()
                if latitude == nil { return nil }
            case .lo:
                longitude = double()
                if longitude == nil { return nil }
            case .b:
                boolean = self.boolean()
                if boolean == nil { return nil }
            case .l:
                list = self.list(depth: depth + 1)
                if list == nil { return nil }
            }
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")) else { return nil }
        // A location: its coordinates, and any of its six other keys.
        if seen & ValueKey.la.rawValue != 0 {
            guard let latitude, let longitude, seen & ~(ValueKey.la.rawValue | ValueKey.lo.rawValue | Self.locationDetailKeys) == 0 else {
                return nil
            }
            var l = location ?? Location(latitude: latitude, longitude: longitude)
            (l.latitude, l.longitude) = (latitude, longitude)
            return .location(l)
        }
        // An asset: exactly its checksum and size, both well formed (else the decoder names the damage).
        if seen == ValueKey.f.rawValue | ValueKey.n.rawValue {
            guard let s, AssetBlobs.isChecksum(s), let integer, integer >= 0 else { return nil }
            return .asset(Asset(checksum: s, size: integer))
        }
        // Exactly the keys one case writes; any other mix is the decoder's to judge.
        switch (count, first) {
        case (1, .s): return s.map(FieldValue.string)
        case (1, .i): return integer.map(FieldValue.integer)
        case (1, .d): return number.map(FieldValue.double)
        case (1, .b): return boolean.map(FieldValue.boolean)
        case (1, .y): return s.flatMap { Data(base64Encoded: $0) }.map(FieldValue.bytes)
        case (1, .t): return number.map { .date(Date(timeIntervalSince1970: $0)) }
        case (1, .l): return list.map(FieldValue.list)
        case (1, .e): return encrypted.map(FieldValue.encrypted)
        case (3, _), (4, _):
            guard let s, let zone, let owner, count == (action == nil ? 3 : 4) else { return nil }
            let referenceAction: ReferenceAction
            if let action {
                guard let a = ReferenceAction(rawValue: action) else { return nil }
                referenceAction = a
            } else {
                referenceAction = .none
            }
            guard seen & ValueKey.r.rawValue != 0 else { return nil }
            return .reference(RecordID(recordName: s, zoneID: RecordZoneID(zoneName: zone, ownerName: owner)), action: referenceAction)
        default: return nil
        }
    }

    /// The bits of a location's keys beside its coordinates.
    private static let locationDetailKeys: UInt32 = [ValueKey.ha, .va, .al, .sp, .co, .ts].reduce(0) { $0 | $1.rawValue }

    private mutating func list(depth: Int) -> [FieldValue]? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var items: [FieldValue] = []
        if take(UInt8(ascii: "]")) { return items }
        repeat {
            guard let item = value(depth: depth) else { return nil }
            items.append(item)
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "]")) ? items : nil
    }

    mutating func boolean() -> Bool? {
        if matches("true") { return true }
        if matches("false") { return false }
        return nil
    }

    private mutating func matches(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard bytes.count - at >= count else { return false }
        for i in 0..<count where bytes[at + i] != word.utf8Start[i] { return false }
        at += count
        return true
    }

    /// `-?(0|[1-9][0-9]*)` that fits in an Int64; anything with a fraction or an exponent is
    /// the decoder's.
    mutating func integer() -> Int64? {
        let negative = take(UInt8(ascii: "-"))
        guard let first = next, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { return nil }
        var magnitude: UInt64 = 0
        var digits = 0
        while let d = next, d >= UInt8(ascii: "0"), d <= UInt8(ascii: "9") {
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(d - UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }
            magnitude = sum
            digits += 1
            at += 1
        }
        guard first != UInt8(ascii: "0") || digits == 1 else { return nil }
        if let c = next, c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") { return nil }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { return nil }
        return Int64(magnitude)
    }

    /// A JSON number (its grammar checked here: `Double("inf")` or `"0x1p3"` are no JSON),
    /// read as the nearest double; one that is not finite is the decoder's.
    mutating func double() -> Double? {
        let start = at
        _ = take(UInt8(ascii: "-"))
        func digits(_ reader: inout StoredFieldsReader) -> Int {
            var n = 0
            while let d = reader.next, d >= UInt8(ascii: "0"), d <= UInt8(ascii: "9") {
                reader.at += 1
                n += 1
            }
            return n
        }
        let leading = at
        let whole = digits(&self)
        guard whole > 0, bytes[leading] != UInt8(ascii: "0") || whole == 1 else { return nil }
        if take(UInt8(ascii: ".")) { guard digits(&self) > 0 else { return nil } }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard digits(&self) > 0 else { return nil }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// A JSON string with its escapes; raw control characters, a lone surrogate or a bad
    /// escape are the decoder's (it rejects them).
    private mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = at
        // The common case: no escape, read in one piece, eight bytes a step (`next` checked
        // the bound and made an optional per byte: a fifth of a first sync's decoding of a
        // 100-character string, issue 48, callgrind).
        if let base = bytes.baseAddress { at = StoredFieldsChecker.plainRunEnd(base, from: at, count: bytes.count) }
        guard let stop = next, stop >= 0x20 else { return nil }
        if stop == UInt8(ascii: "\"") {
            at += 1
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at - 1]), as: UTF8.self)
        }
        var utf8 = Array(bytes[start..<at])
        while let c = next {
            at += 1
            switch c {
            case UInt8(ascii: "\""):
                return String(decoding: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let e = next else { return nil }
                at += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(e)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    guard let unit = hex4() else { return nil }
                    var scalar: Unicode.Scalar?
                    if (0xD800..<0xDC00).contains(unit) {
                        guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                        scalar = Unicode.Scalar(0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00))
                    } else {
                        scalar = Unicode.Scalar(UInt32(unit))
                    }
                    guard let scalar else { return nil }
                    utf8.append(contentsOf: String(Character(scalar)).utf8)
                default: return nil
                }
            default:
                guard c >= 0x20 else { return nil }
                utf8.append(c)
            }
        }
        return nil
    }

    private mutating func hex4() -> UInt16? {
        guard bytes.count - at >= 4 else { return nil }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let c = bytes[at]
            let digit: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt16(digit)
            at += 1
        }
        return value
    }
}
