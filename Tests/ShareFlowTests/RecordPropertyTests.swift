import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// Properties of R29, R30 and R33 under random interleavings (seeded, so a failure names the
/// seed that replays it): copies fetched with random `desiredKeys`, edited and saved under
/// random policies, never lose a field they did not delete; writers to the public database
/// change only their own records; pages read while records are added and deleted neither skip
/// nor repeat a record that was there throughout.
class RecordPropertyTests: XCTestCase {
    typealias Generator = ShareInterleavingTests.Generator

    func testPartialCopiesNeverLoseAField() throws {
        for seed: UInt64 in TestStore.seeds([3, 11, 2026]) {
            var g = Generator(state: seed)
            let w = try World()
            let db = w.c.privateCloudDatabase
            let keys = ["a", "b", "c", "d", "e"]
            var model: [String: [String: FieldValue]] = [:]  // what the store must hold
            for n in 0..<4 {
                let r = Record(
                    recordType: "Note",
                    recordID: RecordID(recordName: "r\(n)", zoneID: w.zone.zoneID),
                    fields: Dictionary(uniqueKeysWithValues: keys.map { ($0, .integer(0)) })
                )
                XCTAssertNil(try db.modifyRecords(saving: [r]).error)
                model[r.recordID.recordName] = r.fields
            }
            for step in 0..<120 {
                let name = "r\(g.below(4))"
                let id = RecordID(recordName: name, zoneID: w.zone.zoneID)
                let wanted = keys.filter { _ in g.below(2) == 0 }
                let op = FetchRecordsOperation(recordIDs: [id])
                op.desiredKeys = g.below(4) == 0 ? nil : wanted
                var copy: Record?
                op.perRecordResultBlock = { _, r in copy = try? r.get() }
                op.database = db
                w.c.add(op)
                op.waitUntilFinished()
                let record = try XCTUnwrap(copy)
                // Edit some of the keys the copy holds: set a value or delete (nil).
                var expected = model[name]!
                for key in record.fields.keys where g.below(3) == 0 {
                    if g.below(4) == 0 {
                        record[key] = nil
                        expected[key] = nil
                    } else {
                        let v = FieldValue.integer(Int64(step))
                        record[key] = v
                        expected[key] = v
                    }
                }
                let policy = g.pick(RecordSavePolicy.allCases)
                if policy == .allKeys { for (k, v) in record.fields { expected[k] = v } }
                XCTAssertNil(try db.modifyRecords(saving: [record], savePolicy: policy).error, "seed \(seed) step \(step)")
                model[name] = expected
                XCTAssertEqual(try db.fetchRecord(id).fields, expected, "seed \(seed) step \(step): \(policy), keys \(op.desiredKeys ?? [])")
            }
        }
    }

    func testPublicWritersChangeOnlyTheirOwnRecords() throws {
        for seed: UInt64 in TestStore.seeds([5, 17]) {
            var g = Generator(state: seed)
            let w = try World()
            let writers = [w.c, w.bc, w.cc]
            var owner: [String: Int] = [:]
            var text: [String: String] = [:]
            for step in 0..<120 {
                let who = g.below(3)
                let name = "p\(g.below(6))"
                let db = writers[who].publicCloudDatabase
                let id = RecordID(recordName: name, zoneID: .default)
                let existing = try? db.fetchRecord(id)
                let record = existing ?? Record(recordType: "Notice", recordID: id)
                record["text"] = .string("\(who)@\(step)")
                let doDelete = existing != nil && g.below(4) == 0
                let result =
                    doDelete
                    ? try db.modifyRecords(deleting: [id]) : try db.modifyRecords(saving: [record], savePolicy: g.pick(RecordSavePolicy.allCases))
                let mayWrite = owner[name] == nil || owner[name] == who
                if mayWrite {
                    XCTAssertNil(result.firstError, "seed \(seed) step \(step)")
                    if doDelete {
                        owner[name] = nil
                        text[name] = nil
                    } else {
                        owner[name] = who
                        text[name] = "\(who)@\(step)"
                    }
                } else {
                    XCTAssertEqual(result.firstError?.code, .permissionFailure, "seed \(seed) step \(step)")
                }
                for (n, t) in text {
                    XCTAssertEqual(try w.c.publicCloudDatabase.fetchRecord(RecordID(recordName: n, zoneID: .default))["text"], .string(t))
                }
            }
        }
    }

    func testPagesUnderConcurrentEditsNeitherSkipNorRepeat() throws {
        for seed: UInt64 in TestStore.seeds([9, 23, 77]) {
            var g = Generator(state: seed)
            let w = try World()
            let db = w.c.privateCloudDatabase
            var live = Set<String>()
            func save(_ n: Int) throws {
                let r = Record(
                    recordType: "Note",
                    recordID: RecordID(recordName: "n\(n)", zoneID: w.zone.zoneID),
                    fields: ["rank": .integer(Int64(g.below(10)))]
                )
                XCTAssertNil(try db.modifyRecords(saving: [r]).error)
                live.insert("n\(n)")
            }
            for n in 0..<40 { try save(n) }
            let before = live
            let sorts = g.pick([[SortDescriptor(key: "rank")], [SortDescriptor(key: "rank", ascending: false)], []])
            var (page, cursor) = try db.records(
                matching: Query(recordType: "Note", sortDescriptors: sorts),
                inZoneWith: w.zone.zoneID,
                resultsLimit: 1 + g.below(7)
            )
            var seen = page.map(\.recordID.recordName)
            var touched = Set<String>()
            var next = 100
            while let c = cursor {
                for _ in 0..<g.below(4) {
                    if g.below(2) == 0, let victim = live.randomElement(using: &g) {
                        XCTAssertNil(try db.modifyRecords(deleting: [RecordID(recordName: victim, zoneID: w.zone.zoneID)]).error)
                        live.remove(victim)
                        touched.insert(victim)
                    } else {
                        try save(next)
                        touched.insert("n\(next)")
                        next += 1
                    }
                }
                (page, cursor) = try db.records(continuingMatchFrom: c, resultsLimit: 1 + g.below(7))
                seen += page.map(\.recordID.recordName)
            }
            XCTAssertEqual(seen.count, Set(seen).count, "seed \(seed): a record repeated")
            let throughout = before.subtracting(touched)
            XCTAssertTrue(throughout.isSubset(of: Set(seen)), "seed \(seed): skipped \(throughout.subtracting(seen))")
        }
    }
}

extension ShareInterleavingTests.Generator: RandomNumberGenerator {}
