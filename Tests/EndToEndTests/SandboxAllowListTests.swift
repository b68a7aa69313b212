import Foundation
import ShareFlowTestKit
import XCTest

/// The findings of the wave-3 attack on the trust boundary (SPEC §8), each run in a child
/// process of the built binary, so a crash fails a test instead of the run: the standard
/// libraries behind `require`, nested `coroutine.close`, budget escapes through `__index`
/// chains and long lists, host objects past the memory cap, a log flood, a script given many
/// arguments, a wrong account name.
final class SandboxAllowListTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try CLI.temporaryDirectory()
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("plugins"), withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    /// A plugin named `name` whose setup runs `body`; loaded by a trusted driver script that
    /// prints `loaded` or `refused <message>` and the CPU time the load took.
    func loadPlugin(
        _ name: String,
        setup body: String,
        limits: String = "cpuMillis = 50, memoryMiB = 64",
        arguments: [String] = []
    ) throws -> CLI.Result {
        let folder = dir.appendingPathComponent("plugins/\(name)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try CLI.write(
            """
            return {
              name = "\(name)", version = "1.0", description = "attack",
              setup = function(ctx)
            \(body)
              end,
            }
            """,
            to: folder.appendingPathComponent("init.lua")
        )
        try CLI.write("return { limits = { \(limits) } }", to: dir.appendingPathComponent("config.lua"))
        try CLI.write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "a@example.com" }
            local started = os.clock()
            local ok, err = pcall(sf.plugins.load, "\(name)")
            print(ok and "loaded" or ("refused " .. tostring(err)))
            print(string.format("cpu %.0f ms", (os.clock() - started) * 1000))
            local f = io.open("/proc/self/status")
            local status = f and f:read("a") or ""
            if f then f:close() end
            print("rss " .. (status:match("VmRSS:%s*(%d+)") or "0") .. " kB")
            """,
            to: dir.appendingPathComponent("drive.lua")
        )
        return try CLI.run(
            [
                "run", "--store", ":memory:", "--plugins", dir.appendingPathComponent("plugins").path,
                "--config", dir.appendingPathComponent("config.lua").path, "--log-level", "info",
                dir.appendingPathComponent("drive.lua").path,
            ] + arguments
        )
    }

    func cpuMillis(_ r: CLI.Result) -> Double {
        Double(r.stdout.firstMatch(of: /cpu (\d+) ms/)?.1 ?? "") ?? .infinity
    }

    func rssKiB(_ r: CLI.Result) -> Double {
        Double(r.stdout.firstMatch(of: /rss (\d+) kB/)?.1 ?? "") ?? .infinity
    }

    /// `require` answered from `package.loaded`, which held the real io, os and debug: one
    /// line got a shell. Built from an allow-list, there is nothing to answer with.
    func testRequireFindsNoStandardLibraryInAPlugin() throws {
        let r = try loadPlugin(
            "escape",
            setup: """
                local found = {}
                for _, name in ipairs{ "io", "debug", "ffi", "lfs" } do
                  if pcall(require, name) then found[#found + 1] = name end
                end
                local os2 = require("os")
                for _, f in ipairs{ "execute", "exit", "getenv", "remove", "rename", "tmpname" } do
                  if os2[f] ~= nil then found[#found + 1] = "os." .. f end
                end
                for k in pairs(package.loaded) do
                  if k ~= "_G" and k ~= "coroutine" and k ~= "math" and k ~= "os" and k ~= "package" and k ~= "string"
                    and k ~= "table" and k ~= "utf8" and k ~= "shareflow" then found[#found + 1] = "loaded." .. k end
                end
                if package.searchers or package.loadlib or package.searchpath then found[#found + 1] = "package loaders" end
                if #found > 0 then error("reached: " .. table.concat(found, ", ")) end
                """
        )
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("loaded"), r.stdout)
    }

    /// Lua 5.4.4 runs a closed coroutine's `__close` handlers outside the C-call limit: 200
    /// nested closes, each handler padded with pcalls, overflowed the C stack (SIGSEGV).
    func testNestedCoroutineCloseIsAnErrorNotACrash() throws {
        let nest = """
            local n, padk = 200, 150
            local cos = {}
            local function pad(k, f) if k == 0 then return f() end local ok, e = pcall(pad, k - 1, f) if not ok then error(e, 0) end end
            for i = 1, n do
              cos[i] = coroutine.create(function()
                local x <close> = setmetatable({}, { __close = function()
                  pad(padk, function()
                    if cos[i + 1] then local ok, err = coroutine.close(cos[i + 1]); if not ok then error(err, 0) end end
                  end)
                end })
                coroutine.yield()
              end)
              coroutine.resume(cos[i])
            end
            local ok, err = coroutine.close(cos[1])
            """
        let script = dir.appendingPathComponent("nest.lua")
        try CLI.write(nest + "\nprint(ok, err)\n", to: script)
        // A trusted script may make the nest: the close is refused past its depth.
        let r = try CLI.run(["run", "--store", ":memory:", script.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("false") && r.stdout.contains("coroutine.close nested too deeply"), r.stdout)
        // In the sandbox no value can have __close at all (docs/reference/lua-bugs.md).
        let sandboxed = try CLI.run(["run", "--store", ":memory:", "--sandbox", script.path])
        XCTAssertEqual(sandboxed.status, 0, sandboxed.stderr)
        XCTAssertTrue(sandboxed.stdout.contains("plugins cannot set __close"), sandboxed.stdout)
        let p = try loadPlugin("close-nest", setup: nest + "\nif not ok then error(err, 0) end")
        XCTAssertEqual(p.status, 0, p.stderr)
        XCTAssertTrue(p.stdout.contains("refused") && p.stdout.contains("plugins cannot set __close"), p.stdout)
    }

    /// `table.unpack` and `table.concat` follow an `__index` chain of tables in C for each
    /// element: seconds inside one call. Now they stop within the budget (2x, plus slack).
    func testUnpackAndConcatOverAnIndexChainStopWithTheBudget() throws {
        for call in ["table.unpack(t, 1, 200000)", "table.concat(t, ',', 1, 200000)"] {
            let r = try loadPlugin(
                "chain",
                setup: """
                    local base = setmetatable({}, { __index = function() return "x" end })
                    local t = base
                    for _ = 1, 1900 do t = setmetatable({}, { __index = t }) end
                    local _ = \(call)
                    """
            )
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertTrue(r.stdout.contains("CPU budget of 50 ms exceeded"), "\(call): \(r.stdout)")
            XCTAssertLessThan(cpuMillis(r), 400, "\(call): \(r.stdout)")
        }
    }

    /// Host functions given long lists worked through them in Swift with no budget check.
    func testHostFunctionsGivenLongListsStopWithTheBudgetOrRefuse() throws {
        let cases = [
            (
                "fields",
                """
                local fields = {}
                for i = 1, 300000 do fields["f" .. i] = i end
                local started = os.clock()
                while os.clock() - started < 0.03 do end
                ctx.Record{ recordType = "T", fields = fields }
                """, "CPU budget of 50 ms exceeded"
            ),
            (
                "keys",
                """
                local t = { email = "x@example.com" }
                for i = 1, 300000 do t["k" .. i] = i end
                local started = os.clock()
                while os.clock() - started < 0.03 do end
                ctx.accounts.create(t)
                """, "unknown field|CPU budget of 50 ms exceeded"
            ),
            (
                "lookups",
                """
                local list = {}
                for i = 1, 5000 do list[i] = "u" .. i .. "@example.com" end
                ctx.as("a@example.com"):container("iCloud.x"):fetchShareParticipants(list)
                """, "a list of at most 400 items expected, got 5000"
            ),
            (
                "json",
                """
                local t = {}
                for i = 1, 90000 do t["k" .. i] = { i } end
                local started = os.clock()
                while os.clock() - started < 0.045 do end
                ctx.json.encode(t)
                """, "CPU budget of 50 ms exceeded"
            ),
        ]
        for (name, body, expected) in cases {
            let r = try loadPlugin("list-\(name)", setup: body)
            XCTAssertEqual(r.status, 0, "\(name): \(r.stderr)")
            XCTAssertTrue(
                r.stdout.contains("refused") && expected.split(separator: "|").contains { r.stdout.contains($0) },
                "\(name): \(r.stdout)"
            )
            XCTAssertLessThan(cpuMillis(r), 400, "\(name): \(r.stdout)")
        }
    }

    /// Records a plugin keeps alive held their fields in Swift, outside the plugin's cap: six
    /// calls grew the host by hundreds of MiB. Now what they hold counts against the cap.
    func testHostObjectsCountAgainstTheMemoryCap() throws {
        let r = try loadPlugin(
            "hoard",
            setup: """
                kept = {}
                for i = 1, 40 do
                  local r = ctx.Record{ recordType = "T", recordName = "r" .. i, fields = { big = string.rep(string.char(65 + i % 26), 8 * 1024 * 1024) } }
                  kept[i] = r
                  collectgarbage()
                end
                """,
            limits: "cpuMillis = 5000, memoryMiB = 64"
        )
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("refused") && r.stdout.contains("not enough memory"), r.stdout)
        // 40 records of 8 MiB would be 320 MiB; the cap holds the host near 64 MiB of them.
        XCTAssertLessThan(rssKiB(r), 250 * 1024, r.stdout)
    }

    /// Attack review: one long string a table holds many times was copied into Swift once per
    /// reference, checked per item, charged after the copy: 200 references to 24 MiB took 2.5
    /// GB and seconds. Copies are charged by the byte, against the budget and the cap, as
    /// they go.
    func testOneStringHeldManyTimesIsChargedPerCopy() throws {
        for shape in ["fields = { list = t }", "fields = t"] {
            let r = try loadPlugin(
                "copies",
                setup: """
                    local s = string.rep("x", 8 << 20); s = s .. s .. s
                    local t = {}
                    for i = 1, 200 do t["f" .. i] = s; t[i] = s end
                    ctx.Record{ recordType = "Note", recordName = "n1", \(shape) }
                    """
            )
            XCTAssertEqual(r.status, 0, "\(shape): \(r.stderr)")
            XCTAssertTrue(r.stdout.contains("refused"), "\(shape): \(r.stdout)")
            XCTAssertLessThan(cpuMillis(r), 400, "\(shape): \(r.stdout)")
            XCTAssertLessThan(rssKiB(r), 400 * 1024, "\(shape): \(r.stdout)")
        }
    }

    /// A plugin's log had no bound: 16 MiB in one call. Now `limits.logKiB` per call, the rest
    /// replaced by one line saying how much was dropped.
    func testALogFloodIsBoundedPerCall() throws {
        let r = try loadPlugin(
            "flood",
            setup: """
                ctx.log.info(string.rep("x", 16 * 1024 * 1024))
                for _ = 1, 1000 do print(string.rep("y", 1024)) end
                """,
            limits: "cpuMillis = 5000, memoryMiB = 128, logKiB = 64"
        )
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("loaded"), r.stdout)
        XCTAssertLessThan(r.stderr.utf8.count, 80 * 1024, "log output past the limit")
        XCTAssertTrue(r.stderr.contains("log limit of 64 KiB per call reached"), String(r.stderr.suffix(400)))
        XCTAssertTrue(r.stderr.contains("bytes dropped"), String(r.stderr.suffix(400)))
    }

    /// `shareflow run x.lua $(seq 1 50)`: the arguments reached the Lua stack without a stack
    /// check and corrupted the heap (a crash in free, not every time).
    func testAScriptGivenManyArgumentsRuns() throws {
        let script = dir.appendingPathComponent("args.lua")
        try CLI.write("print(select('#', ...), #arg, arg[#arg])", to: script)
        for count in [45, 60, 1000] {
            for _ in 0..<3 {
                let r = try CLI.run(["run", "--store", ":memory:", script.path] + (1...count).map(String.init))
                XCTAssertEqual(r.status, 0, "\(count) arguments: \(r.stderr)")
                XCTAssertEqual(r.stdout, "\(count)\t\(count)\t\(count)\n")
            }
        }
    }

    /// `name = "Eve"` (a string, not a table) was accepted and the name dropped.
    func testAnAccountNameMustBeATable() throws {
        let script = dir.appendingPathComponent("name.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            print(pcall(sf.accounts.create, { email = "eve@example.com", name = "Eve" }))
            print(pcall(sf.accounts.create, { email = "eve@example.com", name = 7 }))
            """,
            to: script
        )
        let r = try CLI.run(["run", "--store", ":memory:", script.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout.components(separatedBy: "field 'name' must be a table").count, 3, r.stdout)
        XCTAssertTrue(r.stdout.contains("got string") && r.stdout.contains("got number"), r.stdout)
    }
}
