import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// SPEC §17 R42 with several nodes (M2): requests made at once through two nodes of one
/// PostgreSQL store keep one entry per account and the share's cap.
final class AccessRequestNodesTests: XCTestCase {
    func testConcurrentRequestsOnTwoNodesKeepOneEntryPerAccountAndTheCap() throws {
        guard let template = EachDriver.postgresTemplate else { throw XCTSkip("PostgreSQL only: two nodes share a PostgreSQL store") }
        let nodes = try TwoNodes(template: template)
        defer { nodes.close() }
        nodes.a.options.maxRequesters = 5
        nodes.b.options.maxRequesters = 5
        let (onA, _) = try nodes.alice()
        let zone = try onA.saveZone("Asks").zoneID
        let root = Record(recordType: "Doc", recordID: RecordID(recordName: "doc", zoneID: zone))
        let share = Share(rootRecord: root)
        share.allowsAccessRequests = true
        XCTAssertNil(try onA.modifyRecords(saving: [root, share]).error)
        let url = try XCTUnwrap(share.url)
        let askers = try (0..<8).map { try nodes.a.accounts.create(emails: ["asker\($0)@example.com"]) }
        let container = ContainerID("iCloud.t")
        let outcomes = LockedBox<[Engine.AccessRequestOutcome]>([])
        let failures = LockedBox<[String]>([])
        // Each account asks twice, once through each node, all at once.
        DispatchQueue.concurrentPerform(iterations: askers.count * 2) { i in
            let node = i % 2 == 0 ? nodes.a : nodes.b
            do {
                let outcome = try node.requestShareAccess(url: url, caller: askers[i / 2], container: container)
                outcomes.update { $0.append(outcome) }
            } catch {
                failures.update { $0.append("\(error)") }
            }
        }
        XCTAssertEqual(failures.value, [])
        let requesters = try XCTUnwrap(onA.fetchRecord(share.recordID) as? Share).requesters
        XCTAssertEqual(requesters.count, 5, "the cap holds across nodes")
        XCTAssertEqual(Set(requesters.compactMap(\.userIdentity.userRecordID)).count, requesters.count, "one entry per account")
        XCTAssertEqual(outcomes.value.filter { $0 == .recorded }.count, 5, "\(outcomes.value)")
        XCTAssertEqual(try nodes.a.store.check(maxRequesters: 5).problems, [])
    }
}
