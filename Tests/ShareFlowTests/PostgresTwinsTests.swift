import Foundation
import XCTest

/// Every store test case has its PostgreSQL twin (`OnPostgreSQL.swift`, written by
/// `Tests/postgres/twins.py`): a test added without `make twins` would run on SQLite alone.
final class PostgresTwinsTests: XCTestCase {
    func testEveryStoreTestCaseHasItsPostgreSQLTwin() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", root.appendingPathComponent("Tests/postgres/twins.py").path, "--check"]
        let output = Pipe()
        python.standardOutput = output
        python.standardError = output
        try python.run()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        python.waitUntilExit()
        XCTAssertEqual(python.terminationStatus, 0, said)
    }
}
