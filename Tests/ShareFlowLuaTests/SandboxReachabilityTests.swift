import CLua
import CShareFlowSupport
import Foundation
import ShareFlow
import ShareFlowTestKit
import XCTest

@testable import ShareFlowLua

/// The sandbox is an allow-list by construction (SPEC §8): everything a plugin can reach —
/// its globals, `package.loaded`, the registry, the metatables of strings and of host objects,
/// the upvalues of every function — is walked, and every C function of Lua's own library found
/// is held against the list of names a plugin may have. A library function added later (by
/// ShareFlow or by a new Lua) fails this test instead of leaking.
final class SandboxReachabilityTests: XCTestCase {
    /// What a sandboxed state may reach of Lua's library, named as in a full state (`lib.name`,
    /// `_G.name` for the base library, `string metatable.__op` for string arithmetic). The
    /// sandbox's own functions (load, setmetatable, collectgarbage, the bounded string and table
    /// functions, tracked coroutines) are ShareFlow's code, not Lua's, and are not listed.
    static let allowed: Set<String> = {
        var names: Set<String> = []
        for f in [
            "assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall", "print", "rawequal",
            "rawget", "rawlen", "rawset", "select", "tonumber", "tostring", "type",
        ] { names.insert("_G." + f) }
        for f in ["close", "create", "isyieldable", "resume", "running", "status", "yield"] { names.insert("coroutine." + f) }
        names.insert("table.pack")
        for f in ["byte", "char", "dump", "format", "len", "lower", "pack", "packsize", "reverse", "sub", "unpack", "upper"] {
            names.insert("string." + f)
        }
        for f in [
            "abs", "acos", "asin", "atan", "ceil", "cos", "deg", "exp", "floor", "fmod", "log", "max", "min",
            "modf", "rad", "random", "randomseed", "sin", "sqrt", "tan", "tointeger", "type", "ult",
        ] {
            names.insert("math." + f)
        }
        for f in ["char", "codepoint", "codes", "offset"] { names.insert("utf8." + f) }
        for f in ["clock", "date", "difftime", "time"] { names.insert("os." + f) }
        for f in ["__add", "__sub", "__mul", "__mod", "__pow", "__div", "__idiv", "__unm"] {
            names.insert("string metatable." + f)
        }
        return names
    }()

    /// Every C function of a full state (all of Lua's libraries), by address, with every path
    /// that reaches it (`math.atan` is also a compatibility name): the names the allow-list
    /// speaks in.
    static func referenceNames() -> [UnsafeRawPointer: Set<String>] {
        let L = luaL_newstate()!
        defer { lua_close(L) }
        luaL_openlibs(L)
        var walk = Walk(L)
        lua_getfield(L, clua_registryindex(), LUA_LOADED_TABLE)
        walk.visitTable(at: lua_gettop(L), path: "", flat: true)
        lua_pushstring(L, "")
        if lua_getmetatable(L, -1) != 0 { walk.visit(at: lua_gettop(L), path: "string metatable") }
        lua_settop(L, 0)
        lua_pushvalue(L, clua_registryindex())
        walk.visit(at: lua_gettop(L), path: "registry")
        walk.drain()
        var names: [UnsafeRawPointer: Set<String>] = [:]
        for (address, path) in walk.cFunctions { names[address, default: []].insert(path) }
        return names
    }

    /// A breadth-first walk over tables (keys and values), metatables, userdata's user values
    /// and functions' upvalues, using only raw access (no metamethod runs).
    struct Walk {
        let L: OpaquePointer
        var seen: Set<UnsafeRawPointer> = []
        var cFunctions: [(UnsafeRawPointer, String)] = []
        /// Registry refs of values still to visit, with their paths (the stack stays small).
        var queue: [(Int32, String)] = []
        let holder: Int32

        init(_ L: OpaquePointer) {
            self.L = L
            lua_createtable(L, 0, 0)
            holder = luaL_ref(L, clua_registryindex())
        }

