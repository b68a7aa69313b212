import CLua

/// A Lua value copied into Swift. Tables are copied deeply (cycles are refused);
/// functions and userdata are kept as references into the state that made them.
///
/// ```swift
/// let value = try lua.run("return { 'a', 'b', n = 2 }").first
/// if case .table(let t)? = value {
///     print(t.array, t["n"] ?? .nil)   // [a, b] 2
/// }
/// try lua.push(.table(LuaTable(array: [.string("x")], hash: [.string("ok"): .boolean(true)])))
/// ```
public enum LuaValue: Hashable, CustomStringConvertible {
    /// `nil` (an absent value reads as nil too).
    case `nil`
    /// `true` or `false`.
    case boolean(Bool)
    /// A Lua integer (subtype of number).
    case integer(Int64)
    /// A Lua float.
    case number(Double)
    /// A Lua string that is valid UTF-8 (embedded zeros included).
    case string(String)
    /// A Lua string that is not valid UTF-8, byte for byte.
    case bytes([UInt8])
    /// A table, copied (`LuaTable`).
    case table(LuaTable)
    /// A function, userdata or thread, held by a registry reference.
    case reference(LuaReference)

    /// For messages: a scalar as text, a table by its counts, a reference by its type
    /// (`<function>`), bytes by their count.
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

    /// The string of a `.string`; nil for anything else (`.bytes` and numbers too).
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}

/// A Lua table copied into Swift: the sequence `1...n` in `array`, every other key in `hash`.
public struct LuaTable: Hashable {
    /// The sequence part, `t[1]` to `t[n]`.
    public var array: [LuaValue]
    /// Every other key and its value.
    public var hash: [LuaValue: LuaValue]
    /// A table of `array` and `hash` (integer keys `1...array.count` belong in `array`).
    public init(array: [LuaValue] = [], hash: [LuaValue: LuaValue] = [:]) {
        self.array = array
        self.hash = hash
    }
    /// `t[key]` for a string key (read in `hash`).
    public subscript(key: String) -> LuaValue? { hash[.string(key)] }
}

/// A Lua value that has no Swift copy (function, userdata, thread), pinned in the registry
/// until this object is released.
public final class LuaReference: Hashable {
    let lifetime: LuaStateLifetime
    let ref: Int32
    /// Lua's name of the value's type: `function`, `userdata` or `thread`.
    public let typeName: String

    init(lifetime: LuaStateLifetime, ref: Int32, typeName: String) {
        self.lifetime = lifetime
        self.ref = ref
        self.typeName = typeName
    }

    deinit {
        if let L = lifetime.L { luaL_unref(L, clua_registryindex(), ref) }
    }

    /// Identity: two references are equal only when they are the same object, even when they
    /// pin the same Lua value.
    public static func == (a: LuaReference, b: LuaReference) -> Bool { a === b }
    /// By identity, as `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// Whether a `LuaState` is still open: its `lua_State *` until it closes, then nil.
final class LuaStateLifetime {
    // Read on every hook call; set once, on the state's thread, when it closes.
    @exclusivity(unchecked) var L: OpaquePointer?
}
