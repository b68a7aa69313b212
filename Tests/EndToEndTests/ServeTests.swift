import Foundation
import ShareFlowTestKit
import XCTest

/// A real `shareflow serve` process on a free loopback port, over a store with Alice and Bob,
/// an API token and Alice's web auth token; requests made by curl.
class ServerTestCase: XCTestCase {
    var dir: URL!
    var store: String!
    var server: Process!
    var base = ""
    var api = "", web = ""
    var serverLog: URL!
    let db = "/database/1/iCloud.test/development"
    /// More of curl's options for every `call` (a TLS test's `--cacert`).
    var curlOptions: [String] = []

    /// The store the test serves: an SQLite file in the test's folder (a subclass may name
    /// another, such as a PostgreSQL database).
    func makeStore() throws -> String { dir.appendingPathComponent("store.sqlite").path }

    /// A new database on the throw-away cluster `make test` starts (Tests/postgres/with-cluster.sh),
    /// named `PREFIX_…`, or a skip without one (as under the sanitizers).
    func clusterDatabase(prefix: String) throws -> String {
        guard let cluster = ProcessInfo.processInfo.environment["SHAREFLOW_TEST_CLUSTER"], !cluster.isEmpty else {
            throw XCTSkip("no PostgreSQL cluster (SHAREFLOW_TEST_CLUSTER): run through `make test`")
        }
        let name = prefix + "_" + UUID().uuidString.prefix(8).lowercased()
        let admin = cluster.replacingOccurrences(of: #"/[^/]+$"#, with: "/postgres", options: .regularExpression)
        let made = try CLI.runTool("psql", [admin, "-qc", "CREATE DATABASE \(name)"])
        XCTAssertEqual(made.status, 0, made.stderr)
        return cluster.replacingOccurrences(of: #"/[^/]+$"#, with: "/\(name)", options: .regularExpression)
    }

    override func setUpWithError() throws {
        dir = try CLI.temporaryDirectory()
        store = try makeStore()
        try CLI.write(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "alice@example.com", name = { given = "Alice" } }
            sf.accounts.create{ email = "bob@example.com" }
            """,
            to: dir.appendingPathComponent("setup.lua")
        )
        XCTAssertEqual(try CLI.run(["run", "--store", store, dir.appendingPathComponent("setup.lua").path]).status, 0)
        api = try CLI.run(["tokens", "api", "--store", store, "--container", "iCloud.test"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        web = try token("alice@example.com")
        XCTAssertTrue(api.range(of: "^[0-9a-f]{64}$", options: .regularExpression) != nil, api)
        XCTAssertGreaterThanOrEqual(web.count, 100)
        try startServer()
    }

    override func tearDownWithError() throws {
        stopServer()
        // SHAREFLOW_KEEP_TEST_DIRS=1 keeps each test's folder (the servers' logs) to read after.
        if ProcessInfo.processInfo.environment["SHAREFLOW_KEEP_TEST_DIRS"] != "1" { try? FileManager.default.removeItem(at: dir) }
    }

    /// A web auth token for `who`.
    func token(_ who: String) throws -> String {
        try CLI.run(["tokens", "user", "--store", store, "--container", "iCloud.test", "--as", who]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs a Lua script on the store (the server may be running: the store is shared).
    @discardableResult
    func script(_ text: String) throws -> CLI.Result {
        let file = dir.appendingPathComponent("script-\(UUID().uuidString).lua")
        try CLI.write(text, to: file)
        let r = try CLI.run(["run", "--store", store, file.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        return r
    }

    func startServer(_ extra: [String] = [], port: Int = 0) throws {
        let started = try ServeProcess(store: store, in: dir, arguments: extra, port: port)
        server = started.process
        serverLog = started.log
        base = started.base
    }

    /// Runs a tool (a Python script, schemathesis) in the test's folder with `extra` in its
    /// environment; its status and everything it printed. Stopped after `timeout` seconds.
    func runTool(
        _ executable: String,
        _ arguments: [String],
        environment extra: [String: String] = [:],
        timeout: TimeInterval
    ) throws -> (Int32, String) {
        let (process, output) = try startTool(executable, arguments, environment: extra)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(100_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return (process.terminationStatus, try String(contentsOf: output, encoding: .utf8))
    }

    /// Starts a tool as `runTool` does, without waiting: the process and the file it prints to.
    func startTool(_ executable: String, _ arguments: [String], environment extra: [String: String] = [:]) throws -> (Process, URL) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = dir
        process.environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
        let output = dir.appendingPathComponent("tool-\(UUID().uuidString).out")
        XCTAssertTrue(FileManager.default.createFile(atPath: output.path, contents: nil))
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = process.standardOutput
        try process.run()
        return (process, output)
    }

    /// Restarts the server with one plugin, `name`, whose init.lua is `source`; `settings`
    /// (Lua table fields, such as `limits = …`) go in its config beside the plugin.
    func restartServer(withPlugin name: String, settings: String? = nil, _ source: String) throws {
        let plugins = dir.appendingPathComponent("plugins")
        try FileManager.default.createDirectory(at: plugins.appendingPathComponent(name), withIntermediateDirectories: true)
        try CLI.write(source, to: plugins.appendingPathComponent("\(name)/init.lua"))
        let config = dir.appendingPathComponent("\(name).config.lua")
        try CLI.write("return { plugins = { \(name) = true }" + (settings.map { ", " + $0 } ?? "") + " }", to: config)
        stopServer()
        try startServer(["--config", config.path, "--plugins", plugins.path])
    }

    /// Whether pyicloud's environment (.build/pyenv) is there; when not, a failure saying how
    /// to make it.
    func hasPyiCloud(file: StaticString = #filePath, line: UInt = #line) -> Bool {
        guard FileManager.default.isExecutableFile(atPath: PyiCloudTests.python) else {
            XCTFail("no pyicloud environment at \(PyiCloudTests.python): run `make pyenv` (make test does)", file: file, line: line)
            return false
        }
        return true
    }

    /// The environment of a script of Tests/pyicloud: pyicloud strict (no key it does not
    /// know), this server, the API token, Alice's and Bob's web auth tokens; then `extra`.
    func pyicloudEnvironment(_ extra: [String: String] = [:]) throws -> [String: String] {
        [
            "PYICLOUD_CK_EXTRA": "forbid", "SHAREFLOW_BASE": base, "SHAREFLOW_API": api, "SHAREFLOW_ALICE": web,
            "SHAREFLOW_BOB": try token("bob@example.com"),
        ].merging(extra) { _, new in new }
    }

    /// Runs Tests/pyicloud/`script` with `pyicloudEnvironment(extra)`: its exit status and
    /// all it printed.
    func runPyiCloud(_ script: String, _ extra: [String: String] = [:], timeout: TimeInterval) throws -> (Int32, String) {
        let path = CLI.root.appendingPathComponent("Tests/pyicloud/\(script)").path
        return try runTool(PyiCloudTests.python, [path], environment: try pyicloudEnvironment(extra), timeout: timeout)
    }

    /// Makes Alice's zone `name` over HTTP, as a test's first step; it must answer 200.
    func makeZone(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try call(
            "POST",
            db + "/private/zones/modify",
            body: #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"\#(name)"}}}]}"#
        )
        XCTAssertEqual(r.0, 200, "\(r.1)", file: file, line: line)
    }

    func stopServer() {
        if server?.isRunning == true {
            server.terminate()
            server.waitUntilExit()
        }
    }

    /// One HTTP request, made by curl (an independent client; Foundation's URLSession would
    /// keep libcurl state for the life of the test process); the status and the JSON body
    /// (with the response's header lines under "_headers").
    func call(
        _ method: String,
        _ path: String,
        query: String? = nil,
        body: String? = nil,
        bodyFile: URL? = nil,
        headers: [String] = []
    ) throws -> (Int, [String: Any]) {
        try Tools.curl(
            method,
            base + path + "?" + (query ?? "ckAPIToken=\(api)&ckWebAuthToken=\(web)"),
            body: body,
            bodyFile: bodyFile,
            headers: headers,
            options: curlOptions,
            in: dir
        )
    }
}

/// `shareflow serve` as a CloudKit Web Services client meets it (SPEC §13): auth, users, zones,
/// records, queries and the sharing flow over HTTP.
final class ServeTests: ServerTestCase {

    func testAuthUsersZonesAndRecordsOverHTTP() throws {
        // Health, and every auth failure.
        var r = try call("GET", "/healthz", query: "")
        XCTAssertEqual(r.0, 200)
        r = try call("GET", db + "/public/users/caller", query: "")
        XCTAssertEqual(r.0, 401)
        XCTAssertEqual(r.1["serverErrorCode"] as? String, "AUTHENTICATION_FAILED")
        r = try call("GET", db + "/public/users/caller", query: "ckAPIToken=\(String(repeating: "0", count: 64))")
        XCTAssertEqual(r.0, 401)
        r = try call("GET", db + "/public/users/caller", query: "ckAPIToken=\(api)")
        XCTAssertEqual(r.0, 421)
        XCTAssertEqual(r.1["serverErrorCode"] as? String, "AUTHENTICATION_REQUIRED")
        r = try call("GET", db + "/public/users/caller", query: "ckAPIToken=\(api)&ckWebAuthToken=\(String(repeating: "A", count: 120))")
        XCTAssertEqual(r.0, 401)
        r = try call("GET", "/database/1/iCloud.other/development/public/users/caller")
        XCTAssertEqual(r.0, 401, "an API token opens its own container only")

        r = try call("GET", db + "/public/users/caller")
        XCTAssertEqual(r.0, 200)
        let me = (r.1["users"] as? [[String: Any]])?.first
        XCTAssertEqual((me?["lookupInfo"] as? [String: String])?["emailAddress"], "alice@example.com")
        XCTAssertEqual((me?["nameComponents"] as? [String: String])?["givenName"], "Alice")

        // Zones.
        try makeZone("Trips")
        r = try call("POST", db + "/private/zones/list", body: "{}")  // pyicloud sends POST {}
        XCTAssertEqual((r.1["zones"] as? [[String: Any]])?.count, 2, "\(r.1)")
        r = try call("POST", db + "/private/zones/lookup", body: #"{"zones":[{"zoneName":"Trips"},{"zoneName":"Nope"}]}"#)
        let looked = r.1["zones"] as? [[String: Any]]
        XCTAssertNotNil(looked?[0]["zoneID"])
        XCTAssertEqual(looked?[1]["serverErrorCode"] as? String, "ZONE_NOT_FOUND")

        // Records: create, a stale update refused, the right one taken, create again EXISTS.
        let zone = #""zoneID":{"zoneName":"Trips"}"#
        r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {\(zone),"operations":[{"operationType":"create","record":{"recordName":"lisbon","recordType":"Trip",
                 "fields":{"title":{"value":"Lisbon"},"days":{"value":5,"type":"INT64"},"when":{"value":1790000000000,"type":"TIMESTAMP"}}}}]}
                """
        )
        let created = (r.1["records"] as? [[String: Any]])?.first
        let tag = try XCTUnwrap(created?["recordChangeTag"] as? String, "\(r.1)")
        /// An update of lisbon's days to 6 at `changeTag`.
        func updateDays(at changeTag: String) throws -> (Int, [String: Any]) {
            try call(
                "POST",
                db + "/private/records/modify",
                body: """
                    {\(zone),"operations":[{"operationType":"update","record":{"recordName":"lisbon","recordType":"Trip","recordChangeTag":"\(changeTag)",
                     "fields":{"days":{"value":6,"type":"INT64"}}}}]}
                    """
            )
        }
        r = try updateDays(at: "stale")
        XCTAssertEqual(r.0, 200, "per-item errors inside a 200")
        XCTAssertEqual((r.1["records"] as? [[String: Any]])?.first?["serverErrorCode"] as? String, "CONFLICT")
        r = try updateDays(at: tag)
        let updated = (r.1["records"] as? [[String: Any]])?.first
        XCTAssertNotEqual(updated?["recordChangeTag"] as? String, tag)
        XCTAssertEqual(((updated?["fields"] as? [String: Any])?["title"] as? [String: Any])?["value"] as? String, "Lisbon", "update merges")
        r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {\(zone),"operations":[{"operationType":"create","record":{"recordName":"lisbon","recordType":"Trip","fields":{}}}]}
                """
        )
        XCTAssertEqual((r.1["records"] as? [[String: Any]])?.first?["serverErrorCode"] as? String, "EXISTS")
        r = try call("POST", db + "/private/records/lookup", body: #"{\#(zone),"records":[{"recordName":"lisbon"},{"recordName":"nope"}]}"#)
        let found = r.1["records"] as? [[String: Any]]
        XCTAssertEqual(((found?[0]["fields"] as? [String: Any])?["days"] as? [String: Any])?["value"] as? Int, 6)
        XCTAssertEqual(found?[1]["serverErrorCode"] as? String, "NOT_FOUND")
        r = try call("POST", db + "/private/records/modify", body: "not json")
        XCTAssertEqual(r.0, 400)
        XCTAssertEqual(r.1["serverErrorCode"] as? String, "BAD_REQUEST")

        // SIGTERM: exits 0; what was written over HTTP is there for `shareflow run`.
        server.terminate()
        server.waitUntilExit()
        XCTAssertEqual(server.terminationStatus, 0)
        try CLI.write(
            """
            local sf = require("shareflow")
            local db = sf.as("alice@example.com"):container("iCloud.test").privateCloudDatabase
            local r = db:fetchRecord(sf.RecordID{ recordName = "lisbon", zoneID = db:saveZone("Trips").zoneID })
            print(r.fields.title, r.fields.days, r.fields.when.seconds)
            """,
            to: dir.appendingPathComponent("check.lua")
        )
        let check = try CLI.run(["run", "--store", store, dir.appendingPathComponent("check.lua").path])
        XCTAssertEqual(check.stdout, "Lisbon\t6\t1790000000.0\n", check.stderr)
        let log = try String(contentsOf: serverLog, encoding: .utf8)
        XCTAssertTrue(log.contains("POST /database/1/iCloud.test/development/private/records/modify 200"), log)
        XCTAssertTrue(log.contains("alice@example.com"), "the caller is logged")
        XCTAssertFalse(log.contains(api) || log.contains(web), "never a token")
    }

    func testQueryAndUserLookupOverHTTP() throws {
        try makeZone("Trips")
        let ops = (1...5).map {
            #"{"operationType":"create","record":{"recordName":"t\#($0)","recordType":"Trip","fields":{"days":{"value":\#($0),"type":"INT64"},"title":{"value":"\#($0 % 2 == 0 ? "Lisbon" : "Porto") \#($0)"}}}}"#
        }
        var r = try call(
            "POST",
            db + "/private/records/modify",
            body: #"{"zoneID":{"zoneName":"Trips"},"operations":[\#(ops.joined(separator: ","))]}"#
        )
        XCTAssertEqual((r.1["records"] as? [[String: Any]])?.count, 5, "\(r.1)")
        let query =
            #"{"zoneID":{"zoneName":"Trips"},"resultsLimit":1,"query":{"recordType":"Trip","filterBy":[{"comparator":"GREATER_THAN_OR_EQUALS","fieldName":"days","fieldValue":{"value":2,"type":"INT64"}},{"comparator":"BEGINS_WITH","fieldName":"title","fieldValue":{"value":"Lis","type":"STRING"}}],"sortBy":[{"fieldName":"days","ascending":false}]}}"#
        r = try call("POST", db + "/private/records/query", body: query)
        XCTAssertEqual((r.1["records"] as? [[String: Any]])?.map { $0["recordName"] as? String }, ["t4"], "\(r.1)")
        let marker = try XCTUnwrap(r.1["continuationMarker"] as? String)
        r = try call("POST", db + "/private/records/query", body: String(query.dropLast()) + #","continuationMarker":"\#(marker)"}"#)
        XCTAssertEqual((r.1["records"] as? [[String: Any]])?.map { $0["recordName"] as? String }, ["t2"], "\(r.1)")
        XCTAssertNil(r.1["continuationMarker"])
        r = try call(
            "POST",
            db + "/private/records/query",
            body: #"{"query":{"recordType":"Trip","filterBy":[{"comparator":"NEAR","fieldName":"x","fieldValue":{"value":1}}]}}"#
        )
        XCTAssertEqual(r.0, 400)
        XCTAssertTrue((r.1["reason"] as? String)?.contains("query.filterBy[0].fieldValue must be a location for NEAR") ?? false, "\(r.1)")
        r = try call(
            "POST",
            db + "/private/records/query",
            body: #"{"query":{"recordType":"Trip","filterBy":[{"comparator":"LIKE","fieldName":"x","fieldValue":{"value":1}}]}}"#
        )
        XCTAssertEqual(r.0, 400)
        XCTAssertTrue((r.1["reason"] as? String)?.contains("query.filterBy[0].comparator LIKE is not one of") ?? false, "\(r.1)")

        // users/lookup: only discoverable accounts answer (R20); Bob is not discoverable.
        r = try call(
            "POST",
            db + "/public/users/lookup/email",
            body: #"{"users":[{"emailAddress":"bob@example.com"},{"emailAddress":"nobody@example.com"}]}"#
        )
        XCTAssertEqual(r.0, 200)
        XCTAssertEqual((r.1["users"] as? [Any])?.count, 0, "\(r.1)")
    }

    /// The sharing flow on the wire, as Apple's: a root and a `cloudKit.share` with an invitee
    /// by lookupInfo; the invitee resolves, accepts and reads; a stale share update is refused;
    /// a stranger learns nothing.
    func testTheSharingFlowOverHTTP() throws {
        try CLI.write("require('shareflow').accounts.create{ email = 'carol@example.com' }", to: dir.appendingPathComponent("carol.lua"))
        XCTAssertEqual(try CLI.run(["run", "--store", store, dir.appendingPathComponent("carol.lua").path]).status, 0)
        let bob = "ckAPIToken=\(api)&ckWebAuthToken=\(try token("bob@example.com"))"
        let carol = "ckAPIToken=\(api)&ckWebAuthToken=\(try token("carol@example.com"))"
        try makeZone("Trips")
        var r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {"zoneID":{"zoneName":"Trips"},"operations":[
                 {"operationType":"create","record":{"recordName":"lisbon","recordType":"Trip","createShortGUID":true,"fields":{"title":{"value":"Lisbon"}}}},
                 {"operationType":"create","record":{"recordName":"share-1","recordType":"cloudKit.share","forRecord":{"recordName":"lisbon"},
                  "publicPermission":"NONE","participants":[{"type":"USER","permission":"READ_WRITE","acceptanceStatus":"INVITED",
                  "userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}]}
                """
        )
        let saved = try XCTUnwrap(r.1["records"] as? [[String: Any]], "\(r.1)")
        XCTAssertEqual(saved.count, 2, "\(r.1)")
        let share = saved[1]
        XCTAssertEqual(share["recordType"] as? String, "cloudkit.share", "lowercase returned")
        let guid = try XCTUnwrap(share["shortGUID"] as? String, "\(share)")
        XCTAssertGreaterThanOrEqual(guid.count, 22)
        XCTAssertEqual((share["participants"] as? [[String: Any]])?.count, 2)
        let shareTag = try XCTUnwrap(share["recordChangeTag"] as? String)

        // Bob resolves (with the root's desired keys), accepts, reads from his shared database.
        r = try call(
            "POST",
            db + "/public/records/resolve",
            query: bob,
            body: #"{"shortGUIDs":[{"value":"\#(guid)","shouldFetchRootRecord":true,"rootRecordDesiredKeys":["title"]}]}"#
        )
        var result = (r.1["results"] as? [[String: Any]])?.first
        XCTAssertEqual(result?["participantStatus"] as? String, "INVITED", "\(r.1)")
        XCTAssertEqual(result?["participantPermission"] as? String, "READ_WRITE")
        XCTAssertEqual(result?["rootRecordName"] as? String, "lisbon")
        XCTAssertNotNil(result?["rootRecord"])
        r = try call("POST", db + "/public/records/accept", query: bob, body: #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
        result = (r.1["results"] as? [[String: Any]])?.first
        XCTAssertEqual(result?["participantStatus"] as? String, "ACCEPTED", "\(r.1)")
        let zone = try XCTUnwrap(result?["zoneID"] as? [String: Any])
        let zoneJSON = String(decoding: try JSONSerialization.data(withJSONObject: zone), as: UTF8.self)
        r = try call("POST", db + "/shared/records/lookup", query: bob, body: #"{"zoneID":\#(zoneJSON),"records":[{"recordName":"lisbon"}]}"#)
        XCTAssertEqual(
            (((r.1["records"] as? [[String: Any]])?.first?["fields"] as? [String: Any])?["title"] as? [String: Any])?["value"] as? String,
            "Lisbon",
            "\(r.1)"
        )

        // Bob's acceptance changed the share: Alice's copy at the old tag is stale (R21).
        r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {"zoneID":{"zoneName":"Trips"},"operations":[{"operationType":"update","record":{"recordName":"share-1",
                 "recordType":"cloudkit.share","recordChangeTag":"\(shareTag)","publicPermission":"READ_ONLY"}}]}
                """
        )
        XCTAssertEqual((r.1["records"] as? [[String: Any]])?.first?["serverErrorCode"] as? String, "CONFLICT", "\(r.1)")
        // R35: a forced save whose participant list was built before Bob accepted (it lists
        // Carol only) would take Bob off: without the current tag it is CONFLICT, and Bob stays.
        let carolOnly =
            #"[{"type":"USER","permission":"READ_ONLY","acceptanceStatus":"INVITED","userIdentity":{"lookupInfo":{"emailAddress":"carol@example.com"}}}]"#
        for type in ["forceUpdate", "forceReplace"] {
            r = try call(
                "POST",
                db + "/private/records/modify",
                body: """
                    {"zoneID":{"zoneName":"Trips"},"operations":[{"operationType":"\(type)","record":{"recordName":"share-1",
                     "recordType":"cloudkit.share","participants":\(carolOnly)}}]}
                    """
            )
            let item = (r.1["records"] as? [[String: Any]])?.first
            XCTAssertEqual(item?["serverErrorCode"] as? String, "CONFLICT", "\(type): \(r.1)")
            XCTAssertTrue((item?["reason"] as? String)?.contains("R35") == true, "\(r.1)")
        }
        r = try call("POST", db + "/public/records/resolve", query: bob, body: #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
        XCTAssertEqual((r.1["results"] as? [[String: Any]])?.first?["participantStatus"] as? String, "ACCEPTED", "Bob stays: \(r.1)")

        // Carol, a stranger: NOT_FOUND from resolve, ZONE_NOT_FOUND from her shared database (R16, R27).
        r = try call("POST", db + "/public/records/resolve", query: carol, body: #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
        XCTAssertEqual((r.1["results"] as? [[String: Any]])?.first?["serverErrorCode"] as? String, "NOT_FOUND", "\(r.1)")
        r = try call("POST", db + "/shared/zones/lookup", query: carol, body: #"{"zones":[\#(zoneJSON)]}"#)
        XCTAssertEqual((r.1["zones"] as? [[String: Any]])?.first?["serverErrorCode"] as? String, "ZONE_NOT_FOUND", "\(r.1)")
        r = try call("POST", db + "/shared/records/lookup", query: carol, body: #"{"zoneID":\#(zoneJSON),"records":[{"recordName":"lisbon"}]}"#)
        XCTAssertEqual((r.1["records"] as? [[String: Any]])?.first?["serverErrorCode"] as? String, "ZONE_NOT_FOUND", "\(r.1)")
    }

    /// Apple's documented sequence: the root saved alone with createShortGUID, then its share in
    /// a second request naming it by forRecord and the root's change tag. The share takes the
    /// root's short GUID; share URLs are made from --public-url.
    func testTwoRequestSharingKeepsTheShortGUIDAndUsesThePublicURL() throws {
        stopServer()
        try startServer(["--public-url", "https://share.example.test/"])
        let bob = "ckAPIToken=\(api)&ckWebAuthToken=\(try token("bob@example.com"))"
        try makeZone("Trips")
        var r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {"zoneID":{"zoneName":"Trips"},"operations":[{"operationType":"create","record":{"recordName":"porto","recordType":"Trip",
                 "createShortGUID":true,"fields":{"title":{"value":"Porto"}}}}]}
                """
        )
        let root = try XCTUnwrap((r.1["records"] as? [[String: Any]])?.first, "\(r.1)")
        let guid = try XCTUnwrap(root["shortGUID"] as? String, "createShortGUID gives the root its short GUID: \(root)")
        XCTAssertNotNil(guid.range(of: "^[A-Za-z0-9_-]{22,}$", options: .regularExpression), guid)
        let tag = try XCTUnwrap(root["recordChangeTag"] as? String)
        func share(rootTag: String) throws -> [String: Any] {
            let r = try call(
                "POST",
                db + "/private/records/modify",
                body: """
                    {"zoneID":{"zoneName":"Trips"},"atomic":true,"operations":[{"operationType":"create","record":{"recordName":"share-porto",
                     "recordType":"cloudkit.share","fields":{"cloudkit.title":{"value":"Porto","type":"STRING"}},
                     "forRecord":{"recordName":"porto","recordChangeTag":"\(rootTag)"},"publicPermission":"NONE",
                     "participants":[{"type":"USER","permission":"READ_ONLY","acceptanceStatus":"INVITED",
                     "userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}]}
                    """
            )
            XCTAssertEqual(r.0, 200, "\(r.1)")
            let records = try XCTUnwrap(r.1["records"] as? [[String: Any]], "\(r.1)")
            XCTAssertEqual(records.count, 1, "only the share is answered: \(records)")
            return records[0]
        }
        XCTAssertEqual(try share(rootTag: "stale")["serverErrorCode"] as? String, "CONFLICT", "a stale root is refused")
        let made = try share(rootTag: tag)
        XCTAssertEqual(made["shortGUID"] as? String, guid, "the share carries its root's short GUID: \(made)")
        XCTAssertEqual(made["recordType"] as? String, "cloudkit.share")
        r = try call("POST", db + "/private/records/lookup", body: #"{"zoneID":{"zoneName":"Trips"},"records":[{"recordName":"porto"}]}"#)
        let shared = (r.1["records"] as? [[String: Any]])?.first
        XCTAssertEqual((shared?["share"] as? [String: Any])?["recordName"] as? String, "share-porto", "\(r.1)")
        XCTAssertEqual(shared?["shortGUID"] as? String, guid)

        r = try call("POST", db + "/public/records/resolve", query: bob, body: #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
        let result = (r.1["results"] as? [[String: Any]])?.first
        XCTAssertEqual(result?["webpageURL"] as? String, "https://share.example.test/share/" + guid, "\(r.1)")
        XCTAssertEqual(result?["participantStatus"] as? String, "INVITED")
        // Links from iOS carry the title as a fragment; the token alone names the share.
        let page = try script(
            """
            local sf = require("shareflow")
            local c = sf.as("bob@example.com"):container("iCloud.test")
            local m = c:fetchShareMetadata{ "https://share.example.test/share/\(guid)#Porto" }
            local _, meta = next(m)
            print(meta.share.title, meta.share.url)
            """
        )
        XCTAssertEqual(page.stdout, "Porto\thttps://shareflow.invalid/share/\(guid)\n", page.stderr)
    }

    /// R36: forceUpdate and forceReplace of a missing record create it; update and replace stay
    /// NOT_FOUND. R29: an update writes the keys it gives and keeps the others. R31: created
    /// and modified name their users and keep the creation time.
    func testForceSavesCreateAndUpdatesKeepTheOtherKeys() throws {
        let zone = #""zoneID":{"zoneName":"Trips"}"#
        try makeZone("Trips")
        for type in ["update", "replace"] {
            let r = try call(
                "POST",
                db + "/private/records/modify",
                body: """
                    {\(zone),"operations":[{"operationType":"\(type)","record":{"recordName":"missing-\(type)","recordType":"Note","recordChangeTag":"x",
                     "fields":{"a":{"value":"1"}}}}]}
                    """
            )
            XCTAssertEqual((r.1["records"] as? [[String: Any]])?.first?["serverErrorCode"] as? String, "NOT_FOUND", "\(type): \(r.1)")
        }
        for type in ["forceUpdate", "forceReplace"] {
            let r = try call(
                "POST",
                db + "/private/records/modify",
                body: """
                    {\(zone),"operations":[{"operationType":"\(type)","record":{"recordName":"made-by-\(type)","recordType":"Note",
                     "fields":{"a":{"value":"1"},"b":{"value":"2"}}}}]}
                    """
            )
            let made = (r.1["records"] as? [[String: Any]])?.first
            XCTAssertNotNil(made?["recordChangeTag"], "\(type) creates a missing record: \(r.1)")
        }
        var r = try call("POST", db + "/private/records/lookup", body: #"{\#(zone),"records":[{"recordName":"made-by-forceUpdate"}]}"#)
        let stored = (r.1["records"] as? [[String: Any]])?.first
        let created = (stored?["created"] as? [String: Any])?["timestamp"] as? Int64
        r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {\(zone),"operations":[{"operationType":"update","record":{"recordName":"made-by-forceUpdate","recordType":"Note",
                 "recordChangeTag":"\(stored?["recordChangeTag"] as? String ?? "")","fields":{"a":{"value":"changed"}}}}]}
                """
        )
        let updated = (r.1["records"] as? [[String: Any]])?.first
        let fields = updated?["fields"] as? [String: [String: Any]]
        XCTAssertEqual(fields?["a"]?["value"] as? String, "changed", "\(r.1)")
        XCTAssertEqual(fields?["b"]?["value"] as? String, "2", "an update keeps the keys it does not give (R29): \(r.1)")
        XCTAssertEqual((updated?["created"] as? [String: Any])?["timestamp"] as? Int64, created, "created does not move (R31)")
        XCTAssertNotNil((updated?["modified"] as? [String: Any])?["userRecordName"])
    }

    /// R30 over HTTP: the API token alone reads the public database (a visitor not signed
    /// in); every write still needs a user (421); a record is its creator's to change.
    func testThePublicDatabaseReadsWithTheAPITokenAlone() throws {
        var r = try call(
            "POST",
            db + "/public/records/modify",
            body:
                #"{"operations":[{"operationType":"create","record":{"recordName":"hello","recordType":"Notice","fields":{"text":{"value":"hi"}}}}]}"#
        )
        XCTAssertEqual(r.0, 200, "\(r.1)")
        let visitor = "ckAPIToken=\(api)"
        r = try call("POST", db + "/public/records/lookup", query: visitor, body: #"{"records":[{"recordName":"hello"}]}"#)
        XCTAssertEqual(r.0, 200, "\(r.1)")
        let found = (r.1["records"] as? [[String: Any]])?.first
        XCTAssertEqual(((found?["fields"] as? [String: Any])?["text"] as? [String: Any])?["value"] as? String, "hi", "\(r.1)")
        r = try call("POST", db + "/public/records/query", query: visitor, body: #"{"query":{"recordType":"Notice"}}"#)
        XCTAssertEqual((r.1["records"] as? [[String: Any]])?.count, 1, "\(r.1)")
        r = try call("POST", db + "/public/zones/list", query: visitor, body: "{}")
        XCTAssertEqual(r.0, 200, "\(r.1)")
        r = try call(
            "POST",
            db + "/public/records/modify",
            query: visitor,
            body: #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"hello"}}]}"#
        )
        XCTAssertEqual(r.0, 421, "a write needs a user: \(r.1)")
        r = try call("POST", db + "/private/records/query", query: visitor, body: #"{"query":{"recordType":"Notice"}}"#)
        XCTAssertEqual(r.0, 421, "only the public database reads without a user: \(r.1)")
        r = try call("POST", db + "/public/records/lookup", body: #"{"records":[{"recordName":"hello"}]}"#)
        XCTAssertEqual(
            ((r.1["records"] as? [[String: Any]])?.first?["created"] as? [String: Any])?["userRecordName"] as? String,
            ((r.1["records"] as? [[String: Any]])?.first?["modified"] as? [String: Any])?["userRecordName"] as? String
        )
    }

    /// R32: /development/ and /production/ are separate data sets, and an API token opens the
    /// environment it was made for; a share URL of one is not found in the other.
    func testEnvironmentsAreSeparateDataSets() throws {
        let prod = "/database/1/iCloud.test/production"
        let live = try CLI.run(["tokens", "api", "--store", store, "--container", "iCloud.test", "--environment", "production", "--json"])
        XCTAssertEqual(live.status, 0, live.stderr)
        let liveObject = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(live.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(liveObject["environment"] as? String, "production")
        let liveAPI = try XCTUnwrap(liveObject["ckAPIToken"] as? String)
        let bad = try CLI.run(["tokens", "api", "--store", store, "--container", "iCloud.test", "--environment", "staging"])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.stderr.contains("--environment must be development or production, got 'staging'"), bad.stderr)
        let aliceLive = "ckAPIToken=\(liveAPI)&ckWebAuthToken=\(web)"
        let bob = "ckAPIToken=\(api)&ckWebAuthToken=\(try token("bob@example.com"))"
        let bobLive = "ckAPIToken=\(liveAPI)&ckWebAuthToken=\(try token("bob@example.com"))"

        // Each token opens its own environment only.
        var r = try call("POST", prod + "/private/zones/list", body: "{}")
        XCTAssertEqual(r.0, 401, "the development token does not open production: \(r.1)")
        XCTAssertTrue((r.1["reason"] as? String)?.contains("production") == true, "\(r.1)")
        r = try call("POST", db + "/private/zones/list", query: aliceLive, body: "{}")
        XCTAssertEqual(r.0, 401, "the production token does not open development: \(r.1)")

        // A zone, a record and a share in development; production knows none of them.
        try makeZone("Trips")
        r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {"zoneID":{"zoneName":"Trips"},"operations":[
                 {"operationType":"create","record":{"recordName":"lisbon","recordType":"Trip","fields":{"title":{"value":"Lisbon"}}}},
                 {"operationType":"create","record":{"recordName":"share-1","recordType":"cloudkit.share","forRecord":{"recordName":"lisbon"},
                  "publicPermission":"NONE","participants":[{"type":"USER","permission":"READ_WRITE","acceptanceStatus":"INVITED",
                  "userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}]}
                """
        )
        let guid = try XCTUnwrap((r.1["records"] as? [[String: Any]])?.last?["shortGUID"] as? String, "\(r.1)")
        r = try call("POST", prod + "/private/zones/list", query: aliceLive, body: "{}")
        XCTAssertEqual(
            (r.1["zones"] as? [[String: Any]])?.compactMap { ($0["zoneID"] as? [String: Any])?["zoneName"] as? String },
            ["_defaultZone"],
            "\(r.1)"
        )
        r = try call(
            "POST",
            prod + "/private/records/lookup",
            query: aliceLive,
            body: #"{"zoneID":{"zoneName":"Trips"},"records":[{"recordName":"lisbon"}]}"#
        )
        XCTAssertEqual((r.1["records"] as? [[String: Any]])?.first?["serverErrorCode"] as? String, "ZONE_NOT_FOUND", "\(r.1)")
        // Bob resolves the development GUID in development, not in production.
        r = try call("POST", prod + "/public/records/resolve", query: bobLive, body: #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
        XCTAssertEqual((r.1["results"] as? [[String: Any]])?.first?["serverErrorCode"] as? String, "NOT_FOUND", "\(r.1)")
        r = try call("POST", prod + "/public/records/accept", query: bobLive, body: #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
        XCTAssertEqual((r.1["results"] as? [[String: Any]])?.first?["serverErrorCode"] as? String, "NOT_FOUND", "\(r.1)")
        r = try call("POST", db + "/public/records/resolve", query: bob, body: #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
        let result = (r.1["results"] as? [[String: Any]])?.first
        XCTAssertEqual(result?["participantStatus"] as? String, "INVITED", "\(r.1)")
        XCTAssertEqual(result?["environment"] as? String, "development", "\(r.1)")

        // The public database too: a development notice is not production's.
        r = try call(
            "POST",
            db + "/public/records/modify",
            body:
                #"{"operations":[{"operationType":"create","record":{"recordName":"hello","recordType":"Notice","fields":{"text":{"value":"dev"}}}}]}"#
        )
        XCTAssertEqual(r.0, 200, "\(r.1)")
        r = try call("POST", prod + "/public/records/lookup", query: "ckAPIToken=\(liveAPI)", body: #"{"records":[{"recordName":"hello"}]}"#)
        XCTAssertEqual((r.1["records"] as? [[String: Any]])?.first?["serverErrorCode"] as? String, "NOT_FOUND", "\(r.1)")
    }

    /// records/lookup honours each record's own desiredKeys and numbersAsStrings.
    func testLookupHonoursPerRecordDesiredKeysAndNumbersAsStrings() throws {
        var r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {"operations":[{"operationType":"create","record":{"recordName":"n1","recordType":"Note",
                 "fields":{"count":{"value":42,"type":"INT64"},"ratio":{"value":0.5,"type":"DOUBLE"},"title":{"value":"t"},
                 "scores":{"value":[1,2],"type":"INT64_LIST"}}}}]}
                """
        )
        XCTAssertEqual(r.0, 200, "\(r.1)")
        r = try call(
            "POST",
            db + "/private/records/lookup",
            body: """
                {"desiredKeys":["title"],"numbersAsStrings":true,"records":[{"recordName":"n1"},{"recordName":"n1","desiredKeys":["count","ratio","scores"]}]}
                """
        )
        let records = try XCTUnwrap(r.1["records"] as? [[String: Any]], "\(r.1)")
        XCTAssertEqual((records[0]["fields"] as? [String: Any])?.keys.sorted(), ["title"])
        let fields = try XCTUnwrap(records[1]["fields"] as? [String: [String: Any]])
        XCTAssertEqual(fields.keys.sorted(), ["count", "ratio", "scores"])
        XCTAssertEqual(fields["count"]?["value"] as? String, "42")
        XCTAssertEqual(fields["ratio"]?["value"] as? String, "0.5")
        XCTAssertEqual(fields["scores"]?["value"] as? [String], ["1", "2"])
    }

    /// `--cors-origin` takes an origin or `*`; anything else is refused naming the option.
    func testACorsOriginThatIsNoOriginIsRefused() throws {
        for bad in ["app.example.com", "https://app.example.com/path", "ftp://x.example.com", "null"] {
            let r = try CLI.run(["serve", "--store", store, "--port", "0", "--cors-origin", bad])
            XCTAssertNotEqual(r.status, 0, bad)
            XCTAssertTrue(r.stderr.contains("--cors-origin must be an origin"), "\(bad): \(r.stderr)")
        }
    }

    /// An expired token asks for sign-in again (421 with the sign-in page), as CloudKit JS
    /// expects (SPEC §13 wave 4).
    func testAnExpiredUserTokenAsksForSignIn() throws {
        let short = try CLI.run(["tokens", "user", "--store", store, "--container", "iCloud.test", "--as", "bob@example.com", "--ttl", "1"])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        usleep(1_300_000)
        let r = try call("GET", db + "/public/users/caller", query: "ckAPIToken=\(api)&ckWebAuthToken=\(short)")
        XCTAssertEqual(r.0, 421)
        XCTAssertEqual(r.1["reason"] as? String, "ckWebAuthToken has expired")
        XCTAssertEqual((r.1["redirectURL"] as? String)?.hasSuffix("/signin"), true, "\(r.1)")
    }
}
