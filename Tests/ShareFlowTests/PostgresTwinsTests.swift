import Foundation
import ShareFlowTestKit
import XCTest

/// Every store test case has its PostgreSQL twin (`OnPostgreSQL.swift`, written by
/// `Tests/postgres/twins.py`): a test added without `make twins` would run on SQLite alone.
final class PostgresTwinsTests: XCTestCase {
    func testEveryStoreTestCaseHasItsPostgreSQLTwin() throws {
        let (status, said) = try Tools.output(
            of: "/usr/bin/env",
            ["python3", packageRoot.appendingPathComponent("Tests/postgres/twins.py").path, "--check"]
        )
        XCTAssertEqual(status, 0, said)
    }
}
