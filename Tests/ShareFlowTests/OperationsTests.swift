import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

class OperationsTests: XCTestCase {
    func testPerItemOrderThenCompletionOnceInSwift() throws {
        let w = try World()
        let op = FetchShareParticipantsOperation(userIdentityLookupInfos: [
            LookupRequest(emailAddress: "bob@example.com"), LookupRequest(emailAddress: "bad"),
            LookupRequest(phoneNumber: "+1 415 555 0101"), LookupRequest(userRecordID: "_missing"),
        ])
        var log: [String] = []
        op.perShareParticipantResultBlock = { request, result in
            switch result {
            case .success(let p): log.append("\(request.given):\(p.userIdentity.userRecordID == w.bob.userRecordID)")
            case .failure(let e): log.append("\(request.given):\(e.code)")
            }
        }
        op.shareParticipantFetchedBlock = { _ in log.append("fetched") }
        op.fetchShareParticipantsResultBlock = { result in
            if case .failure(let e) = result { log.append("result:\(e.code):\(e.partialErrors.map(\.item))") }
        }
        op.fetchShareParticipantsCompletionBlock = { e in log.append("completion:\(e!.code)") }
        w.c.add(op)
        XCTAssertFalse(op.isFinished, "added operations wait for the queue to run")
        op.waitUntilFinished()
        XCTAssertEqual(
            log,
            [
                "bob@example.com:true", "fetched", "bad:invalidArguments", "+1 415 555 0101:true", "fetched",
                "_missing:unknownItem", "result:partialFailure:[\"bad\", \"_missing\"]", "completion:partialFailure",
            ]
        )
    }

    /// An operation added to a database and never waited for keeps nothing alive: the container
    /// keeps its queue and the queue its operations, and a database keeps its container, so a
    /// queued operation holding its database whole was a cycle that kept the container, its
    /// session and the engine for good (found by LeakSanitizer under the fuzzer).
    func testAnOperationLeftWaitingKeepsNoContainerAlive() throws {
        let w = try World()
        weak var container: Container?
        weak var operation: CloudOperation?
        try {
            let c = try w.engine.session(for: w.alice).container(World.containerID)
            container = c
            let op = ModifyRecordZonesOperation(recordZoneIDsToDelete: [w.zone.zoneID])
            operation = op
            try c.sharedCloudDatabase.add(op)
            XCTAssertEqual(op.database?.databaseScope, .shared, "a queued operation still names its database")
            XCTAssertTrue(op.database?.container === c)
        }()
        XCTAssertNil(container, "the container outlived every reference to it")
        XCTAssertNil(operation)
        // One waited for runs against the database it was added to.
        let op = ModifyRecordZonesOperation(recordZonesToSave: ["Later"])
        try w.c.privateCloudDatabase.add(op)
        op.waitUntilFinished()
        XCTAssertNil(op.error)
        XCTAssertEqual(try w.c.privateCloudDatabase.fetchAllRecordZones().map(\.zoneID.zoneName).sorted(), ["Later", "Trips", "_defaultZone"])
    }

    func testQualityOfServiceOrdersTheQueue() throws {
        let w = try World()
        var order: [String] = []
        for (name, qos) in [("bg", QualityOfService.background), ("ui", .userInteractive), ("def", .default), ("init", .userInitiated)] {
            let op = DiscoverAllUserIdentitiesOperation()
            op.qualityOfService = qos
            op.discoverAllUserIdentitiesResultBlock = { _ in order.append(name) }
            w.c.add(op)
        }
        XCTAssertEqual(w.c.queue.operationCount, 4)
        w.c.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(order, ["ui", "init", "def", "bg"])
    }

    func testCancelBeforeRunCompletesEveryItemAsCancelled() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"])
        let op = FetchShareMetadataOperation(shareURLs: [share.url!, share.url!])
        var perItem: [ShareFlowError.Code] = []
        op.perShareMetadataResultBlock = { _, r in if case .failure(let e) = r { perItem.append(e.code) } }
        w.bc.add(op)
        op.cancel()
        op.waitUntilFinished()
        XCTAssertEqual(perItem, [.operationCancelled, .operationCancelled])
        XCTAssertEqual(op.error?.code, .operationCancelled)
    }

    func testAsyncForms() async throws {
        let w = try World()
        let share = try w.share(["bob@example.com"])
        let participants = try await w.c.fetchShareParticipants([try LookupInfo(emailAddress: "carol@example.com")])
        XCTAssertEqual(try participants[0].1.get().userIdentity.userRecordID, w.carol.userRecordID)
        let metas = try await w.bc.fetchShareMetadata([share.url!], shouldFetchRootRecord: true, rootRecordDesiredKeys: ["title"])
        let metadata = try metas[0].1.get()
        XCTAssertEqual(metadata.rootRecord?.fields.keys.sorted(), ["title"])
        let accepted = try await w.bc.accept([metadata])
        XCTAssertEqual(try accepted[0].1.get().currentUserParticipant?.acceptanceStatus, .accepted)
        try w.engine.accounts.addContacts([("bob@example.com", "c1")], to: w.alice)
        let found = try await w.c.discoverAllUserIdentities()
        XCTAssertEqual(found.map(\.contactIdentifiers), [["c1"]])
        let direct = try await w.c.discoverUserIdentities([try LookupInfo(emailAddress: "bob@example.com")])
        XCTAssertEqual(direct.count, 1)
    }

    func testOperationFinishedEvent() throws {
        let w = try World()
        var seen: [(String, Int, Int)] = []
        w.engine.events.observe(.operationFinished) { seen.append(($0.operation!, $0.items!, $0.failed!)) }
        _ = w.c.fetchShareParticipantResults([LookupRequest(emailAddress: "bob@example.com"), LookupRequest(emailAddress: "x")])
        XCTAssertEqual(seen.count, 1)
        XCTAssertEqual(seen[0].0, "FetchShareParticipantsOperation")
        XCTAssertEqual(seen[0].1, 2)
        XCTAssertEqual(seen[0].2, 1)
    }

    func testAcceptOfAnotherContainerFailsPerItem() throws {
        let w = try World()
        let share = try w.share(["bob@example.com"])
        let metadata = try w.bc.fetchShareMetadataResults([share.url!]).0[0].1.get()
        let other = try w.engine.session(for: w.bob).container("iCloud.other")
        let (results, error) = other.acceptShareResults([metadata])
        XCTAssertEqual(error?.code, .partialFailure)
        guard case .failure(let e) = results[0].1 else { return XCTFail("accepted in the wrong container") }
        XCTAssertEqual(e.code, .invalidArguments)
        XCTAssertTrue(e.message.contains("iCloud.other") && e.message.contains(World.containerID), e.message)
    }
}
