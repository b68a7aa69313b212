import Foundation
import XCTest

@testable import ShareFlow

/// A reader's copy of one database, kept by following its feeds from their tokens (SPEC §14):
/// the zones it holds, and each zone's records by name — change tag, fields (none kept for a
/// share) and parent. The convergence tests compare it with a full fetch after every step.
final class FeedReplica {
    struct Copy: Equatable {
        let tag: String
        let fields: [String: FieldValue]
        let parent: String?
    }

    let db: CloudDatabase
    var databaseToken: String?
    var zones: [RecordZoneID: (token: String?, records: [String: Copy])] = [:]

    init(_ db: CloudDatabase) { self.db = db }

    /// Follows the database feed three zones a page, then each zone's feed `limit` records a page.
    func follow(limit: Int) throws {
        var more = true
        while more {
            let page = try db.databaseChanges(since: databaseToken, resultsLimit: 3)
            for id in page.changedZoneIDs where zones[id] == nil { zones[id] = (nil, [:]) }
            for gone in page.deletions { zones[gone.zoneID] = nil }
            databaseToken = page.changeToken
            more = page.moreComing
        }
        for (id, state) in zones {
            var token = state.token
            var records = state.records
            var more = true
            while more {
                let page = try db.recordZoneChanges(id, since: token, resultsLimit: limit)
                for r in page.modifications {
                    guard let tag = r.recordChangeTag else {
                        XCTFail("\(r.recordID) came from the feed without a change tag")
                        continue
                    }
                    records[r.recordID.recordName] = Copy(tag: tag, fields: r is Share ? [:] : r.fields, parent: r.parent?.recordName)
                }
                for d in page.deletions { records[d.recordID.recordName] = nil }
                token = page.changeToken
                more = page.moreComing
            }
            zones[id] = (token, records)
        }
    }
}
