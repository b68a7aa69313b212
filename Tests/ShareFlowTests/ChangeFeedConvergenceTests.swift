import Foundation
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// SPEC §14 S6 as a property: random saves, deletes, re-parents, shares, accepts, removals
/// and leaves by the owner and her guests, while each guest (and the owner) follows the
/// database and zone feeds from their tokens; after every step each reader's copy equals a
/// full fetch of what they may read — nothing lost, nothing duplicated, no stale version.
class ChangeFeedConvergenceTests: XCTestCase {
    func testReadersFollowingTheFeedsConvergeOnWhatTheyMayRead() throws {
        for seed: UInt64 in TestStore.seeds([1, 2, 3, 4]) {
            try run(seed: seed, steps: 120)
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
        // What the run went through, so a run that never shared anything fails instead of passing.
        var guestSightings = 0
        var tombstonedViews = 0
        var zoneShares = 0

        /// The owner's records of the zone now (a name deleted since is skipped).
        func allRecords(_ zone: RecordZoneID) -> [Record] {
            names[zone, default: []].compactMap { try? owner.fetchRecord(RecordID(recordName: $0, zoneID: zone)) }
        }

        for step in 0..<steps {
            let zone = zones[Int.random(in: 0..<zones.count, using: &rng)]
            let existing = allRecords(zone)
            let plain = existing.filter { $0.recordType == "Item" }
            do {
                switch Int.random(in: 0..<10, using: &rng) {
                case 0, 1, 2:  // a new record, maybe under another
                    counter += 1
                    let name = "r\(counter)"
                    let parent = plain.isEmpty || Bool.random(using: &rng) ? nil : plain.randomElement(using: &rng)!.recordID
                    let r = Record(
                        recordType: "Item",
                        recordID: RecordID(recordName: name, zoneID: zone),
                        fields: ["n": .integer(Int64(step))],
                        parent: parent
                    )
                    _ = try owner.modifyRecords(saving: [r])
                    names[zone, default: []].append(name)
                case 3:  // an edit
                    guard let r = plain.randomElement(using: &rng) else { break }
                    r["n"] = .integer(Int64(step))
                    _ = try owner.modifyRecords(saving: [r])
                case 4:  // a re-parent: under an older record (no cycle), or to the top
                    guard let r = plain.randomElement(using: &rng) else { break }
                    let index = Int(r.recordID.recordName.dropFirst())!
                    let older = plain.filter { Int($0.recordID.recordName.dropFirst())! < index }
                    r.parent = Bool.random(using: &rng) ? older.randomElement(using: &rng)?.recordID : nil
                    _ = try owner.modifyRecords(saving: [r])
                case 5:  // a delete (children outlive it, R34)
                    guard let r = existing.randomElement(using: &rng) else { break }
                    _ = try owner.modifyRecords(deleting: [r.recordID])
                case 6:  // a share: of a top record, with a guest or two (some public); or of a whole unshared zone
                    let hasShares = existing.contains { $0 is Share }
                    if zone == zones[1], !hasShares, Bool.random(using: &rng) {
                        let share = Share(zoneID: zone)
                        for (account, _) in guests where Bool.random(using: &rng) {
                            share.addParticipant(try w.participant(account.emails.first!))
                        }
                        if try owner.modifyRecords(saving: [share]).error == nil { zoneShares += 1 }
                        if !names[zone, default: []].contains(share.recordID.recordName) {
                            names[zone, default: []].append(share.recordID.recordName)
                        }
                        break
                    }
                    guard let root = plain.filter({ $0.parent == nil && $0.share == nil }).randomElement(using: &rng) else { break }
                    let share = Share(rootRecord: root)
                    if Bool.random(using: &rng) { share.publicPermission = .readOnly }
                    for (account, _) in guests where Bool.random(using: &rng) {
                        share.addParticipant(try w.participant(account.emails.first!, permission: Bool.random(using: &rng) ? .readOnly : .readWrite))
                    }
                    _ = try owner.modifyRecords(saving: [root, share])
                    names[zone, default: []].append(share.recordID.recordName)
                case 7, 8:  // a guest accepts what they were invited to
                    let (_, container) = guests.randomElement(using: &rng)!
                    for share in existing.compactMap({ $0 as? Share }) {
                        if let url = share.url { _ = try? w.accept(url, in: container) }
                    }
                default:  // a guest removed by the owner, or leaving
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
                // A step the rules refuse changes nothing; the copies must still match.
            }

            // The owner's copy: every record of her zones.
            try ownerReplica.follow(limit: 4)
            for zone in zones {
                let expected = Dictionary(uniqueKeysWithValues: allRecords(zone).map { ($0.recordID.recordName, $0.recordChangeTag!) })
                XCTAssertEqual(
                    ownerReplica.zones[zone]?.records.mapValues(\.tag) ?? [:],
                    expected,
                    "seed \(seed) step \(step): the owner's copy of \(zone.zoneName)"
                )
            }
            // Each guest's copy: what their shared database lets them fetch.
            for ((account, container), replica) in zip(guests, guestReplicas) {
                try replica.follow(limit: 4)
                for zone in zones {
                    var expected: [String: String] = [:]
                    for name in names[zone, default: []] {
                        if let r = try? container.sharedCloudDatabase.fetchRecord(RecordID(recordName: name, zoneID: zone)) {
                            expected[name] = r.recordChangeTag
                        }
                    }
                    let copy = replica.zones[zone]?.records.mapValues(\.tag)
                    guestSightings += expected.count
                    if let copy, copy.count > expected.count { tombstonedViews += 1 }
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
        XCTAssertGreaterThan(guestSightings, steps / 4, "seed \(seed): the guests saw shared records")
        print(
            "seed \(seed): \(counter) records made, \(zoneShares) zone shares, guest sightings \(guestSightings), \(tombstonedViews) copies ahead (failures above)"
        )
    }
}
