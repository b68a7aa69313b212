import CLua
import Foundation
import XCTest

@testable import ShareFlowLua

final class LuaStateTests: XCTestCase {
    func testValuesRoundTrip() throws {
        let lua = try LuaState()
        let values: [LuaValue] = [
            .nil, .boolean(true), .boolean(false),
            .integer(0), .integer(Int64.max), .integer(Int64.min), .number(0.5), .number(-1e300),
            .string(""), .string("héllo"), .string("a\u{0}b\u{0}"), .bytes([0xff, 0x00, 0xfe]),
            .table(LuaTable(array: [.integer(1), .string("two"), .number(3.5)])),
            .table(LuaTable(hash: [.string("k"): .string("v"), .integer(10): .boolean(true)])),
            .table(
                LuaTable(
                    array: [.table(LuaTable(array: [.string("nested")]))],
                    hash: [.string("map"): .table(LuaTable(hash: [.string("x"): .integer(1)]))]
                )
            ),
        ]
        for v in values {
            try lua.push(v)
            XCTAssertEqual(try lua.value(at: -1), v, "round trip of \(v)")
            lua.pop()
        }
        XCTAssertEqual(lua.top, 0)
    }

    func testValuesFromLuaCode() throws {
        let lua = try LuaState()
        let r = try lua.run("return 1, 2.5, 'x\\0y', {1, 2, k = 'v'}, nil, true")
        XCTAssertEqual(r[0], .integer(1))
        XCTAssertEqual(r[1], .number(2.5))
        XCTAssertEqual(r[2], .string("x\u{0}y"))
        XCTAssertEqual(r[3], .table(LuaTable(array: [.integer(1), .integer(2)], hash: [.string("k"): .string("v")])))
        XCTAssertEqual(r[4], .nil)
        XCTAssertEqual(r[5], .boolean(true))
    }

    func testCyclicTableIsRefusedNotLooped() throws {
        let lua = try LuaState()
        try lua.load("local t = {}; t.self = t; return t", chunkName: "=cycle")
        try lua.call(arguments: 0, results: 1)
        XCTAssertThrowsError(try lua.value(at: -1))
    }

    func testSwiftFunctionCalledFromLua() throws {
        let lua = try LuaState()
        lua.push(function: "add") { call in
            let a = try call.integer(1)
            let b = try call.integer(2)
            lua_pushinteger(call.L, lua_Integer(a + b))
            return 1
        }
        lua.setGlobal("add")
        XCTAssertEqual(try lua.run("return add(2, 3)"), [.integer(5)])
        // A programming mistake names the function and the argument, as lauxlib does.
        let r = try lua.run("return pcall(add, 1, 'x')")
        XCTAssertEqual(r[0], .boolean(false))
        XCTAssertTrue(r[1].stringValue!.contains("bad argument #2 to 'add' (integer expected, got string)"), "\(r[1])")
    }

    struct Boom: Error, CustomStringConvertible { var description: String { "boom from Swift" } }

    /// A Swift error inside a function called from Lua is caught by Lua's pcall, 100,000
    /// times, and the process stays sound: no growth in Lua memory or resident memory.
    func testSwiftErrorCaughtByPcallWithoutLeak() throws {
        let lua = try LuaState()
        lua.push(function: "fail") { _ in throw Boom() }
        lua.setGlobal("fail")
        let loop = """
            local n, last = 0, nil
            for i = 1, ... do
              local ok, err = pcall(function() return fail(i, {i}) end)
              if not ok then n = n + 1; last = err end
            end
            collectgarbage()
            return n, last
            """
        func runLoop(_ count: Int) throws -> [LuaValue] {
            try lua.load(loop, chunkName: "=loop")
            lua_pushinteger(lua.L, lua_Integer(count))
            try lua.call(arguments: 1, results: 2)
            defer { lua.pop(2) }
            return [try lua.value(at: -2), try lua.value(at: -1)]
        }
        _ = try runLoop(10_000)  // warm up allocators
        let luaBefore = lua.memoryInUse
        let rssBefore = residentMemory()
        let r = try runLoop(100_000)
        XCTAssertEqual(r[0], .integer(100_000))
        XCTAssertTrue(r[1].stringValue!.contains("boom from Swift"), "\(r[1])")
        XCTAssertTrue(r[1].stringValue!.hasPrefix("loop:3:"), "error carries the Lua position: \(r[1])")
        XCTAssertLessThan(lua.memoryInUse - luaBefore, 64 * 1024, "Lua memory is stable")
        XCTAssertLessThan(residentMemory() - rssBefore, 8 * 1024 * 1024, "resident memory is stable")
        // The state is still sound.
        XCTAssertEqual(try lua.run("return 40 + 2"), [.integer(42)])
    }