        /// Queues the value at `index` (not popped).
        mutating func visit(at index: Int32, path: String) {
            let type = lua_type(L, index)
            guard type == LUA_TTABLE || type == LUA_TFUNCTION || type == LUA_TUSERDATA || type == LUA_TTHREAD else { return }
            // A C function is recorded under every path that reaches it (its names).
            if lua_iscfunction(L, index) != 0, let f = lua_tocfunction(L, index) {
                cFunctions.append((unsafeBitCast(f, to: UnsafeRawPointer.self), path))
            }
            guard let p = lua_topointer(L, index), seen.insert(p).inserted else { return }
            lua_rawgeti(L, clua_registryindex(), lua_Integer(holder))
            lua_pushvalue(L, index)
            let n = lua_Integer(lua_rawlen(L, -2) + 1)
            lua_rawseti(L, -2, n)
            clua_pop(L, 1)
            queue.append((Int32(n), path))
        }

        /// The library tables of `_LOADED` name their functions `lib.name`.
        mutating func visitTable(at index: Int32, path: String, flat: Bool) {
            lua_pushnil(L)
            while lua_next(L, index) != 0 {
                let key = lua_type(L, -2) == LUA_TSTRING ? String(cString: lua_tolstring(L, -2, nil)) : "?"
                visit(at: lua_gettop(L), path: flat ? key : path + "." + key)
                clua_pop(L, 1)
            }
        }

        mutating func drain() {
            var i = 0
            while i < queue.count {
                let (slot, path) = queue[i]
                i += 1
                lua_rawgeti(L, clua_registryindex(), lua_Integer(holder))
                lua_rawgeti(L, -1, lua_Integer(slot))
                let v = lua_gettop(L)
                switch lua_type(L, v) {
                case LUA_TTABLE:
                    lua_pushnil(L)
                    while lua_next(L, v) != 0 {
                        let key: String
                        switch lua_type(L, -2) {
                        case LUA_TSTRING: key = String(cString: lua_tolstring(L, -2, nil))
                        case LUA_TNUMBER: key = "[\(clua_tointeger(L, -2))]"
                        default: key = "[\(String(cString: lua_typename(L, lua_type(L, -2))))]"
                        }
                        visit(at: lua_gettop(L) - 1, path: path + "[key " + key + "]")
                        visit(at: lua_gettop(L), path: path + "." + key)
                        clua_pop(L, 1)
                    }
                case LUA_TFUNCTION:
                    var u: Int32 = 1
                    while lua_getupvalue(L, v, u) != nil {
                        visit(at: lua_gettop(L), path: path + "^\(u)")
                        clua_pop(L, 1)
                        u += 1
                    }
                case LUA_TUSERDATA:
                    var u: Int32 = 1
                    while lua_getiuservalue(L, v, u) != LUA_TNONE {
                        visit(at: lua_gettop(L), path: path + ".uservalue\(u)")
                        clua_pop(L, 1)
                        u += 1
                    }
                    clua_pop(L, 1)
                default: break
                }
                if lua_getmetatable(L, v) != 0 {
                    visit(at: lua_gettop(L), path: path + ".<metatable>")
                    clua_pop(L, 1)
                }
                lua_settop(L, v - 2)
            }
        }
    }

    /// Where the machine code at `address` lives: Lua's shared library, or elsewhere.
    static func isLuaLibrary(_ address: UnsafeRawPointer) -> Bool {
        luaLibraryRanges.contains { $0.contains(UInt(bitPattern: address)) }
    }

