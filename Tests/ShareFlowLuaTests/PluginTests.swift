import Foundation
import ShareFlow
import ShareFlowTestKit
import XCTest

@testable import ShareFlowLua

/// Plugins run isolated and limited: hostile ones are contained and the host keeps serving.
final class PluginTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try makeTemporaryFolder("sf-plugins")
    }

    func plugin(_ name: String, config: String = "", setup: String, extra: [String: String] = [:]) throws {
        let folder = dir.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try """
        return {
          name = "\(name)", version = "0.1", description = "test plugin",
          config = { \(config) },
          setup = function(ctx)
        \(setup)
          end,
        }
        """.write(to: folder.appendingPathComponent("init.lua"), atomically: true, encoding: .utf8)
        for (file, text) in extra { try text.write(to: folder.appendingPathComponent(file), atomically: true, encoding: .utf8) }
    }

    /// An engine with a script host (trusted) and the plugins of `dir`.
    func world(cpuMillis: Double = 50, memoryMiB: Double = 64) throws -> (ScriptHost, PluginManager) {
        let engine = Engine(store: try Store(path: ":memory:"))
        engine.logger.logLevel = .critical
        var config = PluginConfig()
        config.cpuMillis = cpuMillis
        config.memoryMiB = memoryMiB
        let manager = PluginManager(
            engine: engine,
            directories: [dir.path],
            config: config,
            dataDirectory: dir.appendingPathComponent("data").path
        )
        let host = try ScriptHost(engine: engine)
        host.plugins = manager
        try host.run(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "owner@example.com" }
            sf.accounts.create{ email = "bob@example.com" }
            """
        )
        return (host, manager)
    }

    /// Runs a sharing story: owner shares with bob, bob accepts. Returns bob's accept error code or "ok".
    func story(_ host: ScriptHost, tag: String = "t") throws -> String {
        let r = try host.run(
            """
            local sf = require("shareflow")
            local c = sf.as("owner@example.com"):container("iCloud.p")
            local zone = c.privateCloudDatabase:saveZone("Z")
            local r = sf.Record{ recordType = "Doc", recordName = "\(tag)", zone = zone }
            local s = sf.Share{ rootRecord = r }
            s:addParticipant(c:fetchShareParticipants{ "bob@example.com" }[1])
            local _, err = c.privateCloudDatabase:modifyRecords{ save = { r, s } }
            if err then return "save:" .. select(2, next(err.partialErrors)).code end
            local bc = sf.as("bob@example.com"):container("iCloud.p")
            local shares, aerr = bc:acceptShares{ bc:fetchShareMetadata{ s.url }[s.url] }
            if shares[1] then return "ok" end
            return select(2, next(aerr.partialErrors)).message
            """
        )
        return r[0].stringValue ?? "?"
    }

    /// SPEC §15: a plugin arms rules, and its `clear()` takes only its own: not the operator's
    /// (a script's, the admin route's, the config file's), nor another plugin's.
    func testAPluginClearsOnlyItsOwnFaultRules() throws {
        try plugin("armer", setup: #"ctx.faults.add{ operation = "query", fault = "zoneBusy" }"#)
        try plugin(
            "clearer",
            setup: """
                ctx.faults.add{ operation = "fetchRecords", fault = "zoneBusy" }
                ctx.log.info("cleared " .. ctx.faults.clear())
                """
        )
        let (host, manager) = try world()
        try host.engine.faults.add(
            try FaultRule(["fault": .string("serviceUnavailable"), "caller": .string("x@example.com")], name: "t"),
            owner: .config
        )
        try host.run(#"require("shareflow").faults.add{ fault = "quotaExceeded", caller = "y@example.com" }"#)
        try manager.load("armer")
        try manager.load("clearer")
        XCTAssertEqual(host.engine.faults.list().map(\.owner), [.config, .runtime, .plugin("armer")])
        manager.unload("armer")
        XCTAssertEqual(host.engine.faults.list().map(\.owner), [.config, .runtime])
    }

    func testHostileObserversAreContainedAndTheHostKeepsServing() throws {
        let hostile: [(String, String)] = [
            ("runaway", "while true do end"),
            ("bomb", "local s = string.rep('x', 2^30)"),
            ("growth", "local t = {} local i = 0 while true do i = i + 1 t[i] = {i} end"),
            ("recursion", "local function f(n) return f(n + 1) + 1 end f(1)"),
            ("yield", "coroutine.yield(1)"),
            ("corunaway", "coroutine.wrap(function() while true do end end)()"),
        ]
        for (name, body) in hostile {
            try plugin(name, setup: "ctx.on('share.accepted', function(ev) \(body) end)")
        }
        let (host, manager) = try world(cpuMillis: 50, memoryMiB: 16)
        for (name, _) in hostile { try manager.load(name) }
        let start = Date()
        XCTAssertEqual(try story(host), "ok", "the accept itself is committed")
        XCTAssertLessThan(Date().timeIntervalSince(start), 10, "every hostile observer was stopped")
        XCTAssertEqual(host.engine.events.observerErrors, hostile.count, "each hostile observer failed, and was counted")
        XCTAssertEqual(try host.run("return 1 + 1"), [.integer(2)], "the host still answers")
        XCTAssertEqual(try story(host, tag: "again"), "ok", "and keeps serving")
        XCTAssertEqual(host.engine.events.observerErrors, 2 * hostile.count)
    }

    /// A host function that returns while its state sits at its memory cap returns its own
    /// results: the check after the call once cleared the stack and, when a collection brought
    /// the state back under the cap, returned values that were no longer there (the function
    /// itself and the caller's registers), found by the attack on assets.
    func testAHostFunctionAtTheMemoryCapReturnsItsOwnResults() throws {
        try plugin(
            "pressure",
            setup: """
                    local sf = require("shareflow")
                    local r = sf.Record{ recordType = "D" }
                    r.fields.f = string.rep("v", 5000)
                    local fill, i = {}, 0
                    -- Made before the loop: making a closure at the cap is itself an error.
                    local function grow() fill[#fill + 1] = string.rep("q", 1000) .. i end
                    local function firstKey() local it = pairs(r.fields); local k = it(); return k end
                    local function fields() return r.fields end
                    for n = 1, 200000 do
                      i = n
                      local ok = pcall(grow)
                      local ok2, k = pcall(firstKey)
                      if ok2 and k ~= "f" then error("a host function returned " .. type(k) .. " at " .. n) end
                      local ok3, f = pcall(fields)
                      if ok3 and type(f) ~= "userdata" then error("r.fields gave a " .. type(f) .. " at " .. n) end
                      if not ok then break end
                    end
                    fill = nil
                """
        )
        let (_, manager) = try world(cpuMillis: 20_000, memoryMiB: 16)
        XCTAssertNoThrow(try manager.load("pressure"))
    }

    func testHostilePoliciesFailClosed() throws {
        try plugin("loop", setup: "ctx.policy('share.accept', function() while true do end end)")
        let (host, manager) = try world(cpuMillis: 20)
        try manager.load("loop")
        let message = try story(host)
        XCTAssertTrue(message.contains("denied by policy 'loop/policy'"), message)
        XCTAssertTrue(message.contains("CPU budget of 20 ms exceeded"), message)
        manager.unload("loop")
        try plugin("bomb", setup: "ctx.policy('share.accept', function() return string.rep('x', 2^30) end)")
        try manager.load("bomb")
        let bomb = try story(host, tag: "t2")
        XCTAssertTrue(bomb.contains("not enough memory"), bomb)
        try plugin("raises", setup: "ctx.policy('share.accept', function() error('policy bug') end)")
        manager.unload("bomb")
        try manager.load("raises")
        let raised = try story(host, tag: "t3")
        XCTAssertTrue(raised.contains("policy bug"), raised)
        let decisions = try host.run("local d = shareflow.decisions{ limit = 3 } return d[1].allow, d[2].allow, d[3].allow, d[3].duration > 0")
        XCTAssertEqual(decisions, [.boolean(false), .boolean(false), .boolean(false), .boolean(true)])
    }

    func testWithinBudgetCallsAreNotSlowedOrStopped() throws {
        try plugin(
            "busy",
            setup: """
                ctx.policy('share.accept', function()
                  local x = 0 for i = 1, 200000 do x = x + i end
                end)
                """
        )
        let (host, manager) = try world(cpuMillis: 500)
        try manager.load("busy")
        XCTAssertEqual(try story(host), "ok")
    }

    func testPluginsCannotSeeOrAlterEachOther() throws {
        try plugin(
            "a",
            setup: """
                secret = "from a"
                string.upper = function() return "hacked" end
                getmetatable("").__index.lower = function() return "hacked" end
                shareflow.accounts = nil
                """
        )
        try plugin(
            "b",
            setup: """
                ctx.policy('share.accept', function()
                  if secret ~= nil then return false, "saw a's global" end
                  if ("x"):upper() ~= "X" or ("Y"):lower() ~= "y" then return false, "string library altered" end
                  if shareflow.accounts == nil then return false, "module altered" end
                end)
                """
        )
        let (host, manager) = try world()
        try manager.load("a")
        try manager.load("b")
        XCTAssertEqual(try story(host), "ok")
        XCTAssertEqual(try host.run("return ('x'):upper(), secret"), [.string("X"), .nil], "nor the host")
    }

    func testSandboxAsTheSpecLists() throws {
        try plugin(
            "probe",
            setup: """
                local found = {}
                found.io = io ~= nil
                found.debug = debug ~= nil
                found.execute = os.execute ~= nil
                found.getenv = os.getenv ~= nil
                found.time = os.time ~= nil and os.clock ~= nil and os.date ~= nil and os.difftime ~= nil
                found.loadlib = package.loadlib ~= nil
                found.cpath = package.cpath ~= ""
                found.binary = load(string.dump(function() return 1 end)) ~= nil
                found.text = load("return 41 + 1")() == 42
                found.helper = require("helper").answer == 42
                found.escape = pcall(require, "../../etc/passwd")
                found.dofile = dofile ~= nil
                ctx.appendFile("probe.txt", ctx.json.encode(found))
                """,
            extra: ["helper.lua": "return { answer = 42 }"]
        )
        let (_, manager) = try world()
        try manager.load("probe")
        let text = try String(contentsOf: dir.appendingPathComponent("data/probe/probe.txt"), encoding: .utf8)
        let found = try JSONSerialization.jsonObject(with: Data(text.utf8)) as! [String: Bool]
        XCTAssertEqual(
            found,
            [
                "io": false, "debug": false, "execute": false, "getenv": false, "time": true,
                "loadlib": false, "cpath": false, "binary": false, "text": true, "helper": true,
                "escape": false, "dofile": false,
            ]
        )
    }

    func testObserverOrderPrioritiesAndErrorsDoNotStopOthers() throws {
        try plugin(
            "order",
            setup: """
                ctx.on('share.saved', function() ctx.appendFile('o.txt', 'low ') end, { priority = -5, name = 'low' })
                ctx.on('share.saved', function() ctx.appendFile('o.txt', 'first ') end, { name = 'first' })
                ctx.on('share.saved', function() error('boom') end, { name = 'broken' })
                ctx.on('share.saved', function() ctx.appendFile('o.txt', 'second ') end, { name = 'second' })
                ctx.on('share.saved', function() ctx.appendFile('o.txt', 'high ') end, { priority = 10, name = 'high' })
                """
        )
        let (host, manager) = try world()
        try manager.load("order")
        XCTAssertEqual(try story(host), "ok")
        let text = try String(contentsOf: dir.appendingPathComponent("data/order/o.txt"), encoding: .utf8)
        XCTAssertEqual(text, "high first second low ")
        XCTAssertEqual(host.engine.events.observerErrors, 1)
    }

    func testReloadKeepsEngineStateAndPicksUpChanges() throws {
        try plugin("gate", setup: "ctx.policy('share.accept', function() return false, 'closed v1' end)")
        let (host, manager) = try world()
        try manager.load("gate")
        XCTAssertTrue(try story(host).contains("closed v1"))
        try plugin("gate", setup: "ctx.policy('share.accept', function() end)")
        XCTAssertEqual(try manager.reload("gate"), ["gate"])
        XCTAssertEqual(try story(host, tag: "t2"), "ok", "the new version is live")
        XCTAssertEqual(try host.run("return #shareflow.accounts.list()"), [.integer(2)], "the engine kept its state")
        try plugin("gate", setup: "this is not lua")
        XCTAssertThrowsError(try manager.reload("gate")) { e in
            XCTAssertTrue("\(e)".contains("plugin 'gate'"), "\(e)")
        }
    }

    /// SPEC §18 P1, never fail open: a reload whose new version fails anywhere (does not
    /// compile, fails setup, a bad config, the folder gone) leaves the loaded version deciding,
    /// with its observers and fault rules, and says why.
    func testAFailedReloadKeepsThePreviousVersionDeciding() throws {
        try plugin(
            "gate",
            setup: """
                ctx.policy('share.accept', function() return false, 'closed v1' end)
                ctx.on('share.accepted', function() end)
                """
        )
        let (host, manager) = try world()
        try manager.load("gate")
        XCTAssertTrue(try story(host).contains("closed v1"))
        let broken = [
            "this is not lua",
            "error('setup exploded')",
            "ctx.policy('share.accept', function() end); error('half set up')",
        ]
        for (i, setup) in broken.enumerated() {
            try plugin("gate", setup: setup)
            XCTAssertThrowsError(try manager.reload("gate")) { e in
                XCTAssertTrue("\(e)".contains("the loaded version of 'gate' stays in place"), "\(e)")
            }
            XCTAssertTrue(try story(host, tag: "b\(i)").contains("closed v1"), "still denied after failed reload \(i)")
            XCTAssertEqual(manager.loadedNames, ["gate"])
        }
        XCTAssertThrowsError(try manager.load("gate", settings: LuaTable(hash: [.string("nope"): .integer(1)])))
        XCTAssertTrue(try story(host, tag: "cfg").contains("closed v1"), "a bad config keeps v1 too")
        try FileManager.default.removeItem(at: dir.appendingPathComponent("gate"))
        XCTAssertThrowsError(try manager.reload("gate"))
        XCTAssertTrue(try story(host, tag: "gone").contains("closed v1"), "a vanished folder keeps v1 too")
        // And a reload that works replaces it, once: one policy, not two.
        try plugin("gate", setup: "ctx.policy('share.accept', function() return false, 'closed v2' end)")
        XCTAssertEqual(try manager.reload("gate"), ["gate"])
        let message = try story(host, tag: "v2")
        XCTAssertTrue(message.contains("closed v2") && !message.contains("v1"), message)
        XCTAssertTrue(host.engine.policies.hasPolicies(.shareAccept))
        manager.unload("gate")
        XCTAssertEqual(try story(host, tag: "none"), "ok")
    }

    func testConfigValidationErrors() throws {
        try plugin("typed", config: "limit = { type = 'integer', default = 5, min = 1, max = 10 }, name = { type = 'string' }", setup: "")
        let (_, manager) = try world()
        func message(_ settings: LuaTable) -> String {
            do {
                try manager.load("typed", settings: settings)
                return "loaded"
            } catch { return "\(error)" }
        }
        XCTAssertEqual(
            message(LuaTable(hash: [.string("limit"): .string("ten")])),
            "plugin 'typed': config key 'limit' must be an integer, got string \"ten\""
        )
        XCTAssertEqual(
            message(LuaTable(hash: [.string("limit"): .integer(11)])),
            "plugin 'typed': config key 'limit' must be at most 10, got number 11"
        )
        XCTAssertEqual(
            message(LuaTable(hash: [.string("colour"): .string("red")])),
            "plugin 'typed': unknown config key 'colour' (known: limit, name)"
        )
        XCTAssertEqual(message(LuaTable(hash: [.string("limit"): .integer(3)])), "loaded")
        let file = dir.appendingPathComponent("bad.config.lua")
        try "return { plugins = { typed = 3 } }".write(to: file, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try PluginConfig(file: file.path)) { e in
            XCTAssertTrue("\(e)".contains("plugins[\"typed\"] must be a table or a boolean, got 3"), "\(e)")
        }
    }

    func testBrokenPluginsAreReportedByCheck() throws {
        try plugin("nosetup", setup: "")
        try "return { name = 'nosetup', version = '1', description = 'x' }".write(
            to: dir.appendingPathComponent("nosetup/init.lua"),
            atomically: true,
            encoding: .utf8
        )
        try plugin("syntax", setup: "local = 1")
        try plugin("failing", setup: "error('setup exploded')")
        let (_, manager) = try world()
        XCTAssertTrue(manager.check("nosetup")[0].contains("needs a function 'setup(ctx)'"))
        XCTAssertTrue(manager.check("syntax")[0].contains("init.lua:"))
        XCTAssertTrue(manager.check("failing")[0].contains("setup failed"))
        XCTAssertTrue(manager.check("failing")[0].contains("setup exploded"))
    }
}

/// Unloading or reloading a plugin from an observer of the very event the plugin is handling
/// (or is about to handle) must not touch its closed state (SPEC §8).
extension PluginTests {
    func testUnloadAndReloadFromAnObserverOfTheEventUnderWay() throws {
        try plugin(
            "victim",
            setup: """
                local seen = 0
                ctx.on("participant.fetched", function() seen = seen + 1 end, { priority = -10 })
                ctx.on("share.saved", function()
                  -- a nested operation: its events reach the script's observer, which unloads us
                  ctx.as("owner@example.com"):container("iCloud.p"):fetchShareParticipants{ "bob@example.com" }
                  seen = seen + 1
                end)
                """
        )
        let (host, manager) = try world()
        try manager.load("victim")
        let r = try host.run(
            """
            local sf = require("shareflow")
            local mode, calls = "unload", 0
            sf.on("participant.fetched", function()
              calls = calls + 1
              if mode == "unload" then sf.plugins.unload("victim") else sf.plugins.reload("victim") end
            end, { priority = 10 })
            local c = sf.as("owner@example.com"):container("iCloud.p")
            -- the plugin's own observer comes later in the same delivery
            c:fetchShareParticipants{ "bob@example.com" }
            local loadedAfterUnload = #sf.plugins.loaded()
            sf.plugins.load("victim")
            mode = "reload"
            c:fetchShareParticipants{ "bob@example.com" }
            -- the plugin's observer is mid-call (share.saved) when it is unloaded under it
            mode = "unload"
            local zone = c.privateCloudDatabase:saveZone("Z")
            local r = sf.Record{ recordType = "Doc", recordName = "d", zone = zone }
            local _, err = c.privateCloudDatabase:modifyRecords{ save = { r, sf.Share{ rootRecord = r } } }
            return loadedAfterUnload, calls, err == nil, #sf.plugins.loaded()
            """
        )
        XCTAssertEqual(r, [.integer(0), .integer(3), .boolean(true), .integer(0)])
        // The host goes on serving.
        XCTAssertEqual(
            try host.run("return #require('shareflow').as('owner@example.com'):container('iCloud.p'):fetchShareParticipants{ 'bob@example.com' }"),
            [.integer(1)]
        )
    }
}
