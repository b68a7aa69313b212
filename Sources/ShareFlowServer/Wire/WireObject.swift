import Foundation

/// A JSON object crossing from the engine's thread to the connection's, where it is encoded:
/// the engine's one thread does not spend its time writing JSON. Unchecked: it holds only
/// immutable values (strings, numbers, arrays and dictionaries of them), not changed after it
/// crosses.
struct WireObject: @unchecked Sendable {
    let object: WireFormat.Object

    init(_ object: WireFormat.Object) { self.object = object }

    /// The object as JSON, slashes as they are (`WireJSON`).
    var json: [UInt8] {
        if let bytes = try? WireJSON.bytes(object) { return bytes }
        // What WireJSON cannot write, JSONSerialization cannot either; answered as before.
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.withoutEscapingSlashes])) ?? Data("{}".utf8))
    }
}
