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
        let walk = try ConvergenceWalk()
        let (w, owner, guests, zones) = (walk.world, walk.owner, walk.guests, walk.zones)
        var counter = 0
        // What the run went through (besides the guests' sightings), printed at the end.
        var tombstonedViews = 0
        var zoneShares = 0

        for step in 0..<steps {
            let (zone, existing, plain) = walk.pickZone(using: &rng)
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
                    walk.names[zone, default: []].append(name)
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
                        if !walk.names[zone, default: []].contains(share.recordID.recordName) {
                            walk.names[zone, default: []].append(share.recordID.recordName)
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
                    walk.names[zone, default: []].append(share.recordID.recordName)
                case 7, 8:  // a guest accepts what they were invited to
                    let (_, container) = guests.randomElement(using: &rng)!
                    for share in existing.compactMap({ $0 as? Share }) {
                        if let url = share.url { _ = try? w.accept(url, in: container) }
                    }
                default:  // a guest removed by the owner, or leaving
                    try walk.removeOrLeave(existing, using: &rng)
                }
            } catch let e as ShareFlowError where ConvergenceWalk.refusals.contains(e.code) {
                // A step the rules refuse changes nothing; the copies must still match.
            }

            // The owner's copy: every record of her zones.
            try walk.ownerReplica.follow(limit: 4)
            for zone in zones {
                let expected = Dictionary(uniqueKeysWithValues: walk.allRecords(zone).map { ($0.recordID.recordName, $0.recordChangeTag!) })
                XCTAssertEqual(
                    walk.ownerReplica.zones[zone]?.records.mapValues(\.tag) ?? [:],
                    expected,
                    "seed \(seed) step \(step): the owner's copy of \(zone.zoneName)"
                )
            }
            // Each guest's copy: what their shared database lets them fetch.
            try walk.checkGuestCopies(limit: 4, "seed \(seed) step \(step)") { copy, _, expected in
                if let copy, copy.count > expected.count { tombstonedViews += 1 }
            }
        }
        XCTAssertGreaterThan(walk.sightings, steps / 4, "seed \(seed): the guests saw shared records")
        print(
            "seed \(seed): \(counter) records made, \(zoneShares) zone shares, guest sightings \(walk.sightings), \(tombstonedViews) copies ahead (failures above)"
        )
    }
}
