import CLua

/// A Lua value copied into Swift. Tables are copied deeply (cycles are refused);
/// functions and userdata are kept as references into the state that made them.
public enum LuaValue: Hashable, CustomStringConvertible {
    case `nil`
    case boolean(Bool)
    case integer(Int64)
    case number(Double)
    /// A Lua string that is valid UTF-8 (embedded zeros included).
    case string(String)
    /// A Lua string that is not valid UTF-8, byte for byte.
    case bytes([UInt8])
    case table(LuaTable)
    /// A function, userdata or thread, held by a registry reference.
    case reference(LuaReference)

    public var description: String {
        switch self {
        case .nil: return "nil"
        case .boolean(let b): return String(b)
        case .integer(let i): return String(i)
        case .number(let d): return String(d)
        case .string(let s): return s
        case .bytes(let b): return "<\(b.count) bytes>"
        case .table(let t): return "table(\(t.array.count) items, \(t.hash.count) keys)"
        case .reference(let r): return "<\(r.typeName)>"
        }
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}

/// A Lua table copied into Swift: the sequence `1...n` in `array`, every other key in `hash`.
public struct LuaTable: Hashable {
    public var array: [LuaValue]
    public var hash: [LuaValue: LuaValue]
    public init(array: [LuaValue] = [], hash: [LuaValue: LuaValue] = [:]) {
        self.array = array
        self.hash = hash
    }
    public subscript(key: String) -> LuaValue? { hash[.string(key)] }
}

/// A Lua value that has no Swift copy (function, userdata, thread), pinned in the registry
/// until this object is released.
public final class LuaReference: Hashable {
    let lifetime: LuaStateLifetime
    let ref: Int32
    public let typeName: String

    init(lifetime: LuaStateLifetime, ref: Int32, typeName: String) {
        self.lifetime = lifetime
        self.ref = ref
        self.typeName = typeName
    }

    deinit {
        if let L = lifetime.L { luaL_unref(L, clua_registryindex(), ref) }
    }

    public static func == (a: LuaReference, b: LuaReference) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// Whether a `LuaState` is still open: its `lua_State *` until it closes, then nil.
final class LuaStateLifetime {
    // Read on every hook call; set once, on the state's thread, when it closes.
    @exclusivity(unchecked) var L: OpaquePointer?
}
