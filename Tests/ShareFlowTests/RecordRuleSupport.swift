import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// What the record rules' test cases share (ChangeTagTests, AdministratorTests).
protocol RecordRuleSupport {}

extension RecordRuleSupport {
    /// The share `id` as its owner reads it from the store now.
    func share(_ w: World, _ id: RecordID) throws -> Share {
        try XCTUnwrap(w.c.privateCloudDatabase.fetchRecord(id) as? Share)
    }
}
