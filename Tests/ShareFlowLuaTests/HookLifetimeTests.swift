import Foundation
import ShareFlow
import XCTest

@testable import ShareFlowLua

/// A script host's observers and policies go with it: the engine never calls into a host that
/// is gone (the hook closures hold it unretained, for speed).
final class HookLifetimeTests: XCTestCase {
    func testObserversAndPoliciesLeaveWithTheirHost() throws {
        let engine = Engine(store: try Store(path: ":memory:"))
        engine.logger.logLevel = .critical
        let alice = try engine.accounts.create(emails: ["alice@example.com"])
        let zone = RecordZoneID(zoneName: "Z", ownerName: alice.userRecordID)
        let share = Share(rootRecord: Record(recordType: "T", recordID: RecordID(recordName: "r", zoneID: zone)))
        let request = PolicyRequest(point: .shareAccept, caller: alice, container: "iCloud.example", share: share)
        var event = Event(.participantFetched, caller: alice, container: "iCloud.example")
        event.lookupInfo = .emailAddress("bob@example.com")

        var host: ScriptHost? = try ScriptHost(engine: engine)
        try host!.run(
            """
            seen = 0
            shareflow.on("participant.fetched", function(ev) seen = seen + 1 end)
            shareflow.policy("share.accept", function() return false, "closed" end)
            """
        )
        engine.publish(event)
        XCTAssertEqual(try host!.lua.run("return seen"), [.integer(1)])
        XCTAssertThrowsError(try engine.decide(request, item: "share"))

        host = nil
        XCTAssertFalse(engine.events.hasObservers(.participantFetched))
        XCTAssertFalse(engine.policies.hasPolicies(.shareAccept))
        engine.publish(event)  // nobody left to call: no crash
        XCTAssertNoThrow(try engine.decide(request, item: "share"))
    }
}
