import Foundation
import ShareFlowTestKit
import XCTest

/// docs/openapi.yaml held against a real `shareflow serve`: the routes both ways
/// (Tests/openapi/check_routes.py), then schemathesis (pinned, in .build/pyenv) generating
/// requests from the document — examples, coverage and fuzzing, a bounded number per operation —
/// with no 5xx allowed, only documented statuses and content types, and every response body
/// valid against its schema.
final class OpenAPITests: ServerTestCase {
    func testTheDocumentAndTheServerAgreeAndFuzzingFindsNo5xx() throws {
        let bin = URL(fileURLWithPath: PyiCloudTests.python).deletingLastPathComponent()
        let py = bin.appendingPathComponent("python").path
        let schemathesis = bin.appendingPathComponent("schemathesis").path
        guard FileManager.default.isExecutableFile(atPath: schemathesis) else {
            return XCTFail("no schemathesis at \(schemathesis): run `make pyenv` (make test does)")
        }
        let spec = CLI.root.appendingPathComponent("docs/openapi.yaml").path
        let routes = try CLI.run(["serve", "--routes"])
        XCTAssertEqual(routes.status, 0, routes.stderr)
        let routesFile = dir.appendingPathComponent("routes.txt")
        try CLI.write(routes.stdout, to: routesFile)
        let admin = try CLI.run(["tokens", "admin", "--store", store]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let environment = ["SF_API": api, "SF_WEB": web, "SF_BASE": base, "SF_ADMIN": admin]
        let check = try runTool(
            py,
            [CLI.root.appendingPathComponent("Tests/openapi/check_routes.py").path, spec, routesFile.path, base],
            environment: environment,
            timeout: 120
        )
        XCTAssertEqual(check.0, 0, check.1)
        XCTAssertTrue(check.1.contains("47 routes served, 47 documented, 0 problems"), check.1)

        // Something to find: a zone, a record and a share for the generated requests to meet.
        _ = try call("POST", db + "/private/zones/modify", body: #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Z"}}}]}"#)
        _ = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {"zoneID":{"zoneName":"Z"},"operations":[{"operationType":"create","record":{"recordName":"doc","recordType":"Doc","fields":{"n":{"value":1}}}},
                 {"operationType":"create","record":{"recordName":"s","recordType":"cloudkit.share","forRecord":{"recordName":"doc"},
                  "participants":[{"userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}]}
                """
        )
        let fuzz = try runTool(
            schemathesis,
            [
                "--no-color", "--config-file", CLI.root.appendingPathComponent("Tests/openapi/schemathesis.toml").path,
                "run", spec, "--phases", "examples,coverage,fuzzing", "--seed", "20261123",
                // A stream is long-lived: ChangeStreamTests covers it.
                "--exclude-operation-id", "changeStream", "--exclude-operation-id", "pollNotifications", "--exclude-tag", "faults",
            ],
            environment: environment,
            timeout: 600
        )
        XCTAssertEqual(fuzz.0, 0, String(fuzz.1.suffix(6000)))
        XCTAssertTrue(fuzz.1.contains("Tested: 40"), String(fuzz.1.suffix(3000)))
        XCTAssertFalse(fuzz.1.contains("failed"), String(fuzz.1.suffix(3000)))
        // The admin routes last, with the admin token: what they arm cannot fail the others.
        let adminFuzz = try runTool(
            schemathesis,
            [
                "--no-color", "--config-file", CLI.root.appendingPathComponent("Tests/openapi/schemathesis.toml").path,
                "run", spec, "--phases", "examples,coverage,fuzzing", "--seed", "20261125", "--include-tag", "faults",
            ],
            environment: environment,
            timeout: 300
        )
        XCTAssertEqual(adminFuzz.0, 0, String(adminFuzz.1.suffix(6000)))
        XCTAssertTrue(adminFuzz.1.contains("Tested: 5"), String(adminFuzz.1.suffix(3000)))
        XCTAssertFalse(adminFuzz.1.contains("failed"), String(adminFuzz.1.suffix(3000)))
        XCTAssertTrue(server.isRunning, "the server survived")
        let log = try String(contentsOf: serverLog, encoding: .utf8)
        XCTAssertFalse(log.contains(" 500 "), "no INTERNAL_ERROR in the access log")
    }
}
