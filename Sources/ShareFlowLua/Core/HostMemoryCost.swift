import Foundation
import ShareFlow

/// What a host object holds in Swift memory, roughly: charged against the memory cap of a
/// state that keeps it (SPEC §8), so records a plugin keeps alive count as its own bytes do.
protocol HostMemoryCost: AnyObject {
    var hostBytes: Int { get }
}

extension Record: HostMemoryCost {
    var hostBytes: Int {
        var bytes = 256 + recordType.utf8.count + recordID.recordName.utf8.count
        for (key, value) in fields { bytes += 48 + key.utf8.count + value.hostBytes }
        return bytes
    }
}

/// A view of a record's fields (`record.fields`) keeps the record alive: it costs what the
/// record does.
extension RecordFields: HostMemoryCost {
    var hostBytes: Int { record.hostBytes }
}

extension FieldValue {
    var hostBytes: Int {
        switch self {
        case .string(let s): return 16 + s.utf8.count
        case .bytes(let d): return 16 + d.count
        case .list(let items): return items.reduce(16) { $0 + 16 + $1.hostBytes }
        case .reference(let id, _): return 64 + id.recordName.utf8.count
        default: return 16
        }
    }
}
