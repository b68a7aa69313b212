import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R33: a query cursor continues after the last record returned, by its sort values and name
/// (a keyset, not an offset): deletes and inserts between two pages neither hide nor repeat a
/// record that was there throughout.
class KeysetPagingTests: XCTestCase {
    func save(_ w: World, _ names: [String]) throws {
        let records = names.map {
            Record(
                recordType: "Note",
                recordID: RecordID(recordName: $0, zoneID: w.zone.zoneID),
                fields: ["rank": .integer(Int64($0.dropFirst())!)]
            )
        }
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: records).error)
    }

    func testDeletesAndInsertsBetweenPagesNeitherHideNorRepeat() throws {
        for sorts in [[SortDescriptor(key: "rank")], [SortDescriptor(key: "rank", ascending: false)], []] {
            let w = try World()
            let db = w.c.privateCloudDatabase
            try save(w, (10..<30).map { "n\($0)" })
            let query = Query(recordType: "Note", sortDescriptors: sorts)
            var (page, cursor) = try db.records(matching: query, inZoneWith: w.zone.zoneID, resultsLimit: 5)
            var seen = page.map(\.recordID.recordName)
            var deleted: Set<String> = []
            var round = 0
            while let c = cursor {
                // Between pages: delete one record already seen and one not yet seen, insert one
                // before and one after the cursor.
                round += 1
                let before = seen.first { !deleted.contains($0) }!
                let ahead = "n\(sorts.first?.ascending == false ? 10 + round : 29 - round)"
                XCTAssertNil(
                    try db.modifyRecords(deleting: [
                        RecordID(recordName: before, zoneID: w.zone.zoneID),
                        RecordID(recordName: ahead, zoneID: w.zone.zoneID),
                    ]).error
                )
                deleted.formUnion([before, ahead])
                try save(w, ["n\(round)", "n\(100 + round)"])
                (page, cursor) = try db.records(continuingMatchFrom: c, resultsLimit: 5)
                seen += page.map(\.recordID.recordName)
            }
            XCTAssertEqual(seen.count, Set(seen).count, "\(sorts): no record repeats: \(seen)")
            let throughout = Set((10..<30).map { "n\($0)" }).subtracting(deleted)
            XCTAssertTrue(throughout.isSubset(of: Set(seen)), "\(sorts): missing \(throughout.subtracting(seen))")
        }
    }

    /// The orders the store keeps (no sort, the record name, the modification date — read from
    /// an index, a page at a time) give R33's total order: the key, then the name ascending;
    /// paged with a predicate, they give exactly the matching records in that order.
    func testStoreOrdersAreTheTotalOrder() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        for round in 0..<4 {
            try save(w, (0..<12).map { "n\(round * 100 + $0)" })
        }
        let all = try db.records(matching: Query(recordType: "Note"), inZoneWith: w.zone.zoneID).records
        XCTAssertEqual(all.count, 48)
        let predicate = try Predicate(format: "rank >= %@", arguments: [.integer(105)])
        for (sort, ascending) in [
            ("", true), ("recordName", true), ("recordName", false), ("recordID", false),
            ("modificationDate", true), ("modificationDate", false),
        ] {
            let sorts = sort.isEmpty ? [] : [SortDescriptor(key: sort, ascending: ascending)]
            let expected = all.filter {
                if case .integer(let r)? = $0["rank"] { return r >= 105 }
                return false
            }.sorted { a, b in
                let (x, y) = (a.recordID.recordName, b.recordID.recordName)
                switch sort {
                case "modificationDate":
                    let (da, db) = (a.modificationDate!, b.modificationDate!)
                    return da == db ? x < y : (ascending ? da < db : da > db)
                case "": return x < y
                default: return ascending ? x < y : x > y
                }
            }.map(\.recordID.recordName)
            var (page, cursor) = try db.records(
                matching: Query(recordType: "Note", predicate: predicate, sortDescriptors: sorts),
                inZoneWith: w.zone.zoneID,
                resultsLimit: 5
            )
            var seen = page.map(\.recordID.recordName)
            while let c = cursor {
                (page, cursor) = try db.records(continuingMatchFrom: c, resultsLimit: 5)
                seen += page.map(\.recordID.recordName)
            }
            XCTAssertEqual(seen, expected, "\(sort) \(ascending)")
        }
    }
}
