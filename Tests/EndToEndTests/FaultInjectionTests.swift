import Foundation
import ShareFlowTestKit
import XCTest

/// SPEC §15 as an operator and a tester meet it: rules from the config file for every command
/// (a bad one, or more than can be armed, is one line naming it), the admin route and its token
/// (a config file's rule is not removed through it), the statuses and headers a client reads, a
/// delay that holds only its own connection, a connection dropped on every endpoint that leaves
/// the server answering, and the access log's `fault=`.
final class FaultInjectionTests: ServerTestCase {
    private var admin = ""

    private func adminCall(_ method: String, _ path: String = "", body: String? = nil, token: String? = nil) throws -> (Int, [String: Any]) {
        try Tools.curl(method, base + "/admin/1/faults" + path, body: body, headers: ["Authorization: Bearer \(token ?? admin)"], in: dir)
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        admin = try CLI.run(["tokens", "admin", "--store", store]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testTheConfigFilesRulesApplyToEveryCommandAndOutliveClear() throws {
        let config = dir.appendingPathComponent("faults.config.lua")
        try CLI.write(
            """
            return { faults = {
              { caller = "bob@example.com", operation = "modifyRecordZones", fault = "quotaExceeded" },
            } }
            """,
            to: config
        )
        // `run`: armed before the script, kept by clear().
        let script = dir.appendingPathComponent("config-faults.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            local listed = sf.faults.list()
            print(#listed, listed[1].owner, listed[1].fault, listed[1].caller)
            print(sf.faults.clear(), #sf.faults.list())
            local _, err = sf.as("bob@example.com"):container("iCloud.test").privateCloudDatabase:saveZone("B")
            print(err and err.code, err and err.codeNumber)
            print(select(2, sf.as("alice@example.com"):container("iCloud.test").privateCloudDatabase:saveZone("A")))
            """,
            to: script
        )
        let r = try CLI.run(["run", "--store", store, "--config", config.path, script.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, "1\tconfig\tquotaExceeded\tbob@example.com\n0\t1\nquotaExceeded\t25\nnil\n")

        // `test`: in every test's engine.
        let testFile = dir.appendingPathComponent("config_faults_test.lua")
        try CLI.write(
            """
            local sf = require("shareflow")
            test("the config's rule is armed", function()
              sf.accounts.create{ email = "bob@example.com" }
              local _, err = sf.as("bob@example.com"):container("iCloud.test").privateCloudDatabase:saveZone("B")
              expect.eq(err.code, "quotaExceeded")
              expect.eq(sf.faults.list()[1].owner, "config")
            end)
            """,
            to: testFile
        )
        let tested = try CLI.run(["test", "--config", config.path, testFile.path])
        XCTAssertEqual(tested.status, 0, tested.stdout + tested.stderr)
        XCTAssertTrue(tested.stdout.hasSuffix("1 passed, 0 failed\n"), tested.stdout)

        // `serve`: Bob's zone request is a 413; the admin route lists the rule and cannot clear it.
        stopServer()
        try startServer(["--config", config.path])
        let bob = try token("bob@example.com")
        var (status, body) = try call(
            "POST",
            db + "/private/zones/modify",
            query: "ckAPIToken=\(api)&ckWebAuthToken=\(bob)",
            body: #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"B"}}}]}"#
        )
        XCTAssertEqual(status, 413, "\(body)")
        XCTAssertEqual(body["serverErrorCode"] as? String, "QUOTA_EXCEEDED")
        (status, body) = try call(
            "POST",
            db + "/private/zones/modify",
            body: #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"A"}}}]}"#
        )
        XCTAssertEqual(status, 200, "Alice is untouched: \(body)")
        (status, body) = try adminCall("DELETE")
        XCTAssertEqual(body["removed"] as? Int, 0)
        (status, body) = try adminCall("GET")
        let rules = try XCTUnwrap(body["rules"] as? [[String: Any]])
        XCTAssertEqual(rules.count, 1)
        XCTAssertEqual(rules.first?["owner"] as? String, "config")
        let log = try String(contentsOf: serverLog, encoding: .utf8)
        XCTAssertTrue(log.contains("zones/modify 413 ") && log.contains("bob@example.com fault=quotaExceeded"), log)
    }

    /// `shareflow run` of a one-line script (returned) under `config` fails, with one line
    /// saying `words`.
    @discardableResult
    private func assertOneLineRefusal(_ config: URL, _ words: String, file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        let script = dir.appendingPathComponent("one.lua")
        try CLI.write("print(1)", to: script)
        let r = try CLI.run(["run", "--store", ":memory:", "--config", config.path, script.path])
        XCTAssertNotEqual(r.status, 0, file: file, line: line)
        XCTAssertTrue(r.stderr.contains(words), r.stderr, file: file, line: line)
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr, file: file, line: line)
        return script
    }

    func testABadRuleInTheConfigIsOneLineNamingIt() throws {
        let config = dir.appendingPathComponent("bad.config.lua")
        try CLI.write(#"return { faults = { { fault = "zoneBusy" }, { fault = "requestRateLimited", probability = 2 } } }"#, to: config)
        let script = try assertOneLineRefusal(config, "faults[2].probability must be a number from 0 to 1, got 2")
        try CLI.write(#"return { faults = { { fault = "zoneBusy", colour = "red" } } }"#, to: config)
        let unknown = try CLI.run(["run", "--store", ":memory:", "--config", config.path, script.path])
        XCTAssertTrue(unknown.stderr.contains("faults[1]: unknown key 'colour'"), unknown.stderr)
    }

    func testAConfigWithMoreRulesThanCanBeArmedIsOneLineNamingTheFile() throws {
        let config = dir.appendingPathComponent("many.config.lua")
        try CLI.write(
            "return { faults = {" + (0...1_000).map { #"{ fault = "zoneBusy", zone = "z\#($0)" }"# }.joined(separator: ",") + "} }",
            to: config
        )
        try assertOneLineRefusal(config, "config file \(config.path): 'faults' has 1001 rules; at most 1000 are armed at once")
    }

    func testOnlyAnAdminTokenOpensTheAdminRoute() throws {
        for token in [api, web, String(repeating: "0", count: 64), "", "x y"] {
            let (status, body) = try adminCall("GET", token: token)
            XCTAssertEqual(status, 401, "\(token.prefix(10)): \(body)")
            XCTAssertEqual(body["serverErrorCode"] as? String, "AUTHENTICATION_FAILED")
        }
        var (status, _) = try Tools.curl("GET", base + "/admin/1/faults", in: dir)
        XCTAssertEqual(status, 401, "no token")
        // The admin token opens no database.
        (status, _) = try call("GET", db + "/public/users/caller", query: "ckAPIToken=\(admin)")
        XCTAssertEqual(status, 401, "an admin token is no API token")
        // A bad batch arms nothing; an unknown id is 404.
        var body: [String: Any]
        (status, body) = try adminCall("POST", body: #"{"rules":[{"fault":"zoneBusy"},{"fault":"zoneBusy","when":"afterCommit"}]}"#)
        XCTAssertEqual(status, 400)
        XCTAssertTrue((body["reason"] as? String ?? "").contains("rules[1].when applies to fault networkFailure only"), "\(body)")
        (status, body) = try adminCall("POST", body: #"{"rules":{"fault":"zoneBusy"}}"#)
        XCTAssertEqual(status, 400, "\(body)")
        (status, body) = try adminCall("GET")
        XCTAssertEqual((body["rules"] as? [Any])?.count, 0)
        (status, _) = try adminCall("DELETE", "/12345")
        XCTAssertEqual(status, 404)
        (status, body) = try adminCall("POST", body: #"{"rules":[{"operation":"users/caller","fault":"serviceUnavailable","retryAfter":2.5}]}"#)
        XCTAssertEqual(status, 200, "\(body)")
        let id = try XCTUnwrap((body["ids"] as? [Int])?.first)

        // 503 with retryAfter in the body and Retry-After (rounded up) in the header.
        let (unavailable, answer) = try call("GET", db + "/public/users/caller")
        XCTAssertEqual(unavailable, 503)
        XCTAssertEqual(answer["serverErrorCode"] as? String, "TRY_AGAIN_LATER")
        XCTAssertEqual(answer["retryAfter"] as? Double, 2.5)
        XCTAssertTrue((answer["_headers"] as? String ?? "").contains("retry-after: 3"), "\(answer)")
        (status, _) = try adminCall("DELETE", "/\(id)")
        XCTAssertEqual(status, 200)
        XCTAssertEqual(try call("GET", db + "/public/users/caller").0, 200)

        // A change stream's request meets the rules too.
        (status, body) = try adminCall("POST", body: #"{"rules":[{"operation":"changes/stream","fault":"requestRateLimited","count":1}]}"#)
        XCTAssertEqual(status, 200, "\(body)")
        (status, body) = try call("GET", db + "/private/changes/stream")
        XCTAssertEqual(status, 429, "\(body)")

        // changeTokenExpired strikes a feed's request that sends a token: the older
        // zones/changes sends it as metaSyncToken.
        (status, body) = try call("POST", db + "/private/zones/changes", body: "{}")
        let token = try XCTUnwrap(body["metaSyncToken"] as? String, "\(body)")
        (status, body) = try adminCall("POST", body: #"{"rules":[{"operation":"zones/changes","fault":"changeTokenExpired"}]}"#)
        XCTAssertEqual(status, 200, "\(body)")
        (status, body) = try call("POST", db + "/private/zones/changes", body: "{}")
        XCTAssertEqual(status, 200, "no token: not struck \(body)")
        (status, body) = try call("POST", db + "/private/zones/changes", body: #"{"metaSyncToken":"\#(token)"}"#)
        XCTAssertEqual(status, 400, "\(body)")
        XCTAssertTrue((body["reason"] as? String ?? "").contains("changeTokenExpired"), "\(body)")
    }

    func testTheAdminRouteCannotRemoveAConfigRuleByItsId() throws {
        let config = dir.appendingPathComponent("faults.config.lua")
        try CLI.write(#"return { faults = { { operation = "zones/list", fault = "serviceUnavailable" } } }"#, to: config)
        stopServer()
        try startServer(["--config", config.path])
        var (status, body) = try adminCall("GET")
        let id = try XCTUnwrap((body["rules"] as? [[String: Any]])?.first?["id"] as? Int, "\(body)")
        (status, body) = try adminCall("DELETE", "/\(id)")
        XCTAssertEqual(status, 400, "\(body)")
        XCTAssertTrue((body["reason"] as? String ?? "").contains("the config file's"), "\(body)")
        (status, body) = try adminCall("GET")
        XCTAssertEqual((body["rules"] as? [Any])?.count, 1, "the config's rule stays: \(body)")
        XCTAssertEqual(try call("POST", db + "/private/zones/list", body: "{}").0, 503)
        // A run-time rule still goes by its id.
        (status, body) = try adminCall("POST", body: #"{"rules":[{"operation":"zones/lookup","fault":"zoneBusy"}]}"#)
        let added = try XCTUnwrap((body["ids"] as? [Int])?.first, "\(body)")
        XCTAssertEqual(try adminCall("DELETE", "/\(added)").0, 200)
    }

    func testADelayHoldsOnlyItsOwnConnection() throws {
        // A request's delay, and an item's (slept by the server once the engine is done).
        var (status, body) = try adminCall(
            "POST",
            body: """
                {"rules":[{"operation":"records/query","caller":"alice@example.com","latencyMs":1500},
                          {"operation":"records/modify","caller":"alice@example.com","fault":"zoneBusy","latencyMs":1500}]}
                """
        )
        XCTAssertEqual(status, 200, "\(body)")
        func slow(_ subpath: String, _ body: String) throws -> (Process, Pipe) {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = [
                "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "--data", body,
                base + db + "/private/\(subpath)?ckAPIToken=\(api)&ckWebAuthToken=\(web)",
            ]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            return (p, out)
        }
        let started = Date()
        let query = try slow("records/query", #"{"query":{"recordType":"Note"}}"#)
        let modify = try slow(
            "records/modify",
            #"{"operations":[{"operationType":"create","record":{"recordType":"Note","recordName":"z1","fields":{}}}]}"#
        )
        usleep(300_000)
        // Meanwhile the engine answers others at once: the delays sleep on the connections.
        let bob = try token("bob@example.com")
        let other = Date()
        (status, body) = try call(
            "POST",
            db + "/private/records/query",
            query: "ckAPIToken=\(api)&ckWebAuthToken=\(bob)",
            body: #"{"query":{"recordType":"Note"}}"#
        )
        XCTAssertEqual(status, 200, "\(body)")
        XCTAssertLessThan(Date().timeIntervalSince(other), 1.0, "Bob's request did not wait for Alice's delays")
        for (process, out) in [query, modify] {
            process.waitUntilExit()
            XCTAssertEqual(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self), "200")
        }
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 1.4, "Alice's requests were delayed")
        let log = try String(contentsOf: serverLog, encoding: .utf8)
        XCTAssertTrue(log.contains("alice@example.com fault=latency"), log)
        XCTAssertTrue(log.contains("records/modify 200 ") && log.contains("alice@example.com fault=zoneBusy"), log)
    }

    func testAConnectionDroppedOnEveryEndpointLeavesHealthzTheAdminRouteAndTheNextConnection() throws {
        var (status, body) = try adminCall("POST", body: #"{"rules":[{"operation":"*","fault":"networkFailure"}]}"#)
        XCTAssertEqual(status, 200, "\(body)")
        for _ in 0..<3 {
            XCTAssertEqual(try call("POST", db + "/private/zones/list", body: "{}").0, 0, "no answer: the connection was dropped")
        }
        XCTAssertEqual(try call("GET", "/healthz", query: "").0, 200)
        XCTAssertEqual(try adminCall("GET").0, 200)
        (status, body) = try adminCall("DELETE")
        XCTAssertEqual(body["removed"] as? Int, 1)
        XCTAssertEqual(try call("POST", db + "/private/zones/list", body: "{}").0, 200, "the server answers again")
        // The access log's line for a drop is a request line like the others: `dropped`, ms, fault=.
        let log = try String(contentsOf: serverLog, encoding: .utf8)
        let line = try XCTUnwrap(log.split(separator: "\n").first { $0.contains("/private/zones/list") && $0.contains("dropped") }, log)
        XCTAssertNotNil(
            line.range(
                of:
                    #"POST /database/1/iCloud\.test/development/private/zones/list dropped [0-9]+\.[0-9] ms alice@example\.com fault=networkFailure \(beforeCommit\)$"#,
                options: .regularExpression
            ),
            String(line)
        )
    }

    /// The README's curl and pyicloud examples for app testers run as written.
    func testTheReadmesCurlAndPyiCloudExamplesRun() throws {
        let readme = try String(contentsOf: CLI.root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try XCTUnwrap(readme.components(separatedBy: "### Fault injection for app testers").dropFirst().first)
        func block(_ language: String) throws -> String {
            let start = try XCTUnwrap(section.range(of: "```\(language)\n"), "the section shows \(language)")
            let end = try XCTUnwrap(section.range(of: "\n```", range: start.upperBound..<section.endIndex))
            return String(section[start.upperBound..<end.lowerBound])
        }
        let environment = ["BASE": base, "ADMIN": admin, "API": api, "WEB": web]
        let shell = dir.appendingPathComponent("faults.sh")
        try CLI.write("set -euo pipefail\n" + (try block("sh")) + "\n", to: shell)
        let (status, out) = try runTool("/bin/bash", [shell.path], environment: environment, timeout: 60)
        XCTAssertEqual(status, 0, out)
        XCTAssertTrue(out.contains("HTTP/1.1 429 Too Many Requests") && out.contains("Retry-After: 5"), out)
        XCTAssertTrue(out.hasSuffix("{\"removed\":1}"), out)

        guard hasPyiCloud() else { return }
        let python = dir.appendingPathComponent("faults.py")
        try CLI.write(try block("python"), to: python)
        let (pyStatus, pyOut) = try runTool(PyiCloudTests.python, [python.path], environment: environment, timeout: 60)
        XCTAssertEqual(pyStatus, 0, pyOut)
        XCTAssertEqual(pyOut, "throttled; retry after 5.0\n")
    }
}