    /// The address ranges Lua's shared library is mapped at in this process.
    static let luaLibraryRanges: [Range<UInt>] = {
        // procfs reports a size of 0: read to the end rather than by size.
        let maps = String(decoding: FileHandle(forReadingAtPath: "/proc/self/maps")?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        return maps.split(separator: "\n").compactMap { line in
            guard line.contains("liblua") else { return nil }
            let bounds = line.split(separator: " ")[0].split(separator: "-")
            guard bounds.count == 2, let lo = UInt(bounds[0], radix: 16), let hi = UInt(bounds[1], radix: 16) else { return nil }
            return lo..<hi
        }
    }()

    func testLuaIsASharedLibraryHere() {
        XCTAssertFalse(SandboxReachabilityTests.luaLibraryRanges.isEmpty, "liblua is not mapped: the walk could not tell Lua's functions")
    }

    /// Walks a state from its registry (globals, `package.loaded`, host classes' metatables and
    /// every ref), the string metatable and what `extra` leaves on the stack; returns each of
    /// Lua's C functions found that the allow-list does not name.
    static func forbidden(in lua: LuaState, reference: [UnsafeRawPointer: Set<String>]) throws -> [String] {
        var found: [(UnsafeRawPointer, String)] = []
        try lua.protected { lua in
            let L = lua.L
            var walk = Walk(L)
            lua_rawgeti(L, clua_registryindex(), lua_Integer(LUA_RIDX_GLOBALS))
            walk.visit(at: lua_gettop(L), path: "_G")
            lua_getfield(L, clua_registryindex(), LUA_LOADED_TABLE)
            walk.visit(at: lua_gettop(L), path: "package.loaded")
            lua_pushstring(L, "")
            if lua_getmetatable(L, -1) != 0 { walk.visit(at: lua_gettop(L), path: "string metatable") }
            lua_pushvalue(L, clua_registryindex())
            walk.visit(at: lua_gettop(L), path: "registry")
            lua_settop(L, 0)
            walk.drain()
            found = walk.cFunctions
            return 0
        }
        var bad: [String] = []
        var unnamed = 0
        for (address, path) in found where isLuaLibrary(address) {
            guard let names = reference[address] else {
                unnamed += 1
                bad.append("\(path): a function of Lua's library that no library table names")
                continue
            }
            if allowed.isDisjoint(with: names) { bad.append("\(path) is \(names.sorted().joined(separator: " or "))") }
        }
        return bad
    }

    var dir: URL!

    override func setUpWithError() throws {
        dir = try makeTemporaryFolder("sf-reach")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    /// The reference itself knows the dangerous functions: the test would be blind otherwise.
    func testReferenceNamesTheLibraries() {
        let names = SandboxReachabilityTests.referenceNames().values.reduce(into: Set<String>()) { $0.formUnion($1) }
        for name in ["io.open", "os.execute", "debug.getregistry", "package.loadlib", "_G.dofile", "_G.load", "string.dump"] {
            XCTAssertTrue(names.contains(name), "reference lacks \(name)")
        }
    }

    /// A full state fails the walk: the walk finds what it should refuse.
    func testTheWalkRefusesAFullState() throws {
        let lua = try LuaState()
        let bad = try SandboxReachabilityTests.forbidden(in: lua, reference: SandboxReachabilityTests.referenceNames())
        for name in ["io.open", "os.execute", "debug.sethook", "package.loadlib", "_G.dofile"] {
            XCTAssertTrue(bad.contains { $0.contains(" is ") && $0.contains(name) }, "a full state should show \(name): \(bad.prefix(5))")
        }
    }

    /// A plugin, after it has run its setup and handled events (so host objects, requests and
    /// the ctx exist in its state), reaches nothing of Lua's library outside the allow-list.
    func testPluginStateReachesOnlyTheAllowList() throws {
        let folder = dir.appendingPathComponent("walker")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try """
        local helper = require("helper")
        return {
          name = "walker", version = "1.0", description = "keeps what it is given",
          setup = function(ctx)
            kept = { ctx = ctx, helper = helper, co = coroutine.create(function() end) }
            ctx.on("share.saved", function(e) kept.event = e; kept.share = e.share end)
            ctx.on("share.accepted", function(e) kept.accept = e end)
            ctx.policy("share.accept", function(req) kept.request = req; return true end, { name = "keep" })
          end,
        }
        """.write(to: folder.appendingPathComponent("init.lua"), atomically: true, encoding: .utf8)
        try "return { answer = 42 }".write(to: folder.appendingPathComponent("helper.lua"), atomically: true, encoding: .utf8)
        let engine = Engine(store: try Store(path: ":memory:"))
        engine.logger.logLevel = .critical
        let manager = PluginManager(
            engine: engine,
            directories: [dir.path],
            config: PluginConfig(),
            dataDirectory: dir.appendingPathComponent("data").path
        )
        try manager.load("walker")
        let host = try ScriptHost(engine: engine)
        try host.run(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "owner@example.com" }
            sf.accounts.create{ email = "bob@example.com" }
            local c = sf.as("owner@example.com"):container("iCloud.p")
            local zone = c.privateCloudDatabase:saveZone("Z")
            local r = sf.Record{ recordType = "Doc", recordName = "r", zone = zone, fields = { n = 1 } }
            local s = sf.Share{ rootRecord = r }
            s:addParticipant(c:fetchShareParticipants{ "bob@example.com" }[1])
            assert(c.privateCloudDatabase:modifyRecords{ save = { r, s } })
            local bc = sf.as("bob@example.com"):container("iCloud.p")
            local m = bc:fetchShareMetadata{ s.url }
            assert(bc:acceptShares{ m[s.url] })
            """
        )
        let plugin = try XCTUnwrap(manager.loaded["walker"])
        let kept = try plugin.run("return type(kept.event), type(kept.request), type(kept.share), kept.helper.answer")
        XCTAssertEqual(kept, [.string("table"), .string("table"), .string("userdata"), .integer(42)])
        let bad = try SandboxReachabilityTests.forbidden(in: plugin.lua, reference: SandboxReachabilityTests.referenceNames())
        XCTAssertEqual(bad, [], "a plugin reaches functions outside the allow-list")
    }

    /// `run --sandbox`'s state too.
    func testSandboxedScriptStateReachesOnlyTheAllowList() throws {
        let engine = Engine(store: try Store(path: ":memory:"))
        let host = try ScriptHost(engine: engine, sandboxFolder: dir.path)
        try host.run(
            """
            local sf = require("shareflow")
            kept = { sf.accounts.create{ email = "a@example.com" }, sf.Record{ recordType = "T" } }
            """
        )
        let bad = try SandboxReachabilityTests.forbidden(in: host.lua, reference: SandboxReachabilityTests.referenceNames())
        XCTAssertEqual(bad, [])
    }

    /// What the escape looked like: `require` of a standard library the prelude had only
    /// hidden from the globals.
    func testRequireFindsNoStandardLibraryOutsideTheAllowList() throws {
        let engine = Engine(store: try Store(path: ":memory:"))
        let host = try ScriptHost(engine: engine, sandboxFolder: dir.path)
        let results = try host.run(
            """
            local out = {}
            for _, name in ipairs{ "io", "os", "debug", "package", "string", "coroutine", "utf8" } do
              local ok, lib = pcall(require, name)
              out[#out + 1] = name .. "=" .. (ok and type(lib) or "error")
            end
            out[#out + 1] = "os.execute=" .. type(os.execute)
            out[#out + 1] = "loadlib=" .. type(package.loadlib)
            out[#out + 1] = "searchers=" .. type(package.searchers)
            out[#out + 1] = "dofile=" .. type(dofile) .. ",loadfile=" .. type(loadfile) .. ",warn=" .. type(warn)
            return table.concat(out, " ")
            """
        )
        XCTAssertEqual(
            results,
            [
                .string(
                    "io=error os=table debug=error package=table string=table coroutine=table utf8=table os.execute=nil loadlib=nil searchers=nil dofile=nil,loadfile=nil,warn=nil"
                )
            ]
        )
    }
}
