import Foundation
import XCTest

@testable import ShareFlow

/// What the change log's convergence test cases (OwnerFeedTests, ViewerFeedTests,
/// ChangeLogMigrationTests) check after each step: a reader following its feeds from tokens
/// (`FeedReplica`) holds what a full fetch gives, and the store hands out no position twice.
protocol FeedChecks {}

extension FeedChecks {
    /// What `db` fetches now of the zone's records (every name the store has ever held there):
    /// name → change tag, and fields for a plain record.
    func truth(_ db: CloudDatabase, zone: RecordZoneID, store: Store) throws -> [String: FeedReplica.Copy] {
        let names = try store.read { tx in
            try tx.texts(
                """
                SELECT r.name FROM record r JOIN zone z ON z.id = r.zoneID WHERE z.name = ? AND z.scope = 'private'
                UNION SELECT l.name FROM zone_change l JOIN zone z ON z.id = l.zoneID WHERE z.name = ?
                UNION SELECT l.name FROM view_change l JOIN zone z ON z.id = l.zoneID WHERE z.name = ?
                """,
                [zone.zoneName, zone.zoneName, zone.zoneName]
            )
        }
        var found: [String: FeedReplica.Copy] = [:]
        for name in names {
            guard let r = try? db.fetchRecord(RecordID(recordName: name, zoneID: zone)) else { continue }
            found[name] = FeedReplica.Copy(tag: r.recordChangeTag!, fields: r is Share ? [:] : r.fields, parent: r.parent?.recordName)
        }
        return found
    }

    func assertConverged(
        _ replica: FeedReplica,
        zones: [RecordZoneID],
        store: Store,
        limit: Int,
        _ what: String,
        file: StaticString = #filePath,
        line: UInt = #line
    ) throws {
        try replica.follow(limit: limit)
        for zone in zones {
            let expected = try truth(replica.db, zone: zone, store: store)
            let copy = replica.zones[zone]?.records ?? [:]
            XCTAssertEqual(copy, expected, "\(what): \(zone.zoneName) (\(replica.db.databaseScope))", file: file, line: line)
        }
    }

    /// No position twice in a feed, none above its zone's counter, none at 0 in a private zone.
    func assertPositionsSound(_ store: Store, _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try store.read { tx in
            let twice = try tx.rows(
                """
                SELECT zoneID, seq, COUNT(*) FROM (
                    SELECT zoneID, seq FROM record WHERE seq > 0
                    UNION ALL SELECT l.zoneID, l.seq FROM zone_change l
                    WHERE NOT EXISTS (SELECT 1 FROM record x WHERE x.zoneID = l.zoneID AND x.name = l.name)) t
                GROUP BY 1, 2 HAVING COUNT(*) > 1
                """
            )
            XCTAssertEqual(twice.count, 0, "\(what): owner positions twice \(twice)", file: file, line: line)
            let viewerTwice = try tx.rows("SELECT zoneID, viewerID, seq, COUNT(*) FROM view_change GROUP BY 1, 2, 3 HAVING COUNT(*) > 1")
            XCTAssertEqual(viewerTwice.count, 0, "\(what): viewer positions twice \(viewerTwice)", file: file, line: line)
            let above = try tx.rows(
                """
                SELECT * FROM (
                    SELECT z.id, z.changeSeq, MAX(COALESCE((SELECT MAX(seq) FROM record WHERE zoneID = z.id), 0),
                                                   COALESCE((SELECT MAX(seq) FROM zone_change WHERE zoneID = z.id), 0),
                                                   COALESCE((SELECT MAX(seq) FROM view_change WHERE zoneID = z.id), 0)) AS top
                    FROM zone z) t
                WHERE top > changeSeq
                """
            )
            XCTAssertEqual(above.count, 0, "\(what): positions above the counter \(above)", file: file, line: line)
            let unplaced = try tx.rows("SELECT r.name FROM record r JOIN zone z ON z.id = r.zoneID WHERE z.scope = 'private' AND r.seq = 0")
            XCTAssertEqual(unplaced.count, 0, "\(what): private records at no position \(unplaced)", file: file, line: line)
        }
    }

    func item(_ name: String, _ zone: RecordZoneID, parent: RecordID? = nil, n: Int64 = 0) -> ShareFlow.Record {
        ShareFlow.Record(recordType: "Item", recordID: RecordID(recordName: name, zoneID: zone), fields: ["n": .integer(n)], parent: parent)
    }
}
