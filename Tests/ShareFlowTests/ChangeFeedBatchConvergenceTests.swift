import Foundation
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// The convergence property with several changes per transaction (one modifyRecords
/// saving new roots, their shares and children, edits, re-parents and deletes together), guests
/// editing in batches, and each copy compared field for field with a fetch.
class ChangeFeedBatchConvergenceTests: XCTestCase {
    func testBatchesConverge() throws {
        for seed: UInt64 in TestStore.seeds([11, 12, 13]) {
            try run(seed: seed, steps: TestStore.steps(90))
        }
    }

    private func run(seed: UInt64, steps: Int) throws {
        var rng = SeededRandom(seed: seed)
        let w = try World()
        let owner = w.c.privateCloudDatabase
        let guests = [(w.bob, w.bc), (w.carol, w.cc)]
        let zones = [w.zone.zoneID, try owner.saveZone("Second").zoneID]
        var names: [RecordZoneID: [String]] = [zones[0]: [], zones[1]: []]
        var counter = 0
        let ownerReplica = FeedReplica(owner)
        let guestReplicas = guests.map { FeedReplica($0.1.sharedCloudDatabase) }
        var sightings = 0
        func allRecords(_ zone: RecordZoneID) -> [Record] {
            names[zone, default: []].compactMap { try? owner.fetchRecord(RecordID(recordName: $0, zoneID: zone)) }
        }
        func newName() -> String {
            counter += 1
            return "r\(counter)"
        }

        for step in 0..<steps {
            let zone = zones[Int.random(in: 0..<zones.count, using: &rng)]
            let existing = allRecords(zone)
            let plain = existing.filter { $0.recordType == "Item" }
            do {
                switch Int.random(in: 0..<10, using: &rng) {
                case 0, 1, 2, 3:  // a batch: new records (some under new or old ones), edits, re-parents, deletes, maybe a new shared root
                    var saving: [Record] = []
                    var deleting: [RecordID] = []
                    var fresh: [Record] = []
                    for _ in 0..<Int.random(in: 1...5, using: &rng) {
                        let pool = plain + fresh
                        let parent = pool.isEmpty || Bool.random(using: &rng) ? nil : pool.randomElement(using: &rng)!.recordID
                        let name = newName()
                        let r = Record(
                            recordType: "Item",
                            recordID: RecordID(recordName: name, zoneID: zone),
                            fields: ["n": .integer(Int64(step)), "s": .string("v\(step)")],
                            parent: parent
                        )
                        fresh.append(r)
                        saving.append(r)
                        names[zone, default: []].append(name)
                    }
                    var touched = Set(saving.map(\.recordID))
                    for r in plain.shuffled(using: &rng).prefix(Int.random(in: 0...3, using: &rng)) where !touched.contains(r.recordID) {
                        touched.insert(r.recordID)
                        switch Int.random(in: 0..<3, using: &rng) {
                        case 0:
                            r["n"] = .integer(Int64(step))
                            saving.append(r)
                        case 1:
                            let index = Int(r.recordID.recordName.dropFirst())!
                            let older = plain.filter { Int($0.recordID.recordName.dropFirst())! < index }
                            r.parent = Bool.random(using: &rng) ? older.randomElement(using: &rng)?.recordID : nil
                            saving.append(r)
                        default: deleting.append(r.recordID)
                        }
                    }
                    if Int.random(in: 0..<3, using: &rng) == 0, let root = fresh.first(where: { $0.parent == nil }) {
                        let share = Share(rootRecord: root)
                        if Bool.random(using: &rng) { share.publicPermission = .readOnly }
                        for (account, _) in guests where Bool.random(using: &rng) {
                            share.addParticipant(try w.participant(account.emails.first!, permission: .readWrite))
                        }
                        saving.append(share)
                        names[zone, default: []].append(share.recordID.recordName)
                    }
                    saving.shuffle(using: &rng)
                    _ = try owner.modifyRecords(saving: saving, deleting: deleting)
                case 4:  // a zone share of the second zone
                    guard zone == zones[1], !existing.contains(where: { $0 is Share }) else { break }
                    let share = Share(zoneID: zone)
                    for (account, _) in guests where Bool.random(using: &rng) {
                        share.addParticipant(try w.participant(account.emails.first!, permission: .readWrite))
                    }
                    let items = (0..<Int.random(in: 0...3, using: &rng)).map { _ -> Record in
                        let name = newName()
                        names[zone, default: []].append(name)
                        return Record(recordType: "Item", recordID: RecordID(recordName: name, zoneID: zone), fields: ["n": .integer(1)])
                    }
                    _ = try owner.modifyRecords(saving: items + [share])
                    if !names[zone, default: []].contains(share.recordID.recordName) { names[zone, default: []].append(share.recordID.recordName) }
                case 5, 6:  // a guest accepts everything they can
                    let (_, container) = guests.randomElement(using: &rng)!
                    for share in existing.compactMap({ $0 as? Share }) {
                        if let url = share.url { _ = try? w.accept(url, in: container) }
                    }
                case 7, 8:  // a guest edits and adds in a batch in their shared database
                    let (_, container) = guests.randomElement(using: &rng)!
                    let shared = container.sharedCloudDatabase
                    let visible = names[zone, default: []].compactMap { try? shared.fetchRecord(RecordID(recordName: $0, zoneID: zone)) }
                        .filter { $0.recordType == "Item" }
                    guard !visible.isEmpty else { break }
                    var saving: [Record] = []
                    for r in visible.shuffled(using: &rng).prefix(2) {
                        r["g"] = .string("guest \(step)")
                        saving.append(r)
                    }
                    let name = newName()
                    names[zone, default: []].append(name)
                    saving.append(
                        Record(
                            recordType: "Item",
                            recordID: RecordID(recordName: name, zoneID: zone),
                            fields: ["n": .integer(2)],
                            parent: visible.randomElement(using: &rng)!.recordID
                        )
                    )
                    _ = try shared.modifyRecords(saving: saving)
                default:  // removal or leaving
                    guard let share = existing.compactMap({ $0 as? Share }).randomElement(using: &rng),
                        let guest = share.participants.first(where: { $0.role != .owner && $0.acceptanceStatus != .removed })
                    else { break }
                    if Bool.random(using: &rng) {
                        share.removeParticipant(guest)
                        _ = try owner.modifyRecords(saving: [share])
                    } else if let (_, container) = guests.first(where: { $0.0.userRecordID == guest.userIdentity.userRecordID }) {
                        _ = try container.sharedCloudDatabase.modifyRecords(deleting: [share.recordID])
                    }
                }
            } catch let e as ShareFlowError
                where [
                    .permissionFailure, .invalidArguments, .serverRecordChanged, .alreadyShared, .unknownItem,
                    .partialFailure, .batchRequestFailed,
                ].contains(e.code)
            {
            }

            let limit = Int.random(in: 1...6, using: &rng)
            try ownerReplica.follow(limit: limit)
            for zone in zones {
                var expected: [String: String] = [:]
                for r in allRecords(zone) {
                    expected[r.recordID.recordName] = r.recordChangeTag!
                    if !(r is Share), let copy = ownerReplica.zones[zone]?.records[r.recordID.recordName] {
                        XCTAssertEqual(copy.fields, r.fields, "seed \(seed) step \(step): owner's fields of \(r.recordID.recordName)")
                        XCTAssertEqual(copy.parent, r.parent?.recordName)
                    }
                }
                XCTAssertEqual(
                    ownerReplica.zones[zone]?.records.mapValues(\.tag) ?? [:],
                    expected,
                    "seed \(seed) step \(step): owner's copy of \(zone.zoneName)"
                )
            }
            for ((account, container), replica) in zip(guests, guestReplicas) {
                try replica.follow(limit: limit)
                for zone in zones {
                    var expected: [String: String] = [:]
                    for name in names[zone, default: []] {
                        if let r = try? container.sharedCloudDatabase.fetchRecord(RecordID(recordName: name, zoneID: zone)) {
                            expected[name] = r.recordChangeTag
                            if !(r is Share), let copy = replica.zones[zone]?.records[name] {
                                XCTAssertEqual(copy.fields, r.fields, "seed \(seed) step \(step): guest's fields of \(name)")
                            }
                        }
                    }
                    sightings += expected.count
                    let copy = replica.zones[zone]?.records.mapValues(\.tag)
                    if expected.isEmpty {
                        XCTAssertTrue(
                            copy?.isEmpty ?? true,
                            "seed \(seed) step \(step): \(account.emails[0]) keeps \(copy ?? [:]) of \(zone.zoneName)"
                        )
                    } else {
                        XCTAssertEqual(copy ?? [:], expected, "seed \(seed) step \(step): \(account.emails[0])'s copy of \(zone.zoneName)")
                    }
                }
            }
        }
        print("batch seed \(seed): \(counter) names, sightings \(sightings)")
        XCTAssertGreaterThan(sightings, steps / 4)
    }
}
