import Foundation
import ShareFlow

/// What a host object holds in Swift memory, roughly, or nil for the small ones: charged
/// against the memory cap of a state that keeps it (SPEC §8), so records a plugin keeps alive
/// count as its own bytes do. New objects are charged by their class (`LuaClass.hostCost`);
/// this finds the cost of one whose fields changed (`LuaState.recharge`).
func hostBytes(of object: AnyObject) -> Int? {
    if let record = object as? Record { return record.hostBytes }
    if let view = object as? RecordFields { return view.record.hostBytes }
    return nil
}

extension Record {
    var hostBytes: Int {
        var bytes = 256 + recordType.utf8.count + recordID.recordName.utf8.count
        for (key, value) in fields { bytes += 48 + key.utf8.count + value.hostBytes }
        return bytes
    }
}

extension FieldValue {
    var hostBytes: Int {
        switch self {
        case .string(let s): return 16 + s.utf8.count
        case .bytes(let d): return 16 + d.count
        case .list(let items): return items.reduce(16) { $0 + 16 + $1.hostBytes }
        case .reference(let id, _): return 64 + id.recordName.utf8.count
        case .asset(let a): return a.content.hostBytes
        default: return 16
        }
    }
}

extension Asset.Content {
    /// Bytes in memory count whole; every other kind is a name.
    var hostBytes: Int {
        if case .data(let d) = self { return 16 + d.count }
        return 96
    }
}