    func testLuaErrorSurfacesAsThrownErrorWithTraceback() throws {
        let lua = try LuaState()
        XCTAssertThrowsError(try lua.run("local function inner() error('deep') end\ninner()", chunkName: "=chunk")) { error in
            let e = error as! LuaError
            XCTAssertEqual(e.message, "chunk:1: deep")
            XCTAssertTrue(e.traceback.hasPrefix("stack traceback:"), e.traceback)
            XCTAssertTrue(e.traceback.contains("inner"), e.traceback)
        }
        XCTAssertThrowsError(try lua.run("return +", chunkName: "=bad")) { error in
            XCTAssertEqual((error as! LuaError).kind, .syntax)
        }
    }

    func testBinaryChunksAreRefused() throws {
        let lua = try LuaState()
        let r = try lua.run("return load(string.dump(function() return 1 end), 'x', 't')")
        XCTAssertEqual(r[0], .nil)
        XCTAssertThrowsError(try lua.load("\u{1b}Lua", chunkName: "=bin"))
    }

    final class Probe { var name = "probe" }

    func testUserdataGCReleasesSwiftObject() throws {
        let lua = try LuaState()
        let cls = LuaClass<Probe>("Probe")
            .property(
                "name",
                get: { lua, p in lua.push(string: p.name) },
                set: { call, p, i in p.name = try call.string(i) }
            )
            .describe { "Probe(\($0.name))" }
        cls.register(in: lua)
        weak var weakProbe: Probe?
        do {
            let probe = Probe()
            weakProbe = probe
            cls.push(probe, in: lua)
            lua.setGlobal("p")
        }
        XCTAssertNotNil(weakProbe, "Lua holds the object")
        XCTAssertEqual(
            try lua.run("p.name = 'renamed'; return p.name, tostring(p)"),
            [.string("renamed"), .string("Probe(renamed)")]
        )
        XCTAssertEqual(weakProbe?.name, "renamed")
        let r = try lua.run("return pcall(function() return p.nope end)")
        XCTAssertTrue(r[1].stringValue!.contains("Probe has no field 'nope'"), "\(r[1])")
        try lua.run("p = nil; collectgarbage(); collectgarbage()")
        XCTAssertNil(weakProbe, "__gc released the Swift object")
    }

    /// Lua marks nothing new for finalization once lua_close has begun: what a `__gc` gets from
    /// Swift while the state closes (an object, its class's metatable made on first use with
    /// its functions, a function) has no finalizer of its own and is still released.
    func testWhatAFinalizerGetsWhileTheStateClosesIsReleased() throws {
        let lua = try LuaState()
        let late = LuaClass<Probe>("LateProbe").property("name", get: { lua, p in lua.push(string: p.name) })
        weak var made: Probe?
        weak var captured: Probe?
        do {
            let held = Probe()
            captured = held
            lua.push(function: "make") { call in
                let probe = Probe()
                made = probe
                late.push(probe, in: call.state)
                call.state.push(function: "inner") { _ in
                    _ = held
                    return 0
                }
                return 2
            }
            lua.setGlobal("make")
        }
        try lua.run(
            """
            setmetatable({}, { __gc = function() local p, f = make(); assert(p.name == "probe"); f() end })
            GLOBAL = setmetatable({}, { __gc = function() local _ = make() end })
            """
        )
        XCTAssertNotNil(captured)
        lua.close()
        XCTAssertNil(made, "the object a finalizer got while the state closed was released")
        XCTAssertNil(captured, "the function a finalizer got while the state closed was released")
    }

