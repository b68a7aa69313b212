import Foundation
import GRDB

/// Everything the store holds, as rows: what a dry run compares before and after
/// (`StoreSnapshot`, Engine/DryRun). Read in one read transaction.
package struct StoreContents {
    package var accounts: [Account] = []
    package var zones: [(id: Int64, container: ContainerID, ownerID: Int64, name: String)] = []
    /// Plain records (no share records), with the row ID of their zone.
    package var records: [(record: RecordRow, zoneRowID: Int64)] = []
    /// Shares with their record's fields (the title).
    package var shares: [(share: ShareRow, fields: [String: FieldValue])] = []
    /// Participants with the row ID of their share.
    package var participants: [(participant: ParticipantRow, shareRowID: Int64)] = []
    /// Open access requests and blocked identities (SPEC §17): ID, address, share's row ID.
    package var requests: [(id: String, lookup: LookupInfo, shareRowID: Int64)] = []
    package var blocks: [(id: String, lookup: LookupInfo, shareRowID: Int64)] = []
}

extension StoreTransaction {
    /// Every account, zone, record, share and participant of the store.
    package func contents() throws -> StoreContents {
        var c = StoreContents()
        c.accounts = try accountIDs().compactMap { try account(id: $0) }
        c.zones = try fetchAll("SELECT id, container, ownerID, name, environment FROM zone", table: "zone", keyAt: 0) {
            (
                try $0.integer(0, "id"), ContainerID(try $0.text(1, "container"), try $0.word(4, "environment")),
                try $0.integer(2, "ownerID"), try $0.text(3, "name")
            )
        }
        c.records = try fetchAll(
            """
            SELECT \(StoreTransaction.recordColumns), r.zoneID FROM \(StoreTransaction.recordSource) WHERE r.type != 'cloudkit.share'
            """,
            table: "record",
            keyAt: 0
        ) { (try StoreTransaction.recordRow($0), try $0.integer(StoreTransaction.recordColumnCount, "zoneID")) }
        c.shares = try fetchAll(
            """
            SELECT \(StoreTransaction.shareColumns), r.fields FROM share s JOIN record r ON r.id = s.recordID
            """,
            table: "share",
            keyAt: 0
        ) { (try StoreTransaction.shareRow($0), try $0.of("record", keyAt: 1).fields(8, "fields")) }
        c.participants = try fetchAll(
            """
            SELECT \(StoreTransaction.participantColumns), shareID FROM participant
            """,
            table: "participant",
            keyAt: 0
        ) { (try StoreTransaction.participantRow($0), try $0.integer(11, "shareID")) }
        c.requests = try fetchAll("SELECT id, requestID, lookupKind, lookupValue, shareID FROM share_request", table: "share_request", keyAt: 0) {
            (try $0.text(1, "requestID"), try $0.lookup(kindAt: 2, "lookupKind", valueAt: 3, "lookupValue"), try $0.integer(4, "shareID"))
        }
        c.blocks = try fetchAll("SELECT id, blockID, lookupKind, lookupValue, shareID FROM share_block", table: "share_block", keyAt: 0) {
            (try $0.text(1, "blockID"), try $0.lookup(kindAt: 2, "lookupKind", valueAt: 3, "lookupValue"), try $0.integer(4, "shareID"))
        }
        return c
    }
}
