import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// SPEC §20 N1–N2: subscriptions saved, listed and deleted; who is told what (R12, R15, R37);
/// query subscriptions' reasons in order with their fields; bounded queues.
class SubscriptionTests: XCTestCase {
    /// A device token for `account`, and everything its polls hand out until none is due.
    private struct Device {
        let engine: Engine
        let secret: String

        init(_ engine: Engine, _ account: Account, clientID: String? = nil) throws {
            self.engine = engine
            secret = try engine.createDeviceToken(
                account: account.id,
                container: ContainerID(World.containerID),
                apnsEnvironment: "development",
                credentialHash: nil,
                clientID: clientID
            ).pollSecret
        }

        func drain() throws -> [SubscriptionNotification] {
            var out: [SubscriptionNotification] = []
            for _ in 0..<1000 {
                switch try engine.nextNotification(pollSecret: secret) {
                case .unknown: throw ShareFlowError(.unknownItem, "the token is gone")
                case .waiting: return out
                case let .due(token, from, to, dropped, n):
                    if try engine.moveDeliveredNotifications(token: token, from: from, to: to, dropped: dropped) { out.append(n) }
                case let .skipped(token, from, to, dropped):
                    _ = try engine.moveDeliveredNotifications(token: token, from: from, to: to, dropped: dropped)
                }
            }
            throw ShareFlowError(.limitExceeded, "a poll loop did not end")
        }
    }

