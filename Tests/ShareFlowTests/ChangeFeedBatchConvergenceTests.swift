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
        let walk = try ConvergenceWalk()
        let (w, owner, guests, zones) = (walk.world, walk.owner, walk.guests, walk.zones)
        var counter = 0
        func newName() -> String {
            counter += 1
            return "r\(counter)"
        }

        for step in 0..<steps {
            let (zone, existing, plain) = walk.pickZone(using: &rng)
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
                        walk.names[zone, default: []].append(name)
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
                        walk.names[zone, default: []].append(share.recordID.recordName)
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
                        walk.names[zone, default: []].append(name)
                        return Record(recordType: "Item", recordID: RecordID(recordName: name, zoneID: zone), fields: ["n": .integer(1)])
                    }
                    _ = try owner.modifyRecords(saving: items + [share])
                    if !walk.names[zone, default: []].contains(share.recordID.recordName) {
                        walk.names[zone, default: []].append(share.recordID.recordName)
                    }
                case 5, 6:  // a guest accepts everything they can
                    let (_, container) = guests.randomElement(using: &rng)!
                    for share in existing.compactMap({ $0 as? Share }) {
                        if let url = share.url { _ = try? w.accept(url, in: container) }
                    }
                case 7, 8:  // a guest edits and adds in a batch in their shared database
                    let (_, container) = guests.randomElement(using: &rng)!
                    let shared = container.sharedCloudDatabase
                    let visible = walk.names[zone, default: []].compactMap { try? shared.fetchRecord(RecordID(recordName: $0, zoneID: zone)) }
                        .filter { $0.recordType == "Item" }
                    guard !visible.isEmpty else { break }
                    var saving: [Record] = []
                    for r in visible.shuffled(using: &rng).prefix(2) {
                        r["g"] = .string("guest \(step)")
                        saving.append(r)
                    }
                    let name = newName()
                    walk.names[zone, default: []].append(name)
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
                    try walk.removeOrLeave(existing, using: &rng)
                }
            } catch let e as ShareFlowError where ConvergenceWalk.refusals.contains(e.code) {
            }

            let limit = Int.random(in: 1...6, using: &rng)
            try walk.ownerReplica.follow(limit: limit)
            for zone in zones {
                var expected: [String: String] = [:]
                for r in walk.allRecords(zone) {
                    expected[r.recordID.recordName] = r.recordChangeTag!
                    if !(r is Share), let copy = walk.ownerReplica.zones[zone]?.records[r.recordID.recordName] {
                        XCTAssertEqual(copy.fields, r.fields, "seed \(seed) step \(step): owner's fields of \(r.recordID.recordName)")
                        XCTAssertEqual(copy.parent, r.parent?.recordName)
                    }
                }
                XCTAssertEqual(
                    walk.ownerReplica.zones[zone]?.records.mapValues(\.tag) ?? [:],
                    expected,
                    "seed \(seed) step \(step): owner's copy of \(zone.zoneName)"
                )
            }
            try walk.checkGuestCopies(limit: limit, "seed \(seed) step \(step)") { copy, fetched, _ in
                for (name, r) in fetched where !(r is Share) {
                    if let copy = copy?[name] { XCTAssertEqual(copy.fields, r.fields, "seed \(seed) step \(step): guest's fields of \(name)") }
                }
            }
        }
        print("batch seed \(seed): \(counter) names, sightings \(walk.sightings)")
        XCTAssertGreaterThan(walk.sightings, steps / 4)
    }
}
