import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// R28: objects show the store as it is: an account read after a change has it. A finding of
/// issue 13.
class FreshObjectTests: XCTestCase {
    func testR28AccountAndRecordObjectsReflectTheStore() throws {
        let w = try World()
        let alice = try XCTUnwrap(try w.engine.accounts.find("alice@example.com"))
        let renamed = try w.engine.accounts.setName(NameComponents(givenName: "Ally"), of: alice)
        XCTAssertEqual(renamed.name.givenName, "Ally")
        XCTAssertEqual(try w.engine.accounts.find("alice@example.com")?.name.givenName, "Ally")
        XCTAssertEqual(try w.engine.accounts.setDiscoverability(.denied, of: alice).discoverability, .denied)
        XCTAssertEqual(try w.c.session.account.discoverability, .denied)
    }
}
