import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// What a participant's feed of a shared zone holds: the flat-zone viewer cache (saves in a
/// zone with no rooted share read its viewers once) and the accept path's shortcuts (the
/// accepting participant is not sent the share's record twice, the others' views are not
/// looked at again, a childless root), through accepts, leaving, removal, permission changes
/// and roots deleted and made again. Each participant's reader, following tokens, stays equal
/// to a full fetch, and no position is ever handed out twice.
class ViewerFeedTests: XCTestCase {
    // MARK: Flat and rooted zones

    /// In a zone with no rooted share (saves read its viewers once), a share made in the same
    /// transaction as earlier saves, children moved under its root in it and after, accepted
    /// later; then records moved into and out of the hierarchy: participants converge.
    func testAShareMadeInATransactionThatSavedInAFlatZone() throws {
        let w = try World()
        let owner = w.c.privateCloudDatabase
        let store = w.engine.store
        let zone = try owner.saveZone("Was flat").zoneID
        _ = try owner.modifyRecords(saving: [item("loose", zone), item("kid", zone)])
        let root = item("root", zone)
        let share = Share(rootRecord: root)
        share.addParticipant(try w.participant("bob@example.com"))
        share.addParticipant(try w.participant("carol@example.com", permission: .readWrite))
        try w.engine.transaction { _ in
            _ = try owner.modifyRecords(saving: [item("before", zone)])
            _ = try owner.modifyRecords(saving: [root, share, item("under", zone, parent: root.recordID)])
            let kid = try owner.fetchRecord(RecordID(recordName: "kid", zoneID: zone))
            kid.parent = root.recordID
            _ = try owner.modifyRecords(saving: [kid, item("after", zone, parent: root.recordID)])
        }
        let replicas = [FeedReplica(owner), FeedReplica(w.bc.sharedCloudDatabase), FeedReplica(w.cc.sharedCloudDatabase)]
        func check(_ what: String) throws {
            for r in replicas { try assertConverged(r, zones: [zone], store: store, limit: 1, what) }
            try assertPositionsSound(store, what)
        }
        try check("shared, not accepted")
        let url = (try owner.fetchRecord(share.recordID) as! Share).url!
        try w.accept(url, in: w.bc)
        try check("bob accepted")
        // Moved out and in again in one transaction, and a loose record in.
        try w.engine.transaction { _ in
            let kid = try owner.fetchRecord(RecordID(recordName: "kid", zoneID: zone))
            kid.parent = nil
            _ = try owner.modifyRecords(saving: [kid])
            let loose = try owner.fetchRecord(RecordID(recordName: "loose", zoneID: zone))
            loose.parent = RecordID(recordName: "under", zoneID: zone)
            _ = try owner.modifyRecords(saving: [loose])
            try w.accept(url, in: w.cc)
            let again = try owner.fetchRecord(RecordID(recordName: "kid", zoneID: zone))
            again.parent = RecordID(recordName: "loose", zoneID: zone)
            _ = try owner.modifyRecords(saving: [again])
        }
        try check("moved and carol accepted in one transaction")
        // The share deleted, and a zone share made in the same transaction.
        try w.engine.transaction { _ in
            _ = try owner.modifyRecords(deleting: [share.recordID])
            let zoneShare = Share(zoneID: zone)
            zoneShare.addParticipant(try w.participant("bob@example.com"))
            _ = try owner.modifyRecords(saving: [zoneShare, item("in zone share", zone)])
        }
        try check("a zone share for the rooted one")
        let zoneShare = try owner.fetchRecord(RecordID(recordName: Share.zoneShareName, zoneID: zone))
        try w.accept((zoneShare as! Share).url!, in: w.bc)
        try check("bob accepted the zone share")
        // Moves in a flat zone shared whole: each viewer sees every record wherever it is.
        try w.engine.transaction { _ in
            let loose = try owner.fetchRecord(RecordID(recordName: "loose", zoneID: zone))
            loose.parent = nil
            _ = try owner.modifyRecords(saving: [loose, item("new under kid", zone, parent: RecordID(recordName: "kid", zoneID: zone))])
        }
        try check("moves in the flat zone")
        // The zone share gone, a rooted one made again over the old root, in one transaction.
        try w.engine.transaction { _ in
            _ = try owner.modifyRecords(deleting: [zoneShare.recordID])
            let top = try owner.fetchRecord(RecordID(recordName: "root", zoneID: zone))
            let again = Share(rootRecord: top)
            again.addParticipant(try w.participant("carol@example.com"))
            _ = try owner.modifyRecords(saving: [top, again, item("late", zone, parent: top.recordID)])
        }
        try check("rooted again")
    }