    /// Lua gives a userdata's Swift object back only if it calls the userdata's __gc, and a
    /// script can make it not: a finalizer is one more C call, and one nested in `pcall` just
    /// below Lua's C-call limit that makes the collector run gets "error in __gc (C stack
    /// overflow)" for every finalizer pending; Lua frees those userdata later without one (at
    /// the memory cap, "not enough memory" does the same). What they held is released when Lua
    /// frees them, by the end of the call (CShareFlowSupport's held.c), not left to the state's
    /// close — or, before that, to no one.
    func testWhatLuaFreesWithoutItsFinalizerIsReleasedByTheCallsEnd() throws {
        final class Made {
            weak var object: Probe?
            weak var captured: Probe?
        }
        var made: [Made] = []
        let lua = try LuaState(memoryLimit: 64 * 1024 * 1024, libraries: .sandbox)
        let cls = LuaClass<Probe>("DeepProbe")
        lua.push(function: "make") { call in
            let note = Made()
            let object = Probe()
            let captured = Probe()
            note.object = object
            note.captured = captured
            made.append(note)
            cls.push(object, in: call.state)
            call.state.push(function: "iterator") { _ in
                _ = captured
                return 0
            }
            return 2
        }
        lua.setGlobal("make")
        try lua.run(
            """
            local function deep(n)
              if n == 0 then
                for _ = 1, 100 do local _, _ = make() end
                collectgarbage()
                collectgarbage()
                return
              end
              local ok, e = pcall(deep, n - 1)
              if not ok then error(e, 0) end
            end
            for n = 150, 200 do pcall(deep, n) end
            collectgarbage()
            collectgarbage()
            """
        )
        XCTAssertGreaterThan(made.count, 1000)
        XCTAssertEqual(made.filter { $0.object != nil }.count, 0, "host objects alive after the call")
        XCTAssertEqual(made.filter { $0.captured != nil }.count, 0, "functions alive after the call")
        lua.close()
    }

    func testSameObjectIsSameLuaValue() throws {
        let lua = try LuaState()
        let cls = LuaClass<Probe>("Probe")
        cls.register(in: lua)
        let p = Probe()
        cls.push(p, in: lua)
        lua.setGlobal("a")
        cls.push(p, in: lua)
        lua.setGlobal("b")
        XCTAssertEqual(try lua.run("return a == b"), [.boolean(true)])
    }

    func testMemoryLimitEndsTheCallNotTheHost() throws {
        let lua = try LuaState(memoryLimit: 8 * 1024 * 1024)
        // Lua refuses 2^31 itself; 2^30 is a real 1 GiB allocation the cap refuses.
        XCTAssertThrowsError(try lua.run("return string.rep('x', 2^31)"))
        XCTAssertThrowsError(try lua.run("return string.rep('x', 2^30)")) { error in
            XCTAssertTrue("\(error)".contains("not enough memory"), "\(error)")
        }
        XCTAssertLessThan(lua.memoryPeak, 8 * 1024 * 1024)
        XCTAssertThrowsError(try lua.run("local t = {} for i = 1, 1e9 do t[i] = i end"))
        XCTAssertEqual(try lua.run("return 1 + 1"), [.integer(2)])
    }
}

/// Resident set size of this process, in bytes (Linux /proc).
func residentMemory() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let pages = Int(text.split(separator: " ")[1]) ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
