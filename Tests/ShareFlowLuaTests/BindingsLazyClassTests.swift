import Foundation
import ShareFlow
import ShareFlowTestKit
import XCTest

@testable import ShareFlowLua

/// A state makes a bound class's metatable, and a value table's, when it first holds one of
/// its objects (issue 48: making them all up front was half of each state's start). First
/// use can come anywhere: inside a hook that then fails, yields or spends its budget, or at
/// the state's memory cap; the class is whole afterwards, and read-only in a plugin as before.
/// And objects an observer keeps are the event's own: a later event never shows through them.
final class BindingsLazyClassTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try makeTemporaryFolder("sf-lazy-classes")
    }

    func plugin(_ name: String, setup: String) throws {
        let folder = dir.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try """
        return {
          name = "\(name)", version = "0.1", description = "test plugin",
          setup = function(ctx)
        \(setup)
          end,
        }
        """.write(to: folder.appendingPathComponent("init.lua"), atomically: true, encoding: .utf8)
    }

    func world(cpuMillis: Double = 50, memoryMiB: Double = 64) throws -> (ScriptHost, PluginManager) {
        let engine = Engine(store: try Store(path: ":memory:"))
        engine.logger.logLevel = .critical
        var config = PluginConfig()
        config.cpuMillis = cpuMillis
        config.memoryMiB = memoryMiB
        let manager = PluginManager(engine: engine, directories: [dir.path], config: config, dataDirectory: dir.appendingPathComponent("data").path)
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

    /// Owner shares a record with bob, bob accepts: one `share.accepted`.
    func accept(_ host: ScriptHost, tag: String) throws {
        let r = try host.run(
            """
            local sf = require("shareflow")
            local c = sf.as("owner@example.com"):container("iCloud.p")
            local zone = c.privateCloudDatabase:saveZone("Z")
            local r = sf.Record{ recordType = "Doc", recordName = "\(tag)", zone = zone }
            local s = sf.Share{ rootRecord = r }
            s.title = "\(tag)"
            s:addParticipant(c:fetchShareParticipants{ "bob@example.com" }[1])
            local _, err = c.privateCloudDatabase:modifyRecords{ save = { r, s } }
            assert(not err, tostring(err))
            local bc = sf.as("bob@example.com"):container("iCloud.p")
            local shares = bc:acceptShares{ bc:fetchShareMetadata{ s.url }[s.url] }
            return shares[1] ~= nil
            """
        )
        XCTAssertEqual(r, [.boolean(true)], "the accept is committed whatever the observers do")
    }

    /// The state's first Record, Share and LookupInfo are made inside hooks that then raise,
    /// yield across the host and spend their budget; each later event finds the classes whole.
    func testAClassFirstUsedInAFailingHookIsWholeAfterwards() throws {
        try plugin(
            "late",
            setup: """
                local sf = require("shareflow")
                local n = 0
                ctx.on("share.accepted", function(ev)
                  n = n + 1
                  if n == 1 then local r = sf.Record{ recordType = "X" }; error("fails after its first Record") end
                  if n == 2 then local l = sf.LookupInfo{ emailAddress = "a@example.com" }; coroutine.yield(l) end
                  if n == 3 then local r = sf.Record{ recordType = "Y" }; r.fields.a = 1; while true do end end
                  local r = sf.Record{ recordType = "Z" }
                  r.fields.a = 7
                  assert(r.fields.a == 7 and r.recordType == "Z", "a Record works")
                  assert(tostring(r):find("Record"), tostring(r))
                  assert(getmetatable(r) == "Record", tostring(getmetatable(r)))
                  assert(tostring(sf.LookupInfo{ emailAddress = "a@example.com" }) == "LookupInfo(emailAddress: a@example.com)")
                  assert(ev.share.title == "t" .. n, "the event's share: " .. tostring(ev.share.title))
                  assert(getmetatable(ev.share) == "Share")
                  -- Read-only in a plugin, as when the classes were made up front (SPEC §8).
                  local ok, err = pcall(function() ev.share.title = "mine" end)
                  assert(not ok and tostring(err):find("read%-only in a plugin"), tostring(err))
                  assert(ev.participant.acceptanceStatus == "accepted", tostring(ev.participant.acceptanceStatus))
                end)
                """
        )
        let (host, manager) = try world(cpuMillis: 50)
        try manager.load("late")
        for n in 1...5 { try accept(host, tag: "t\(n)") }
        XCTAssertEqual(host.engine.events.observerErrors, 3, "the three failing calls, and no other")
    }

    /// At the memory cap, the call that first makes a class fails with the memory error, or
    /// works; never a crash or a half-made class. Once memory is free, the class is whole.
    func testAClassFirstUsedAtTheMemoryCapIsWholeAfterwards() throws {
        try plugin(
            "capped",
            setup: """
                local sf = require("shareflow")
                local fill, i = {}, 0
                -- Made before the loop: making a closure or a table at the cap is itself an
                -- error, and the host functions must be reached there.
                local function grow() fill[#fill + 1] = string.rep("q", 1000) .. i end
                local recordArgs, lookupArgs = { recordType = "D" }, { emailAddress = "cap@example.com" }
                local function record() return sf.Record(recordArgs) end
                local function lookup() return sf.LookupInfo(lookupArgs) end
                local atCap = false
                for n = 1, 200000 do
                  i = n
                  if not pcall(grow) then atCap = true break end
                end
                assert(atCap, "the state reached its cap")
                local ok1, r1 = pcall(record)
                local ok2, l2 = pcall(lookup)
                if ok1 then assert(getmetatable(r1) == "Record") end
                if ok2 then assert(getmetatable(l2) == "LookupInfo") end
                fill, r1, l2 = nil, nil, nil
                collectgarbage()
                local r = record()
                r.fields.title = "after"
                assert(r.fields.title == "after" and r.recordType == "D")
                assert(tostring(r):find("Record"))
                assert(tostring(lookup()) == "LookupInfo(emailAddress: cap@example.com)", tostring(lookup()))
                """
        )
        let (_, manager) = try world(cpuMillis: 20_000, memoryMiB: 16)
        XCTAssertNoThrow(try manager.load("capped"))
    }

    /// An observer that keeps an event, its share and its participant sees the first event's
    /// data through them at every later event: the host makes a new table per event and one
    /// userdata per engine object, so nothing it keeps is filled with another event's data.
    func testAKeptEventShowsItsOwnDataAtLaterEvents() throws {
        try plugin(
            "keeper",
            setup: """
                local kept, share, participant, id
                ctx.on("share.accepted", function(ev)
                  if not kept then
                    kept, share, participant, id = ev, ev.share, ev.participant, ev.participant.participantID
                    return
                  end
                  assert(ev ~= kept, "a new table per event")
                  assert(kept.share == share and kept.participant == participant, "the kept table is unchanged")
                  assert(kept.share.title == "k1", "the kept share is the first event's: " .. tostring(kept.share.title))
                  assert(participant.participantID == id, "the kept participant is the first event's")
                  assert(ev.share ~= share and ev.share.title ~= "k1", "the new event has its own share")
                  assert(ev.participant ~= participant and ev.participant.participantID ~= id, "and its own participant")
                end)
                """
        )
        let (host, manager) = try world()
        try manager.load("keeper")
        for n in 1...3 { try accept(host, tag: "k\(n)") }
        XCTAssertEqual(host.engine.events.observerErrors, 0)
    }

    /// The console lists a class's members before the state has made it.
    func testMembersAreListedBeforeTheClassIsMade() throws {
        let host = try ScriptHost(engine: Engine(store: try Store(path: ":memory:")))
        XCTAssertFalse(host.bindings.participantClass.isRegistered, "nothing made a Participant yet")
        XCTAssertTrue(host.apiSurface["Participant"]?.contains("participantID") ?? false)
        XCTAssertTrue(host.methodNames["Database"]?.contains("recordZoneChanges") ?? false, "members declared by several definitions")
        XCTAssertFalse(host.bindings.participantClass.isRegistered, "listing members makes no metatable")
        let r = try host.run(
            """
            local sf = require("shareflow")
            local s = sf.Share{ rootRecord = sf.Record{ recordType = "T" } }
            return tostring(s.owner and s.owner.permission), getmetatable(s)
            """
        )
        XCTAssertEqual(r.last, .string("Share"))
        XCTAssertTrue(host.bindings.shareClass.isRegistered)
    }
}