    // MARK: Accept paths

    /// Accepts, leaving, removal, permission changes and a public share's joiners, each
    /// followed by the participants' readers: the accepting one is not sent the share's record
    /// twice and the others' views are not looked at again — every reader still converges.
    func testAcceptLeaveRemoveAndPermissionSequencesConverge() throws {
        let w = try World()
        let owner = w.c.privateCloudDatabase
        let store = w.engine.store
        let zone = w.zone.zoneID
        let share = try w.share(["bob@example.com"])
        _ = try owner.modifyRecords(saving: [
            item("other root", zone), item("other kid", zone, parent: RecordID(recordName: "other root", zoneID: zone)),
        ])
        let readers = [FeedReplica(owner), FeedReplica(w.bc.sharedCloudDatabase), FeedReplica(w.cc.sharedCloudDatabase)]
        func check(_ what: String) throws {
            for limit in [1, 5] {
                for r in readers { try assertConverged(r, zones: [zone], store: store, limit: limit, what) }
            }
            try assertPositionsSound(store, what)
        }
        func current() throws -> Share { try owner.fetchRecord(share.recordID) as! Share }
        let url = share.url!
        try check("start")
        try w.accept(url, in: w.bc)
        try check("bob accepted")
        var s = try current()
        s.publicPermission = .readOnly
        _ = try owner.modifyRecords(saving: [s])
        try check("made public")
        try w.accept(url, in: w.cc)
        try check("carol joined as a public user")
        s = try current()
        s.participants.first { $0.userIdentity.userRecordID == w.bob.userRecordID }?.permission = .readWrite
        _ = try owner.modifyRecords(saving: [s])
        try check("bob's permission raised")
        s = try current()
        s.publicPermission = .readWrite
        _ = try owner.modifyRecords(saving: [s])
        try check("public permission raised")
        s = try current()
        s.publicPermission = .none
        _ = try? owner.modifyRecords(saving: [s])
        try check("public permission none")
        // Bob leaves; is added again; accepts again.
        _ = try w.bc.sharedCloudDatabase.modifyRecords(deleting: [share.recordID])
        try check("bob left")
        s = try current()
        if let bob = s.participants.first(where: { $0.userIdentity.userRecordID == w.bob.userRecordID }) { s.removeParticipant(bob) }
        s.addParticipant(try w.participant("bob@example.com"))
        _ = try? owner.modifyRecords(saving: [s])
        try check("bob added again")
        _ = try? w.accept(url, in: w.bc)
        try check("bob accepted again")
        // Removed by the owner while a record changes in the same transaction.
        try w.engine.transaction { _ in
            let s = try current()
            if let bob = s.participants.first(where: { $0.userIdentity.userRecordID == w.bob.userRecordID }) { s.removeParticipant(bob) }
            let day = try owner.fetchRecord(w.day.recordID)
            day["note"] = .string("edited")
            _ = try owner.modifyRecords(saving: [day, s])
        }
        try check("bob removed with an edit")
        // Carol accepts a second share in the zone while she reads the first.
        let second = Share(rootRecord: try owner.fetchRecord(RecordID(recordName: "other root", zoneID: zone)))
        second.addParticipant(try w.participant("carol@example.com"))
        second.addParticipant(try w.participant("bob@example.com"))
        _ = try owner.modifyRecords(saving: [try owner.fetchRecord(RecordID(recordName: "other root", zoneID: zone)), second])
        try w.accept((try owner.fetchRecord(second.recordID) as! Share).url!, in: w.cc)
        try check("carol accepted a second share")
        try w.accept((try owner.fetchRecord(second.recordID) as! Share).url!, in: w.bc)
        try check("bob accepted the second share")
        _ = try w.cc.sharedCloudDatabase.modifyRecords(deleting: [second.recordID])
        try check("carol left the second share")
    }

