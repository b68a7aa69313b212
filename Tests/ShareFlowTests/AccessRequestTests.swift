import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// SPEC §17 (share access requests). R38: whether a share takes access requests is the
/// owner's or an administrator's to change; it is kept, and every participant sees it.
class AccessRequestTests: XCTestCase {
    func testR38OnlyTheOwnerOrAnAdministratorChangesWhetherAShareTakesRequests() throws {
        let w = try World()
        let s = try w.share(["bob@example.com"])
        XCTAssertFalse(s.allowsAccessRequests, "off by default")
        try w.accept(s.url!, in: w.bc)

        // The owner turns it on; it is kept, and Bob's copy shows it.
        let owned = try share(w, s.recordID)
        owned.allowsAccessRequests = true
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [owned]).error)
        XCTAssertTrue(try share(w, s.recordID).allowsAccessRequests)
        let bobs = try XCTUnwrap(w.bc.sharedCloudDatabase.fetchRecord(s.recordID) as? Share)
        XCTAssertTrue(bobs.allowsAccessRequests, "every participant sees it")

        // Bob, a participant, cannot turn it off, under any policy; nothing changes.
        for policy in RecordSavePolicy.allCases {
            let copy = try XCTUnwrap(w.bc.sharedCloudDatabase.fetchRecord(s.recordID) as? Share)
            copy.allowsAccessRequests = false
            let error = try w.bc.sharedCloudDatabase.modifyRecords(saving: [copy], savePolicy: policy).firstError
            XCTAssertEqual(error?.code, .permissionFailure, "\(policy): \(String(describing: error))")
        }
        XCTAssertTrue(try share(w, s.recordID).allowsAccessRequests)

        // A copy that leaves it alone saves under changedKeys without turning it back (R29).
        let stale = try share(w, s.recordID)
        let fresh = try share(w, s.recordID)
        fresh.allowsAccessRequests = false
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [fresh]).error)
        stale.title = "renamed"
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [stale], savePolicy: .changedKeys).error)
        XCTAssertFalse(try share(w, s.recordID).allowsAccessRequests, "a copy that did not change it writes it not")

        // Made an administrator, Bob may change it.
        let promote = try share(w, s.recordID)
        promote.participants.first { $0.role == .privateUser }?.role = .administrator
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [promote]).error)
        let admins = try XCTUnwrap(w.bc.sharedCloudDatabase.fetchRecord(s.recordID) as? Share)
        admins.allowsAccessRequests = true
        XCTAssertNil(try w.bc.sharedCloudDatabase.modifyRecords(saving: [admins]).error)
        XCTAssertTrue(try share(w, s.recordID).allowsAccessRequests)
    }

    func testR38ANewShareMayTakeRequestsFromItsFirstSave() throws {
        let w = try World()
        let root = Record(recordType: "Trip", recordID: RecordID(recordName: "open", zoneID: w.zone.zoneID))
        let s = Share(rootRecord: root)
        s.allowsAccessRequests = true
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [root, s]).error)
        XCTAssertTrue(try share(w, s.recordID).allowsAccessRequests)
    }

    /// Alice's share of the trip, taking requests, and Dana, who is on nothing.
    func asking(_ w: World) throws -> (share: Share, dana: Container) {
        let s = try w.share()
        let owned = try share(w, s.recordID)
        owned.allowsAccessRequests = true
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [owned]).error)
        let dana = try w.engine.accounts.create(emails: ["dana@example.com"], name: NameComponents(givenName: "Dana"))
        return (try share(w, s.recordID), try w.engine.session(for: dana).container(World.containerID))
    }

    /// One URL's answer to a request, as the operation gives it.
    func ask(_ c: Container, _ url: String) throws -> Result<Void, ShareFlowError> {
        let (results, error) = c.requestShareAccessResults([url])
        if let error, error.code != .partialFailure { throw error }
        return try XCTUnwrap(results.first?.1)
    }

    func testR39ARequestIsRecordedOnceAndTheSilentAnswersAreTheSame() throws {
        let w = try World()
        let (s, dana) = try asking(w)
        XCTAssertNoThrow(try ask(dana, s.url!).get())
        XCTAssertNoThrow(try ask(dana, s.url!).get(), "asking again refreshes the one entry")
        XCTAssertEqual(try share(w, s.recordID).requesters.map(\.participantLookupInfo), [.emailAddress("dana@example.com")])

        // A share that takes none, an unknown URL, the other environment, a blocked caller:
        // success, nothing recorded.
        let other = Record(recordType: "Trip", recordID: RecordID(recordName: "porto", zoneID: w.zone.zoneID))
        let closed = Share(rootRecord: other)
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [other, closed]).error)
        let production = try w.engine.session(for: w.engine.accounts.find("dana@example.com")!).container(World.containerID, environment: .production)
        for (c, url) in [(dana, closed.url!), (dana, s.url! + "x"), (dana, "https://elsewhere/share/abc"), (production, s.url!)] {
            XCTAssertNoThrow(try ask(c, url).get(), url)
        }
        XCTAssertEqual(try share(w, closed.recordID).requesters.count, 0)
        XCTAssertEqual(try share(w, s.recordID).requesters.count, 1)
        XCTAssertEqual(
            try w.engine.requestShareAccess(url: closed.url!, caller: w.engine.accounts.find("dana@example.com")!, container: dana.containerID),
            .silent
        )

        // The owner and an accepted participant change nothing; a pending one is told.
        XCTAssertNoThrow(try ask(w.c, s.url!).get())
        let invited = try share(w, s.recordID)
        invited.addParticipant(try w.participant("bob@example.com"))
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [invited]).error)
        if case .failure(let e) = try ask(w.bc, s.url!) { XCTAssertEqual(e.code, .participantAlreadyInvited) } else { XCTFail("pending: no error") }
        try w.accept(s.url!, in: w.bc)
        XCTAssertNoThrow(try ask(w.bc, s.url!).get())
        XCTAssertEqual(try share(w, s.recordID).requesters.count, 1, "only Dana asks")

        // A public share is joined by accepting it.
        let public_ = try share(w, s.recordID)
        public_.publicPermission = .readOnly
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [public_]).error)
        XCTAssertEqual(try share(w, s.recordID).requesters.count, 0, "making it public closed the request (R42)")
        if case .failure(let e) = try ask(dana, s.url!) { XCTAssertEqual(e.code, .invalidArguments) } else { XCTFail("public: no error") }
    }

    func testR40OnlyTheOwnerAndAdministratorsSeeRequesters() throws {
        let w = try World()
        let (s, dana) = try asking(w)
        let invited = try share(w, s.recordID)
        invited.addParticipant(try w.participant("bob@example.com"))
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [invited]).error)
        try w.accept(s.url!, in: w.bc)
        try ask(dana, s.url!).get()
        let requester = try XCTUnwrap(share(w, s.recordID).requesters.first)
        XCTAssertEqual(requester.userIdentity.nameComponents?.givenName, "Dana", "asking shows the name of an account that is not discoverable")
        XCTAssertEqual(try XCTUnwrap(w.bc.sharedCloudDatabase.fetchRecord(s.recordID) as? Share).requesters.count, 0)
        let promote = try share(w, s.recordID)
        promote.participants.first { $0.role == .privateUser }?.role = .administrator
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [promote]).error)
        XCTAssertEqual(try XCTUnwrap(w.bc.sharedCloudDatabase.fetchRecord(s.recordID) as? Share).requesters.count, 1)
    }

    func testR41ApproveDenyBlockUnblock() throws {
        let w = try World()
        let (s, dana) = try asking(w)
        try ask(dana, s.url!).get()
        var added: [Bool?] = []
        w.engine.events.observe(.participantAdded) { added.append($0.approvedRequester) }

        // Denied, she may ask again.
        let deny = try share(w, s.recordID)
        deny.denyRequesters(deny.requesters)
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [deny]).error)
        XCTAssertEqual(try share(w, s.recordID).requesters.count, 0)
        try ask(dana, s.url!).get()

        // Approved: pending, an approved requester, the request closed.
        let approve = try share(w, s.recordID)
        approve.approveRequesters(approve.requesters, permission: .readWrite)
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [approve]).error)
        let after = try share(w, s.recordID)
        XCTAssertEqual(after.requesters.count, 0)
        let p = try XCTUnwrap(after.participants.first { $0.userIdentity.lookupInfo == .emailAddress("dana@example.com") })
        XCTAssertEqual(p.acceptanceStatus, .pending)
        XCTAssertEqual(p.permission, .readWrite)
        XCTAssertTrue(p.isApprovedRequester)
        XCTAssertEqual(added, [true])
        try w.accept(s.url!, in: dana)

        // Blocked (as a participant, ShareFlow's choice): off the share, listed, cannot ask.
        let block = try share(w, s.recordID)
        block.blockParticipants(block.participants.filter { $0.role != .owner })
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [block]).error)
        let blocked = try share(w, s.recordID)
        XCTAssertEqual(blocked.blockedIdentities.map(\.lookupInfo), [.emailAddress("dana@example.com")])
        XCTAssertEqual(blocked.participants.filter { $0.acceptanceStatus != .removed }.count, 1)
        try ask(dana, s.url!).get()
        XCTAssertEqual(try share(w, s.recordID).requesters.count, 0, "a blocked caller's request is not recorded")

        // Adding her back fails until she is unblocked (R42).
        let readd = try share(w, s.recordID)
        readd.addParticipant(try w.participant("dana@example.com"))
        XCTAssertEqual(try w.c.privateCloudDatabase.modifyRecords(saving: [readd]).firstError?.code, .invalidArguments)
        let unblock = try share(w, s.recordID)
        unblock.unblockIdentities(unblock.blockedIdentities)
        unblock.addParticipant(try w.participant("dana@example.com"))
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [unblock]).error, "unblocked and added in one save")
    }

    func testR41AStaleCopyDeniesNothing() throws {
        let w = try World()
        let (s, dana) = try asking(w)
        try ask(dana, s.url!).get()
        let stale = try share(w, s.recordID)
        let other = try share(w, s.recordID)
        other.title = "moved on"
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [other]).error)
        stale.denyRequesters(stale.requesters)
        XCTAssertEqual(try w.c.privateCloudDatabase.modifyRecords(saving: [stale], savePolicy: .changedKeys).firstError?.code, .serverRecordChanged)
        XCTAssertEqual(try share(w, s.recordID).requesters.count, 1, "R35: from the server's copy only")
    }

    func testR42RequestsPastTheCapAreDroppedWithTheSameAnswer() throws {
        let w = try World()
        w.engine.options.maxRequesters = 1
        let (s, dana) = try asking(w)
        var dropped: [String?] = []
        w.engine.events.observe(.shareAccessRequestDropped) { dropped.append($0.reason) }
        try ask(dana, s.url!).get()
        try ask(w.cc, s.url!).get()
        XCTAssertEqual(try share(w, s.recordID).requesters.map(\.participantLookupInfo), [.emailAddress("dana@example.com")])
        XCTAssertEqual(dropped, ["tooManyRequests"])
        try ask(dana, s.url!).get()
        XCTAssertEqual(dropped.count, 1, "asking again is no new request")
    }

    /// `store compact`'s half (R42): requests older than the TTL close, newer ones stay, the
    /// share's tag moves; `sf.admin.accessRequests`' (engine.accessRequests) lists what is open.
    func testR42OldRequestsCloseAndTheAdministratorListsTheOpenOnes() throws {
        let w = try World()
        let (s, dana) = try asking(w)
        try ask(dana, s.url!).get()
        try ask(w.cc, s.url!).get()
        let open = try w.engine.accessRequests(olderThan: 0)
        XCTAssertEqual(open.map(\.requester.participantLookupInfo), [.emailAddress("dana@example.com"), .emailAddress("carol@example.com")])
        XCTAssertEqual(open.first?.shareURL, s.url)
        XCTAssertEqual(open.first?.shareTitle, "Lisbon trip")
        XCTAssertEqual(try w.engine.accessRequests(olderThan: 0, limit: 1).count, 1)
        XCTAssertEqual(try w.engine.accessRequests(olderThan: 3600).count, 0, "none is an hour old")
        let tag = try share(w, s.recordID).recordChangeTag
        XCTAssertEqual(try w.engine.store.closeAccessRequests(olderThan: 3600), 0)
        XCTAssertEqual(try share(w, s.recordID).recordChangeTag, tag)
        XCTAssertEqual(try w.engine.store.closeAccessRequests(olderThan: 0), 2)
        XCTAssertEqual(try share(w, s.recordID).requesters.count, 0)
        XCTAssertNotEqual(try share(w, s.recordID).recordChangeTag, tag, "R43")
    }

    /// `store check`'s invariants (SPEC §17): a request of someone on the share, a blocked
    /// identity on it and a share past the cap are problems; a healthy store has none.
    func testStoreCheckFindsBrokenAccessInvariants() throws {
        let w = try World()
        let (s, dana) = try asking(w)
        try ask(dana, s.url!).get()
        XCTAssertEqual(try w.engine.store.check().problems, [])
        XCTAssertTrue(try w.engine.store.check(maxRequesters: 0).problems.contains { $0.contains("past the cap of 0") })
        let invited = try share(w, s.recordID)
        invited.addParticipant(try w.participant("bob@example.com"))
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [invited]).error)
        // Rows no engine path writes: a request by Bob, who is invited, and a block of him.
        let bob = try XCTUnwrap(w.engine.accounts.find("bob@example.com"))
        try w.engine.store.write { tx in
            let row = try XCTUnwrap(tx.share(token: XCTUnwrap(Engine.shareToken(url: s.url!))))
            try tx.recordAccessRequest(share: row.id, account: bob.id, lookup: .emailAddress("bob@example.com"), at: 0)
            try tx.block(share: row.id, account: bob.id, lookup: .emailAddress("bob@example.com"), at: 0)
        }
        let problems = try w.engine.store.check().problems
        XCTAssertTrue(problems.contains { $0.contains("is open for someone pending on the share (R39)") }, "\(problems)")
        XCTAssertTrue(problems.contains { $0.contains("is on the share though blocked") }, "\(problems)")
    }

    /// R43, R40: a request moves the share in its owner's and administrators' feeds, never in a
    /// plain participant's (who would count the requests) nor the requester's.
    func testR43OnlyTheOwnerAndAdministratorsFeedsShowARequest() throws {
        let w = try World()
        let (s, dana) = try asking(w)
        let invite = try share(w, s.recordID)
        invite.addParticipant(try w.participant("bob@example.com"))
        invite.addParticipant(try w.participant("carol@example.com"))
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [invite]).error)
        try w.accept(s.url!, in: w.bc)
        try w.accept(s.url!, in: w.cc)
        let promote = try share(w, s.recordID)
        promote.participants.first { $0.userIdentity.lookupInfo == .emailAddress("carol@example.com") }?.role = .administrator
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [promote]).error)
        let zone = w.zone.zoneID
        let feeds = [w.c.privateCloudDatabase, w.bc.sharedCloudDatabase, w.cc.sharedCloudDatabase]
        let tokens = try feeds.map { try $0.currentChangeToken(zone) }
        let danas = try dana.sharedCloudDatabase.currentDatabaseChangeToken()
        try ask(dana, s.url!).get()
        let changed = try zip(feeds, tokens).map { try $0.recordZoneChanges(zone, since: $1).modifications.map(\.recordID.recordName) }
        XCTAssertEqual(changed, [[s.recordID.recordName], [], [s.recordID.recordName]], "owner, plain participant, administrator")
        XCTAssertEqual(try dana.sharedCloudDatabase.databaseChanges(since: danas).changedZoneIDs.count, 0, "the requester's feed never shows it")
    }

    /// Asking again soon changes nothing (ShareFlow's choice: one account asking in a loop
    /// would renew the share's tag faster than its owner saves it); past the interval it
    /// refreshes the entry and the tag (R39, R43).
    func testAskingAgainSoonChangesNothing() throws {
        let w = try World()
        let (s, dana) = try asking(w)
        try ask(dana, s.url!).get()
        let first = try share(w, s.recordID)
        try ask(dana, s.url!).get()
        let again = try share(w, s.recordID)
        XCTAssertEqual(again.recordChangeTag, first.recordChangeTag)
        XCTAssertEqual(again.requesters.first?.requestedAt, first.requesters.first?.requestedAt)
        w.engine.options.requestRefreshSeconds = 0
        try ask(dana, s.url!).get()
        let refreshed = try share(w, s.recordID)
        XCTAssertNotEqual(refreshed.recordChangeTag, first.recordChangeTag)
        XCTAssertEqual(refreshed.requesters.map(\.requestID), first.requesters.map(\.requestID), "one entry, refreshed")
    }

    /// A share is asked for through its own container: another container (or environment)
    /// cannot find it (R16, R32), so asking there is the silent success.
    func testAskingThroughAnotherContainerRecordsNothing() throws {
        let w = try World()
        let (s, _) = try asking(w)
        let dana = try XCTUnwrap(w.engine.accounts.find("dana@example.com"))
        let elsewhere = try w.engine.session(for: dana).container("iCloud.other")
        XCTAssertEqual(try w.engine.requestShareAccess(url: s.url!, caller: dana, container: elsewhere.containerID), .silent)
        XCTAssertEqual(try share(w, s.recordID).requesters.count, 0)
    }

    /// R44: a one-time link's participant is claimed by the first accept alone, in one
    /// transaction; the second account meets a stranger's answer; the link's token is its own
    /// (not the share's) and the owner's copy is the only one that gives it.
    func testR44TheFirstAcceptClaimsAOneTimeLink() throws {
        let w = try World()
        let s = try w.share()
        let owned = try share(w, s.recordID)
        let guest = Participant.oneTimeURLParticipant(permission: .readWrite)
        owned.addParticipant(guest)
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [owned]).error)
        let link = try XCTUnwrap(share(w, s.recordID).oneTimeURL(for: guest.participantID))
        XCTAssertNotEqual(Engine.shareToken(url: link), Engine.shareToken(url: s.url!))
        XCTAssertGreaterThanOrEqual(Engine.shareToken(url: link)?.count ?? 0, 22, "at least 128 random bits")
        let bobsMeta = try w.bc.fetchShareMetadataResults([link]).0[0].1.get()
        let carolsMeta = try w.cc.fetchShareMetadataResults([link]).0[0].1.get()
        XCTAssertEqual(bobsMeta.participantStatus, .pending)
        XCTAssertEqual(bobsMeta.participantPermission, .readWrite)
        let (bobs, _) = w.bc.acceptShareResults([bobsMeta])
        XCTAssertEqual(try bobs[0].1.get().currentUserParticipant?.acceptanceStatus, .accepted)
        let (carols, _) = w.cc.acceptShareResults([carolsMeta])
        guard case .failure(let e) = carols[0].1 else { return XCTFail("Carol accepted a link Bob claimed") }
        XCTAssertEqual(e.code, .unknownItem, "claimed: Carol is a stranger to the link")
        let after = try share(w, s.recordID)
        XCTAssertEqual(
            after.participants.filter { $0.participantID == guest.participantID }.map(\.userIdentity.lookupInfo),
            [.emailAddress("bob@example.com")]
        )
        XCTAssertEqual(after.participants.count, 2)
    }

    func testR42ABlockedIdentityJoinsNoPublicShare() throws {
        let w = try World()
        let s = try w.share(["carol@example.com"])
        let block = try share(w, s.recordID)
        block.blockParticipants(block.participants.filter { $0.role != .owner })
        block.publicPermission = .readOnly
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [block]).error)
        XCTAssertThrowsError(try w.accept(s.url!, in: w.cc)) { XCTAssertEqual(($0 as? ShareFlowError)?.code, .permissionFailure) }
        XCTAssertNoThrow(try w.accept(s.url!, in: w.bc))
    }
}

extension AccessRequestTests: RecordRuleSupport {}
