import Foundation
import ShareFlowTestKit
import XCTest

/// R21 across processes: two `shareflow run` processes hold copies of the same record and
/// share on one store; one saves first, the other's stale saves are refused with
/// `serverRecordChanged`, and nothing the first saved is lost.
final class StaleCopyTests: XCTestCase {
    func testTwoProcessesSavingStaleCopies() throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = dir.appendingPathComponent("store.sqlite").path
        let signal = dir.appendingPathComponent("signal").path
        let common = """
            local sf = require("shareflow")
            local C = "iCloud.com.example.stale"
            local db = sf.as("alice@example.com"):container(C).privateCloudDatabase
            local zone = { zoneName = "Trips", ownerName = sf.accounts.find("alice@example.com").userRecordID }
            local tripID = sf.RecordID{ recordName = "lisbon", zoneID = zone }
            local function code(err) if not err then return "saved" end local _, e = next(err.partialErrors) return e.code end
            local function wait(name)
              for _ = 1, 600 do
                local f = io.open(arg[1] .. "." .. name)
                if f then f:close() return end
                os.execute("sleep 0.05")
              end
              error("no " .. name .. " signal")
            end

            """
        try CLI.write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "alice@example.com" }
            sf.accounts.create{ email = "bob@example.com" }
            local c = sf.as("alice@example.com"):container("iCloud.com.example.stale")
            local db = c.privateCloudDatabase
            local zone = db:saveZone("Trips")
            local trip = sf.Record{ recordType = "Trip", recordName = "lisbon", zone = zone, fields = { title = "Lisbon" } }
            local share = sf.Share{ rootRecord = trip, title = "Lisbon trip" }
            share:addParticipant(c:fetchShareParticipants{ "bob@example.com" }[1])
            assert(not select(2, db:modifyRecords{ save = { trip, share } }))
            print(share.recordName)
            """,
            to: dir.appendingPathComponent("setup.lua")
        )
        try CLI.write(
            common + """
                local trip = db:fetchRecord(tripID)
                local share = db:fetchRecord(trip.share)
                io.open(arg[1] .. ".fetched", "w"):close()
                wait("go")
                trip.fields.title = "Stale title"
                share.title = "Stale share"
                share.publicPermission = "readWrite"
                print("trip: " .. code(select(2, db:modifyRecords{ save = { trip } })))
                print("share: " .. code(select(2, db:modifyRecords{ save = { share } })))
                """,
            to: dir.appendingPathComponent("slow.lua")
        )
        try CLI.write(
            common + """
                local trip = db:fetchRecord(tripID)
                local share = db:fetchRecord(trip.share)
                trip.fields.title = "Fresh title"
                trip.fields.days = 5
                share.title = "Fresh share"
                print("trip: " .. code(select(2, db:modifyRecords{ save = { trip } })))
                print("share: " .. code(select(2, db:modifyRecords{ save = { share } })))
                """,
            to: dir.appendingPathComponent("fast.lua")
        )
        try CLI.write(
            common + """
                local trip = db:fetchRecord(tripID)
                local share = db:fetchRecord(trip.share)
                print(trip.fields.title, trip.fields.days, share.title, share.publicPermission, #share.participants)
                """,
            to: dir.appendingPathComponent("check.lua")
        )

        let setup = try CLI.run(["run", "--store", store, dir.appendingPathComponent("setup.lua").path])
        XCTAssertEqual(setup.status, 0, setup.stderr)
        final class Outcome: @unchecked Sendable { var result: CLI.Result? }  // written before `done` signals
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let slowPath = dir.appendingPathComponent("slow.lua").path
        Thread.detachNewThread {
            outcome.result = try? CLI.run(["run", "--store", store, slowPath, signal])
            done.signal()
        }
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: signal + ".fetched") && Date() < deadline { usleep(20_000) }
        let fast = try CLI.run(["run", "--store", store, dir.appendingPathComponent("fast.lua").path, signal])
        XCTAssertEqual(fast.status, 0, fast.stderr)
        XCTAssertEqual(fast.stdout, "trip: saved\nshare: saved\n")
        XCTAssertTrue(FileManager.default.createFile(atPath: signal + ".go", contents: nil))
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        let slow = outcome.result
        XCTAssertEqual(slow?.status, 0, slow?.stderr ?? "")
        XCTAssertEqual(slow?.stdout, "trip: serverRecordChanged\nshare: serverRecordChanged\n")
        let check = try CLI.run(["run", "--store", store, dir.appendingPathComponent("check.lua").path, signal])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertEqual(check.stdout, "Fresh title\t5\tFresh share\tnone\t2\n", "the first save is whole; nothing of the stale ones")
    }
}