    /// An accept in the same transaction as saves of the share's records (so the accepting
    /// participant's view and the records' entries move together), and two participants
    /// accepting in one transaction.
    func testAcceptsInsideATransactionWithSaves() throws {
        let w = try World()
        let owner = w.c.privateCloudDatabase
        let store = w.engine.store
        let zone = w.zone.zoneID
        let share = try w.share(["bob@example.com", "carol@example.com"])
        let readers = [FeedReplica(owner), FeedReplica(w.bc.sharedCloudDatabase), FeedReplica(w.cc.sharedCloudDatabase)]
        for r in readers { try assertConverged(r, zones: [zone], store: store, limit: 1, "start") }
        try w.engine.transaction { _ in
            let trip = try owner.fetchRecord(w.trip.recordID)
            trip["title"] = .string("before the accept")
            _ = try owner.modifyRecords(saving: [trip, item("new", zone, parent: w.trip.recordID)])
            try w.accept(share.url!, in: w.bc)
            let day = try owner.fetchRecord(w.day.recordID)
            day["n"] = .integer(3)
            _ = try owner.modifyRecords(saving: [day])
            try w.accept(share.url!, in: w.cc)
            let trip2 = try owner.fetchRecord(w.trip.recordID)
            trip2["title"] = .string("after the accepts")
            _ = try owner.modifyRecords(saving: [trip2])
        }
        for r in readers { try assertConverged(r, zones: [zone], store: store, limit: 1, "accepts with saves") }
        try assertPositionsSound(store, "accepts with saves")
    }

    /// A share's root deleted and made again under its name (alone, and with children named
    /// under it before it exists again), and a root without children gaining one: the
    /// accept path's shortcuts for a childless root still give each participant their view.
    func testARootDeletedAndMadeAgain() throws {
        let w = try World()
        let owner = w.c.privateCloudDatabase
        let store = w.engine.store
        let zone = w.zone.zoneID
        let lone = item("lone", zone)
        let share = Share(rootRecord: lone)
        share.addParticipant(try w.participant("bob@example.com"))
        _ = try owner.modifyRecords(saving: [lone, share])
        let readers = [FeedReplica(owner), FeedReplica(w.bc.sharedCloudDatabase)]
        func check(_ what: String) throws {
            for r in readers { try assertConverged(r, zones: [zone], store: store, limit: 1, what) }
            try assertPositionsSound(store, what)
        }
        try w.accept((try owner.fetchRecord(share.recordID) as! Share).url!, in: w.bc)
        try check("accepted a childless root")
        _ = try owner.modifyRecords(saving: [item("child", zone, parent: lone.recordID)])
        try check("a child")
        _ = try? owner.modifyRecords(deleting: [lone.recordID])
        try check("root deleted")
        try w.engine.transaction { _ in
            _ = try? owner.modifyRecords(saving: [item("orphan", zone, parent: lone.recordID)])
            _ = try? owner.modifyRecords(saving: [item("lone", zone, n: 3)])
        }
        try check("root made again, a child named before it")
        let again = Share(rootRecord: try owner.fetchRecord(lone.recordID))
        again.addParticipant(try w.participant("bob@example.com"))
        _ = try? owner.modifyRecords(saving: [try owner.fetchRecord(lone.recordID), again])
        try check("shared again")
        if let url = (try? owner.fetchRecord(again.recordID) as? Share)?.url { _ = try? w.accept(url, in: w.bc) }
        try check("accepted again")
    }
}

extension ViewerFeedTests: FeedChecks {}