    func testSubscriptionsAreSavedListedFetchedAndDeletedAndSavingAgainIsIdempotent() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let zone = try db.save(.zone(w.zone.zoneID, id: "trips", info: NotificationInfo(alertBody: "Trips changed")))
        XCTAssertEqual(zone.zoneID, w.zone.zoneID)
        let query = try db.save(
            .query(recordType: "Trip", predicate: try Predicate(format: "title == %@", arguments: [.string("Lisbon")]), in: w.zone.zoneID, id: "q")
        )
        try db.save(.database(id: "all"))
        try db.save(.zone(w.zone.zoneID, id: "trips", info: NotificationInfo(alertBody: "Trips changed")))
        XCTAssertEqual(try db.fetchAllSubscriptions().map(\.subscriptionID), ["trips", "q", "all"])
        XCTAssertEqual(try db.fetchSubscription(withID: "q"), query)
        XCTAssertEqual(try db.fetchSubscription(withID: "trips").notificationInfo.alertBody, "Trips changed")
        try db.deleteSubscription(withID: "q")
        XCTAssertThrowsError(try db.fetchSubscription(withID: "q")) { XCTAssertEqual(($0 as? ShareFlowError)?.code, .unknownItem) }
        XCTAssertThrowsError(try db.deleteSubscription(withID: "q")) { XCTAssertEqual(($0 as? ShareFlowError)?.code, .unknownItem) }
        // Others' subscriptions are not listed; the same ID is theirs to use.
        try w.bc.privateCloudDatabase.save(.database(id: "all"))
        XCTAssertEqual(try w.bc.privateCloudDatabase.fetchAllSubscriptions().count, 1)
        XCTAssertEqual(try db.fetchAllSubscriptions().count, 2)
    }

    func testWhatASubscriptionMayNameIsCheckedBeforeItIsSaved() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        func code(_ s: Subscription, in db: CloudDatabase) -> ShareFlowError.Code? {
            do {
                try db.save(s)
                return nil
            } catch { return (error as? ShareFlowError)?.code }
        }
        XCTAssertEqual(code(.zone(RecordZoneID.default, id: "d"), in: db), .invalidArguments)
        XCTAssertEqual(code(.zone(RecordZoneID(zoneName: "Nope", ownerName: RecordZoneID.currentUserName)), in: db), .zoneNotFound)
        XCTAssertEqual(code(.zone(w.zone.zoneID, id: ""), in: db), .invalidArguments)
        XCTAssertEqual(code(.database(), in: w.c.publicCloudDatabase), .invalidArguments)
        XCTAssertEqual(code(.query(recordType: "Trip", firesOn: [], id: "none"), in: db), .invalidArguments)
        // A pathological filter is refused, not evaluated for every change.
        let values = (0..<500).map { FieldValue.integer(Int64($0)) }
        XCTAssertEqual(code(.query(recordType: "Trip", predicate: .isIn(key: "n", values: values), id: "big"), in: db), .limitExceeded)
        // A stranger naming Alice's zone in their shared database finds no zone (R27, R37).
        XCTAssertEqual(code(.zone(w.zone.zoneID, id: "peek"), in: w.cc.sharedCloudDatabase), .zoneNotFound)
        XCTAssertEqual(code(.zone(w.zone.zoneID, id: "peek"), in: w.cc.privateCloudDatabase), .permissionFailure)
        // Bounds.
        w.engine.options.notifications.maxSubscriptionsPerUser = 2
        try db.save(.database(id: "one"))
        try db.save(.database(id: "two"))
        XCTAssertEqual(code(.database(id: "three"), in: db), .limitExceeded)
        try db.save(.database(id: "two"))  // replacing one is not another
    }

    func testTheOwnersZoneSubscriptionFiresOnAParticipantsWriteAndTheStrangersGetsNothing() throws {
        let w = try World()
        let share = try w.share(["bob@example.com", "carol@example.com"], permission: .readWrite)
        try w.accept(share.url!, in: w.bc)
        let owner = try Device(w.engine, w.alice)
        let bob = try Device(w.engine, w.bob)
        let carol = try Device(w.engine, w.carol)  // invited, never accepted
        try w.c.privateCloudDatabase.save(.zone(w.zone.zoneID, id: "trips", info: NotificationInfo(alertBody: "changed")))
        try w.bc.sharedCloudDatabase.save(.database(id: "shared"))
        try w.cc.sharedCloudDatabase.save(.database(id: "shared"))
        XCTAssertThrowsError(try w.cc.sharedCloudDatabase.save(.zone(w.zone.zoneID, id: "z"))) {
            XCTAssertEqual(($0 as? ShareFlowError)?.code, .zoneNotFound)
        }
        let trip = try w.bc.sharedCloudDatabase.fetchRecord(w.trip.recordID)
        trip["title"] = .string("Lisbon, by Bob")
        XCTAssertNil(try w.bc.sharedCloudDatabase.modifyRecords(saving: [trip]).firstError)
        let told = try owner.drain()
        XCTAssertEqual(told.map(\.subscriptionID), ["trips"])
        XCTAssertEqual(told.first?.zoneID, w.zone.zoneID)
        XCTAssertEqual(told.first?.database, "private")
        XCTAssertNil(told.first?.reason)
        XCTAssertEqual(try bob.drain().map(\.database), ["shared"])
        XCTAssertEqual(try carol.drain().count, 0)
    }

    func testAParticipantIsToldOfTheSharedHierarchyOnly() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"])
        try w.accept(share.url!, in: w.bc)
        let bob = try Device(w.engine, w.bob)
        try w.bc.sharedCloudDatabase.save(.zone(w.zone.zoneID, id: "trips"))
        try w.bc.sharedCloudDatabase.save(
            .query(recordType: "Note", in: w.zone.zoneID, id: "notes", info: NotificationInfo(additionalFields: ["text"]))
        )
        // A record outside the shared hierarchy: nothing (R12).
        let secret = Record(recordType: "Note", recordID: RecordID(recordName: "secret", zoneID: w.zone.zoneID), fields: ["text": .string("hidden")])
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [secret]).firstError)
        XCTAssertEqual(try bob.drain().count, 0)
        // One under the shared root: both fire, the query with its field.
        let note = Record(
            recordType: "Note",
            recordID: RecordID(recordName: "n1", zoneID: w.zone.zoneID),
            fields: ["text": .string("seen")],
            parent: w.trip.recordID
        )
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [note]).firstError)
        let told = try bob.drain()
        XCTAssertEqual(Set(told.map(\.subscriptionID)), ["trips", "notes"])
        let q = try XCTUnwrap(told.first { $0.subscriptionID == "notes" })
        XCTAssertEqual(q.recordName, "n1")
        XCTAssertEqual(q.reason, .created)
        XCTAssertEqual(q.additionalFields, ["text": .string("seen")])
        // Removed from the share: nothing more, and what was queued before is withheld.
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [note]).firstError)  // unchanged save: still an update
        let current = try w.c.privateCloudDatabase.fetchRecord(share.recordID) as! Share
        current.removeParticipant(current.participants.first { $0.userIdentity.lookupInfo?.emailAddress == "bob@example.com" }!)
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [current]).firstError)
        XCTAssertEqual(try bob.drain().count, 0)
    }

    func testAQuerySubscriptionGivesCreatedUpdatedDeletedInOrderWithItsFields() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let alice = try Device(w.engine, w.alice)
        var fired: [String] = []
        w.engine.events.observe(.subscriptionFired) { event in
            if let n = event.firing?.notification { fired.append("\(n.subscriptionID) \(n.reason?.name ?? "-") \(n.recordName ?? "-")") }
        }
        try db.save(
            .query(
                recordType: "Trip",
                predicate: try Predicate(format: "stops > 2"),
                in: w.zone.zoneID,
                id: "long",
                info: NotificationInfo(alertLocalizationKey: "LONG", alertLocalizationArgs: ["title"], additionalFields: ["title", "stops"])
            )
        )
        let trip = Record(
            recordType: "Trip",
            recordID: RecordID(recordName: "road", zoneID: w.zone.zoneID),
            fields: ["title": .string("Road"), "stops": .integer(5)]
        )
        XCTAssertNil(try db.modifyRecords(saving: [trip]).firstError)
        trip["stops"] = .integer(6)
        XCTAssertNil(try db.modifyRecords(saving: [trip]).firstError)
        // Not matching after the change: no notification (evaluated on the saved record).
        trip["stops"] = .integer(1)
        XCTAssertNil(try db.modifyRecords(saving: [trip]).firstError)
        trip["stops"] = .integer(3)
        XCTAssertNil(try db.modifyRecords(saving: [trip]).firstError)
        XCTAssertNil(try db.modifyRecords(deleting: [trip.recordID]).firstError)
        // Another type does not fire it.
        XCTAssertNil(try db.modifyRecords(saving: [Record(recordType: "Day", recordID: RecordID(recordName: "d", zoneID: w.zone.zoneID))]).firstError)
        let told = try alice.drain()
        XCTAssertEqual(told.map { $0.reason }, [.created, .updated, .updated, .deleted])
        XCTAssertEqual(told.map { $0.additionalFields?["stops"] }, [.integer(5), .integer(6), .integer(3), .integer(3)])
        XCTAssertEqual(told.first?.alertArguments, ["Road"])
        XCTAssertEqual(fired, ["long created road", "long updated road", "long updated road", "long deleted road"])
    }

    func testFiresOnAndFiresOnce() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let alice = try Device(w.engine, w.alice)
        try db.save(.query(recordType: "Trip", in: w.zone.zoneID, firesOn: [.delete], id: "deletes"))
        try db.save(.query(recordType: "Trip", in: nil, firesOn: [.create], firesOnce: true, id: "first"))
        let a = Record(recordType: "Trip", recordID: RecordID(recordName: "a", zoneID: w.zone.zoneID))
        let b = Record(recordType: "Trip", recordID: RecordID(recordName: "b", zoneID: w.zone.zoneID))
        XCTAssertNil(try db.modifyRecords(saving: [a]).firstError)
        XCTAssertNil(try db.modifyRecords(saving: [b]).firstError)
        XCTAssertNil(try db.modifyRecords(deleting: [a.recordID]).firstError)
        XCTAssertEqual(try alice.drain().map { "\($0.subscriptionID) \($0.recordName!)" }, ["first a", "deletes a"])
        XCTAssertEqual(try db.fetchAllSubscriptions().map(\.subscriptionID), ["deletes"])
    }

    func testAQueueKeepsTheNewestAndCountsWhatItDropped() throws {
        let w = try World()
        w.engine.options.notifications.queueMax = 3
        let db = w.c.privateCloudDatabase
        let alice = try Device(w.engine, w.alice)
        try db.save(.query(recordType: "Trip", in: w.zone.zoneID, id: "all"))
        for i in 0..<7 {
            XCTAssertNil(
                try db.modifyRecords(saving: [Record(recordType: "Trip", recordID: RecordID(recordName: "t\(i)", zoneID: w.zone.zoneID))]).firstError
            )
        }
        XCTAssertEqual(try alice.drain().map(\.recordName), ["t4", "t5", "t6"])
        let counts = try w.engine.store.read { try $0.notificationCounts() }
        XCTAssertEqual(counts.dropped, 4)
        XCTAssertEqual(counts.queued, 3)
        // A token made now starts at the end: no backlog.
        XCTAssertEqual(try Device(w.engine, w.alice).drain().count, 0)
    }

    func testTheWritersOwnClientIsNotToldWhenItAsks() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let mine = try Device(w.engine, w.alice, clientID: "tab-1")
        let other = try Device(w.engine, w.alice, clientID: "tab-2")
        try db.save(.zone(w.zone.zoneID, id: "z"))
        try WriteOrigin.$clientID.withValue("tab-1") {
            XCTAssertNil(try db.modifyRecords(saving: [w.trip]).firstError)
        }
        XCTAssertEqual(try mine.drain().count, 0)
        XCTAssertEqual(try other.drain().count, 1)
    }

    func testPublicQuerySubscriptionsHearEveryonesRecords() throws {
        let w = try World()
        let alice = try Device(w.engine, w.alice)
        try w.c.publicCloudDatabase.save(.query(recordType: "Post", id: "posts", info: NotificationInfo(additionalFields: ["body"])))
        let post = Record(recordType: "Post", recordID: RecordID(recordName: "p1", zoneID: RecordZoneID.default), fields: ["body": .string("hi")])
        XCTAssertNil(try w.bc.publicCloudDatabase.modifyRecords(saving: [post]).firstError)
        let told = try alice.drain()
        XCTAssertEqual(told.map(\.database), ["public"])
        XCTAssertEqual(told.first?.zoneOwnerName, "__defaultOwner__")
        XCTAssertEqual(told.first?.additionalFields, ["body": .string("hi")])
    }

    func testAThousandSubscriptionsOnAZoneDoNotCostTheWriteAndAreDispatchedInBoundedJobs() throws {
        let w = try World()
        w.engine.options.notifications.dispatch = .deferred
        w.engine.options.notifications.evaluationsPerJob = 500
        w.engine.options.notifications.queueMax = 1000
        let db = w.c.privateCloudDatabase
        for i in 0..<300 {
            try db.save(.query(recordType: "Trip", predicate: .isIn(key: "n", values: (0..<5).map { .integer($0) }), in: w.zone.zoneID, id: "q\(i)"))
        }
        let alice = try Device(w.engine, w.alice)
        let trip = Record(recordType: "Trip", recordID: RecordID(recordName: "t", zoneID: w.zone.zoneID), fields: ["n": .integer(3)])
        XCTAssertNil(try db.modifyRecords(saving: [trip]).firstError)
        XCTAssertEqual(try alice.drain().count, 0)  // deferred: not yet
        var jobs = 0
        var report = DispatchReport(more: true)
        while report.more || jobs == 0 {
            report = try w.engine.dispatchNotifications()
            jobs += 1
            if jobs > 100 { return XCTFail("the dispatch does not end") }
        }
        // 300 subscriptions of 7 units, a quarter of 500 a job for one zone: about 17 jobs.
        XCTAssertGreaterThan(jobs, 10, "each job bounded")
        XCTAssertEqual(try alice.drain().count, 300)
    }

    /// Who may be told is decided as the change was committed: a version of a record written
    /// outside a participant's view, then moved into it before the dispatch ran, is not theirs
    /// (its fields never were).
    func testAChangeMadeOutsideAParticipantsViewIsNotToldOnceTheRecordMovesIn() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"])
        try w.accept(share.url!, in: w.bc)
        let bob = try Device(w.engine, w.bob)
        try w.bc.sharedCloudDatabase.save(
            .query(recordType: "Note", in: w.zone.zoneID, id: "notes", info: NotificationInfo(additionalFields: ["text"]))
        )
        w.engine.options.notifications.dispatch = .deferred
        let note = Record(recordType: "Note", recordID: RecordID(recordName: "race", zoneID: w.zone.zoneID), fields: ["text": .string("LEAK-SECRET")])
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [note]).firstError)
        note["text"] = .string("clean")
        note.parent = w.trip.recordID
        XCTAssertNil(try w.c.privateCloudDatabase.modifyRecords(saving: [note]).firstError)
        try w.engine.dispatchNotifications()
        let told = try bob.drain()
        XCTAssertEqual(told.map { $0.additionalFields?["text"] }, [.string("clean")])
    }

    /// What the subscriptions of a zone cost each change there is bounded at save, counting the
    /// size of the values they compare, and a row keeps at most 64 KiB.
    func testSubscriptionsCostingTooMuchTogetherAreRefused() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        w.engine.options.notifications.maxCostPerZone = 800
        let big = FieldValue.list((0..<300).map { .integer(Int64($0)) })
        try db.save(.query(recordType: "Note", predicate: .compare(key: "x", op: .equal, value: big), in: w.zone.zoneID, id: "a"))
        try db.save(.query(recordType: "Note", predicate: .compare(key: "x", op: .equal, value: big), in: w.zone.zoneID, id: "b"))
        XCTAssertThrowsError(
            try db.save(.query(recordType: "Note", predicate: .compare(key: "x", op: .equal, value: big), in: w.zone.zoneID, id: "c"))
        ) {
            XCTAssertEqual(($0 as? ShareFlowError)?.code, .limitExceeded)
        }
        // Replacing one is not adding one.
        try db.save(.query(recordType: "Note", predicate: .compare(key: "x", op: .equal, value: big), in: w.zone.zoneID, id: "b"))
        // A part that reads a whole field of the record costs more than one that reads a value:
        // 199 token searches of one field (a 1 MB body read 199 times) are refused.
        let scans = Predicate.and((0..<199).map { _ in .tokens(key: "body", tokens: ["word"], all: true) })
        XCTAssertThrowsError(try w.c.publicCloudDatabase.save(.query(recordType: "Doc", predicate: scans, id: "scan"))) {
            XCTAssertEqual(($0 as? ShareFlowError)?.code, .limitExceeded)
        }
        let text = FieldValue.string(String(repeating: "A", count: 100_000))
        XCTAssertThrowsError(
            try db.save(.query(recordType: "Note", predicate: .compare(key: "x", op: .equal, value: text), in: w.zone.zoneID, id: "d"))
        ) {
            XCTAssertEqual(($0 as? ShareFlowError)?.code, .limitExceeded)
        }
    }

    /// A change whose subscriptions cost more than one job's budget is taken up where the last
    /// job stopped: every notification once, in order, each job bounded.
    func testAChangeCostingMoreThanAJobIsDispatchedAcrossJobsEachNotificationOnce() throws {
        let w = try World()
        w.engine.options.notifications.dispatch = .deferred
        w.engine.options.notifications.evaluationsPerJob = 100
        w.engine.options.notifications.queueMax = 10_000
        let db = w.c.privateCloudDatabase
        for i in 0..<60 {
            try db.save(.query(recordType: "Note", predicate: .isIn(key: "n", values: (0..<5).map { .integer($0) }), in: w.zone.zoneID, id: "q\(i)"))
        }
        let alice = try Device(w.engine, w.alice)
        for i in 0..<3 {
            XCTAssertNil(
                try db.modifyRecords(saving: [
                    Record(recordType: "Note", recordID: RecordID(recordName: "n\(i)", zoneID: w.zone.zoneID), fields: ["n": .integer(1)])
                ])
                .firstError
            )
        }
        var jobs = 0
        while try w.engine.dispatchNotifications().more {
            jobs += 1
            XCTAssertLessThan(jobs, 100)
        }
        XCTAssertGreaterThan(jobs, 3, "each change's 60 subscriptions (7 units each) span jobs of 100 units")
        let told = try alice.drain()
        XCTAssertEqual(told.count, 180)
        XCTAssertEqual(Set(told.map { "\($0.subscriptionID) \($0.recordName!)" }).count, 180, "each once")
        XCTAssertEqual(told.map(\.recordName!), told.map(\.recordName!).sorted(), "in the changes' order")
    }

    /// A `subscription.fired` observer that writes: its change is dispatched by the loop that
    /// runs it, not left in the outbox.
    func testAnObserversOwnWriteIsDispatchedToo() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        try db.save(.query(recordType: "Note", in: w.zone.zoneID, id: "notes"))
        try db.save(.query(recordType: "Echo", in: w.zone.zoneID, id: "echoes"))
        var echoes = 0
        // Weakly, and not `w`: the engine keeps its observers, and these keep the engine.
        let zone = w.zone.zoneID
        w.engine.events.observe(.subscriptionFired) { [weak db] event in
            guard event.firing?.subscription.subscriptionID == "notes" else {
                echoes += 1
                return
            }
            _ = try? db?.modifyRecords(saving: [Record(recordType: "Echo", recordID: RecordID(recordName: UUID().uuidString, zoneID: zone))])
        }
        XCTAssertNil(
            try db.modifyRecords(saving: [Record(recordType: "Note", recordID: RecordID(recordName: "n", zoneID: w.zone.zoneID))]).firstError
        )
        XCTAssertEqual(echoes, 1)
        XCTAssertTrue(try w.engine.store.read { try $0.outboxIsEmpty() })
    }

    /// Zones are dispatched in turn: one zone's backlog does not hold up another zone's changes.
    func testOneZonesBacklogDoesNotHoldUpAnothersNotifications() throws {
        let w = try World()
        w.engine.options.notifications.dispatch = .deferred
        w.engine.options.notifications.evaluationsPerJob = 200
        let db = w.c.privateCloudDatabase
        let busy = try db.saveZone("Busy").zoneID
        for i in 0..<20 {
            try db.save(.query(recordType: "Note", predicate: .isIn(key: "n", values: (0..<5).map { .integer($0) }), in: busy, id: "q\(i)"))
        }
        try db.save(.zone(w.zone.zoneID, id: "trips"))
        let alice = try Device(w.engine, w.alice)
        for i in 0..<30 {
            XCTAssertNil(try db.modifyRecords(saving: [Record(recordType: "Note", recordID: RecordID(recordName: "b\(i)", zoneID: busy))]).firstError)
        }
        XCTAssertNil(try db.modifyRecords(saving: [w.trip]).firstError)
        let report = try w.engine.dispatchNotifications()
        XCTAssertTrue(report.more, "the busy zone's backlog is not done in one job")
        XCTAssertTrue(try alice.drain().contains { $0.subscriptionID == "trips" }, "the other zone was dispatched in the first job")
    }

    /// A notification is kept as it is sent: at most 4 KiB (fields dropped from the end), never
    /// the record's whole fields.
    func testANotificationIsKeptWithinFourKilobytes() throws {
        let w = try World()
        let db = w.c.privateCloudDatabase
        let alice = try Device(w.engine, w.alice)
        try db.save(
            .query(
                recordType: "Doc",
                in: w.zone.zoneID,
                id: "docs",
                info: NotificationInfo(alertLocalizationArgs: ["body", "body"], additionalFields: ["title", "body"])
            )
        )
        let body = String(repeating: "word ", count: 180_000)
        let doc = Record(
            recordType: "Doc",
            recordID: RecordID(recordName: "d", zoneID: w.zone.zoneID),
            fields: ["title": .string("T"), "body": .string(body)]
        )
        XCTAssertNil(try db.modifyRecords(saving: [doc]).firstError)
        let told = try XCTUnwrap(try alice.drain().first)
        XCTAssertEqual(told.additionalFields, ["title": .string("T")])
        XCTAssertEqual(told.alertArguments?.map(\.utf8.count), [256, 256])
        let payloads = try w.engine.store.read { try $0.texts("SELECT payload FROM notification") }
        XCTAssertTrue(payloads.allSatisfy { $0.utf8.count <= 4096 }, "\(payloads.map(\.utf8.count))")
    }

    /// Another user's write naming a device's `clientId` does not silence that device: only
    /// the writer's own devices are spared their own change.
    func testAnotherUsersWriteWithMyClientIDStillReachesMe() throws {
        let w = try World()
        let mine = try Device(w.engine, w.alice, clientID: "tab-1")
        try w.c.publicCloudDatabase.save(.query(recordType: "Post", id: "posts"))
        try WriteOrigin.$clientID.withValue("tab-1") {
            let post = Record(recordType: "Post", recordID: RecordID(recordName: "p", zoneID: RecordZoneID.default))
            XCTAssertNil(try w.bc.publicCloudDatabase.modifyRecords(saving: [post]).firstError)
        }
        XCTAssertEqual(try mine.drain().count, 1)
    }
}
