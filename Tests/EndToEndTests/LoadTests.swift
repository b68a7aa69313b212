import Foundation
import ShareFlowTestKit
import XCTest

/// The server under many clients (Tests/load/sharing_load.py, in .build/pyenv): 64 concurrent
/// clients edit overlapping shared records for a bounded time. No 5xx; every edit the server
/// acknowledged is in the store afterwards (stale ones are CONFLICT); the store passes its
/// checks. Then the same with the server killed (SIGKILL) in the middle and restarted.
final class LoadTests: ServerTestCase {
    private var state: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        state = dir.appendingPathComponent("load")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        try script(
            """
            local sf = require("shareflow")
            for i = 1, 15 do sf.accounts.create{ email = "user" .. i .. "@example.com" } end
            """
        )
        var users: [[String: String]] = [["email": "alice@example.com", "token": web]]
        for i in 1...15 { users.append(["email": "user\(i)@example.com", "token": try token("user\(i)@example.com")]) }
        let data = try JSONSerialization.data(withJSONObject: ["api": api, "users": users] as [String: Any])
        try data.write(to: state.appendingPathComponent("users.json"))
    }

    private var driver: String { CLI.root.appendingPathComponent("Tests/load/sharing_load.py").path }

    private func python() throws -> String {
        let python = PyiCloudTests.python
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw NSError(domain: "LoadTests", code: 1, userInfo: [NSLocalizedDescriptionKey: "no Python environment at \(python): run `make pyenv`"])
        }
        return python
    }

    private func phase(_ arguments: [String], timeout: TimeInterval = 180) throws -> (Int32, String) {
        try runTool(try python(), [driver] + arguments, timeout: timeout)
    }

    private func start(_ arguments: [String]) throws -> (Process, URL) {
        try startTool(try python(), [driver] + arguments)
    }

    private func storeIsWhole(file: StaticString = #filePath, line: UInt = #line) throws {
        let check = try CLI.run(["store", "check", "--store", store])
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr, file: file, line: line)
        let log = try String(contentsOf: serverLog, encoding: .utf8)
        XCTAssertFalse(log.range(of: #" 5\d\d [0-9.]+ ms"#, options: .regularExpression) != nil, "a 5xx in the access log", file: file, line: line)
    }

    func testSixtyFourClientsOnOverlappingSharesLoseNoAcknowledgedEdit() throws {
        var r = try phase(["setup", base, state.path])
        XCTAssertEqual(r.0, 0, r.1)
        r = try phase(["load", base, state.path, "15", "64"])
        XCTAssertEqual(r.0, 0, r.1)
        print(r.1, terminator: "")
        let counts = try XCTUnwrap(r.1.split(separator: "\n").first { $0.hasPrefix("load: ") }.map { $0.dropFirst(6) }, r.1)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(counts.utf8)) as? [String: Int])
        XCTAssertGreaterThan(object["acknowledged"] ?? 0, 20, r.1)
        XCTAssertGreaterThan(object["conflict"] ?? 0, 0, "overlapping edits: some are stale, and refused: \(r.1)")
        XCTAssertEqual(object["lost_connection"], 0, r.1)
        r = try phase(["verify", base, state.path])
        XCTAssertEqual(r.0, 0, r.1)
        print(r.1, terminator: "")
        stopServer()
        XCTAssertEqual(server.terminationStatus, 0)
        try storeIsWhole()
    }

    func testKillNineUnderLoadThenRestartLosesNothingAcknowledged() throws {
        var r = try phase(["setup", base, state.path])
        XCTAssertEqual(r.0, 0, r.1)
        let port = Int(base.split(separator: ":").last ?? "0") ?? 0
        let load = try start(["load", base, state.path, "10", "64"])
        sleep(4)
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()
        XCTAssertEqual(server.terminationReason, .uncaughtSignal)
        // Back on the same port while the clients keep at it.
        try startServer(port: port)
        while load.0.isRunning { usleep(100_000) }
        let text = try String(contentsOf: load.1, encoding: .utf8)
        XCTAssertEqual(load.0.terminationStatus, 0, text)
        print(text, terminator: "")
        let counts = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("load: ") }, text)
        XCTAssertTrue(counts.contains("\"acknowledged\""), text)
        r = try phase(["verify", base, state.path])
        XCTAssertEqual(r.0, 0, r.1)
        print(r.1, terminator: "")
        stopServer()
        try storeIsWhole()
    }
}
