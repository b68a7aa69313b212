import CLua
import Foundation
import ShareFlow

/// `sf.json`: `encode`, JSON for logs.
extension ShareFlowModule {
    static var jsonFunctions: [ModuleFunction] {
        [
            (
                "encode",
                { call in
                    var out: [UInt8] = []
                    var seen = Set<UnsafeRawPointer>()
                    var budget = maxJSONValues
                    try encodeJSON(call, 1, into: &out, depth: 0, seen: &seen, budget: &budget)
                    out.withUnsafeBytes { _ = lua_pushlstring(call.L, $0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count) }
                    return 1
                }
            )
        ]
    }

    /// JSON for a Lua value: tables with only 1…n keys are arrays; objects print as their
    /// `tostring`; cycles and functions are errors naming the problem.
    /// The most values one `sf.json.encode` visits, and the longest text it makes: a table
    /// shared many times over (a DAG) or a long string repeated would otherwise make the host
    /// work and grow without end, out of the budget's reach.
    static let maxJSONValues = 100_000
    static let maxJSONBytes = 16 << 20

    static func encodeJSON(
        _ call: LuaCall,
        _ index: Int32,
        into out: inout [UInt8],
        depth: Int,
        seen: inout Set<UnsafeRawPointer>,
        budget: inout Int
    ) throws {
        let L = call.L
        let lua = call.state
        let i = lua_absindex(L, index)
        budget -= 1
        if budget & 1023 == 0 { try lua.checkBudget() }
        guard budget >= 0 else { throw call.argumentError(1, "more than \(maxJSONValues) values to encode") }
        guard out.count <= maxJSONBytes else { throw call.argumentError(1, "encoded text longer than \(maxJSONBytes >> 20) MiB") }
        guard depth < LuaState.maxDepth else {
            throw call.argumentError(1, "table nested more than \(LuaState.maxDepth) levels deep")
        }
        try lua.checkStack(3)
        switch lua_type(L, i) {
        case LUA_TNIL, LUA_TNONE: out.add("null")
        case LUA_TBOOLEAN: out.add(lua_toboolean(L, i) != 0 ? "true" : "false")
        case LUA_TNUMBER:
            if lua_isinteger(L, i) != 0 {
                out.add(String(clua_tointeger(L, i)))
            } else {
                let d = clua_tonumber(L, i)
                out.add(d.isFinite ? String(d) : "null")
            }
        case LUA_TSTRING: try quote(lua.string(at: i) ?? "", into: &out, call: call)
        case LUA_TTABLE:
            let id = lua_topointer(L, i)!
            guard seen.insert(id).inserted else { throw call.argumentError(1, "table contains a cycle") }
            defer { seen.remove(id) }
            let n = Int(lua_rawlen(L, i))
            var keys = 0
            lua_pushnil(L)
            while lua_next(L, i) != 0 {
                keys += 1
                lua.pop()
                try lua.budgetStep()
            }
            if keys == n && n > 0 {
                out.add("[")
                for k in 1...n {
                    if k > 1 { out.add(",") }
                    lua_rawgeti(L, i, lua_Integer(k))
                    try encodeJSON(call, -1, into: &out, depth: depth + 1, seen: &seen, budget: &budget)
                    lua.pop()
                }
                out.add("]")
            } else {
                out.add("{")
                // Keys first, raw: a key's __tostring (below) may change the table, and a
                // lua_next after that would raise here, in Swift.
                lua_createtable(L, Int32(clamping: keys), 0)
                let keyList = lua_gettop(L)
                var count: lua_Integer = 0
                lua_pushnil(L)
                while lua_next(L, i) != 0 {
                    lua.pop()
                    try lua.budgetStep()
                    lua_pushvalue(L, -1)
                    count += 1
                    lua_rawseti(L, keyList, count)
                }
                defer { lua_settop(L, keyList - 1) }
                for k in stride(from: 1, through: count, by: 1) {
                    lua_rawgeti(L, keyList, k)
                    let key: String
                    if lua_type(L, -1) == LUA_TSTRING {
                        key = lua.string(at: -1) ?? ""
                    } else {
                        key = ShareFlowModule.describe(lua, at: lua_absindex(L, -1))
                    }
                    if k > 1 { out.add(",") }
                    try quote(key, into: &out, call: call)
                    out.add(":")
                    lua_rawget(L, i)
                    try encodeJSON(call, -1, into: &out, depth: depth + 1, seen: &seen, budget: &budget)
                    lua.pop()
                }
                out.add("}")
            }
        case LUA_TUSERDATA:
            try quote(ShareFlowModule.describe(lua, at: i), into: &out, call: call)
        default:
            throw call.argumentError(1, "cannot encode a \(call.typeName(i)) as JSON")
        }
    }

    /// `s` as a JSON string, appended to `out`; the size cap and the budget are checked as it
    /// goes (a string can be long, and this runs in Swift, where no hook reaches).
    static func quote(_ s: String, into out: inout [UInt8], call: LuaCall) throws {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        var n = 0
        for b in s.utf8 {
            n += 1
            if n & 0xFFFF == 0 {
                try call.state.checkBudget()
                guard out.count <= maxJSONBytes else { throw call.argumentError(1, "encoded text longer than \(maxJSONBytes >> 20) MiB") }
            }
            switch b {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), b]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), b]
            case UInt8(ascii: "\n"): out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case ..<0x20: out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(b >> 4)], hex[Int(b & 15)]]
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension Array where Element == UInt8 {
    fileprivate mutating func add(_ text: String) { append(contentsOf: text.utf8) }
}
