import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import ShareFlowTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowServer

/// Each endpoint, driven in process through the server's own router and middleware
/// (HummingbirdTesting's `.router`): no process, no socket. The end-to-end suites keep
/// driving the real binary over TCP.
final class EndpointTests: XCTestCase {
    private var engine: Engine!
    private var api = "", alice = "", bob = ""

    override func setUpWithError() throws {
        try prepare(try Engine(store: Store(path: ":memory:")))
    }

    /// The accounts and tokens every test uses, on `engine`.
    private func prepare(_ engine: Engine) throws {
        self.engine = engine
        let accounts = try ServerTestAccounts(engine: engine)
        (api, alice, bob) = (accounts.api, accounts.alice, accounts.bob)
    }

    private struct Answer {
        let status: Int
        let object: [String: Any]
        let headers: HTTPFields
        /// The body as text (a page's HTML).
        var text = ""
        var code: String? { object["serverErrorCode"] as? String }
        var reason: String { object["reason"] as? String ?? "" }
        var records: [[String: Any]] { object["records"] as? [[String: Any]] ?? [] }
    }

    /// Runs `body` against a router made as `shareflow serve` makes it.
    private func withServer(
        rateLimit: (Int, Double)? = nil,
        maxBodyBytes: Int = 16 << 20,
        streamSeconds: Double = 300,
        corsOrigins: [String] = [],
        _ body: @escaping @Sendable (Client) async throws -> Void
    ) async throws {
        var server = CloudKitServer(engine: engine, host: "127.0.0.1", port: 0, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        server.corsOrigins = corsOrigins
        server.rateLimit = rateLimit
        server.maxBodyBytes = maxBodyBytes
        server.streamSeconds = streamSeconds
        let app = Application(router: server.router(thread: EngineThread()))
        let api = api
        try await app.test(.router) { client in try await body(Client(client: client, api: api)) }
    }

    /// A client holding the API token, acting as a user by web auth token (or none).
    private struct Client: Sendable {
        let client: any TestClientProtocol
        /// The API token `post` sends.
        let api: String

        /// records/modify of `operations` (JSON objects, comma-separated) in the caller's zone
        /// Trips of container iCloud.test (development).
        func modifyTrips(_ operations: String, as token: String?) async throws -> Answer {
            try await post("/private/records/modify", as: token, #"{"zoneID":{"zoneName":"Trips"},"operations":["# + operations + "]}")
        }

        /// Makes the caller's zone Trips.
        func makeTrips(as token: String?) async throws {
            let r = try await post(
                "/private/zones/modify",
                as: token,
                #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Trips"}}}]}"#
            )
            XCTAssertEqual(r.status, 200, "\(r.object)")
        }

        /// A POST to `path` (from the database's scope on) of container iCloud.test's
        /// development database.
        func post(_ path: String, as token: String?, _ body: String) async throws -> Answer {
            try await call(.post, "/database/1/iCloud.test/development" + path, as: token, api: api, body: body)
        }

        func call(
            _ method: HTTPRequest.Method,
            _ path: String,
            as token: String?,
            api: String,
            body: String? = nil,
            headers: HTTPFields = [:]
        ) async throws -> Answer {
            var query = "ckAPIToken=\(api)"
            if let token { query += "&ckWebAuthToken=\(token)" }
            let uri = path.hasPrefix("/database/") ? path + (path.contains("?") ? "&" : "?") + query : path
            return try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { response in
                let object = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:]
                return Answer(status: Int(response.status.code), object: object, headers: response.headers, text: String(buffer: response.body))
            }
        }
    }

    private let db = "/database/1/iCloud.test/development"

    func testUsersEndpoints() async throws {
        let (db, api, alice) = (db, api, alice)
        try await withServer { c in
            var r = try await c.call(.get, db + "/public/users/caller", as: alice, api: api)
            XCTAssertEqual(r.status, 200)
            let me = try XCTUnwrap((r.object["users"] as? [[String: Any]])?.first)
            XCTAssertEqual((me["lookupInfo"] as? [String: Any])?["emailAddress"] as? String, "alice@example.com")
            r = try await c.post("/private/users/current", as: alice, "{}")
            XCTAssertEqual(r.object["firstName"] as? String, "Alice")
            r = try await c.call(.get, db + "/public/users/caller", as: nil, api: api)
            XCTAssertEqual(r.status, 421, "no user: sign in")
            XCTAssertEqual(r.code, "AUTHENTICATION_REQUIRED")
            XCTAssertEqual(r.object["redirectURL"] as? String, "https://shareflow.invalid/signin")
            r = try await c.call(.get, db + "/public/users/caller", as: alice, api: "wrong")
            XCTAssertEqual(r.status, 401)
            XCTAssertTrue(r.reason.contains("ckAPIToken is not valid"), r.reason)
            r = try await c.post(
                "/public/users/lookup/email",
                as: alice,
                #"{"users":[{"emailAddress":"alice@example.com"},{"emailAddress":"bob@example.com"}]}"#
            )
            XCTAssertEqual((r.object["users"] as? [[String: Any]])?.count, 1, "Bob is not discoverable (R20): \(r.object)")
            r = try await c.post("/public/users/discover", as: alice, #"{"lookupInfos":[{"emailAddress":"alice@example.com"}]}"#)
            XCTAssertEqual((r.object["users"] as? [[String: Any]])?.count, 1, "\(r.object)")
            r = try await c.post("/public/users/discover", as: alice, #"{"lookupInfos":[{}]}"#)
            XCTAssertEqual(r.status, 400)
            XCTAssertTrue(r.reason.contains("lookupInfos[0] needs emailAddress"), r.reason)
        }
    }

    func testZoneEndpoints() async throws {
        let (db, api, alice) = (db, api, alice)
        try await withServer { c in
            try await c.makeTrips(as: alice)
            var r = try await c.call(.get, db + "/private/zones/list", as: alice, api: api)
            let names = (r.object["zones"] as? [[String: Any]])?.compactMap { ($0["zoneID"] as? [String: Any])?["zoneName"] as? String }
            XCTAssertEqual(Set(names ?? []), ["_defaultZone", "Trips"])
            r = try await c.post("/private/zones/lookup", as: alice, #"{"zones":[{"zoneName":"Trips"},{"zoneName":"Nope"}]}"#)
            let zones = try XCTUnwrap(r.object["zones"] as? [[String: Any]])
            XCTAssertNil(zones[0]["serverErrorCode"])
            XCTAssertEqual(zones[1]["serverErrorCode"] as? String, "ZONE_NOT_FOUND")
            r = try await c.post(
                "/private/zones/modify",
                as: alice,
                #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Z","ownerRecordName":"_other"}}}]}"#
            )
            XCTAssertEqual((r.object["zones"] as? [[String: Any]])?.first?["serverErrorCode"] as? String, "ACCESS_DENIED", "\(r.object)")
            r = try await c.post("/private/zones/modify", as: nil, #"{"operations":[]}"#)
            XCTAssertEqual(r.status, 421, "writes need a user")
        }
    }

    func testRecordEndpoints() async throws {
        let alice = alice
        try await withServer { c in
            var r = try await c.post(
                "/private/records/modify",
                as: alice,
                """
                {"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"Note","fields":{"n":{"value":1},"t":{"value":"x"}}}},
                               {"operationType":"create","record":{"recordName":"b","recordType":"Note","fields":{"n":{"value":2}}}}]}
                """
            )
            XCTAssertEqual(r.records.count, 2, "\(r.object)")
            let tag = try XCTUnwrap(r.records[0]["recordChangeTag"] as? String)
            r = try await c.post("/private/records/lookup", as: alice, #"{"records":[{"recordName":"a"},{"recordName":"zz"}],"desiredKeys":["t"]}"#)
            XCTAssertEqual(((r.records[0]["fields"] as? [String: Any])?.keys).map(Set.init), ["t"], "desiredKeys: \(r.records[0])")
            XCTAssertEqual(r.records[1]["serverErrorCode"] as? String, "NOT_FOUND")
            XCTAssertNil(r.records[1]["uuid"], "per-item errors carry no uuid")
            r = try await c.post(
                "/private/records/query",
                as: alice,
                #"{"query":{"recordType":"Note","sortBy":[{"fieldName":"n","ascending":false}]},"resultsLimit":1}"#
            )
            XCTAssertEqual(r.records.first?["recordName"] as? String, "b")
            let marker = try XCTUnwrap(r.object["continuationMarker"] as? String)
            r = try await c.post(
                "/private/records/query",
                as: alice,
                #"{"query":{"recordType":"Note","sortBy":[{"fieldName":"n","ascending":false}]},"resultsLimit":1,"continuationMarker":"\#(marker)"}"#
            )
            XCTAssertEqual(r.records.map { $0["recordName"] as? String }, ["a"])
            r = try await c.post("/private/records/query", as: alice, #"{"query":{"recordType":"Other"},"continuationMarker":"\#(marker)"}"#)
            XCTAssertEqual(r.status, 400, "a marker of another query")
            // R21 in the engine: a delete at a stale tag is CONFLICT, the rest of a non-atomic batch commits.
            r = try await c.post(
                "/private/records/modify",
                as: alice,
                #"{"operations":[{"operationType":"update","record":{"recordName":"a","recordType":"Note","recordChangeTag":"\#(tag)","fields":{"t":{"value":"y"}}}}]}"#
            )
            XCTAssertNil(r.records.first?["serverErrorCode"], "\(r.object)")
            XCTAssertEqual((r.records.first?["fields"] as? [String: Any])?.keys.contains("n"), true, "update keeps fields not sent")
            r = try await c.post(
                "/private/records/modify",
                as: alice,
                #"{"atomic":false,"operations":[{"operationType":"delete","record":{"recordName":"a","recordChangeTag":"\#(tag)"}},{"operationType":"forceDelete","record":{"recordName":"b"}}]}"#
            )
            XCTAssertEqual(r.records[0]["serverErrorCode"] as? String, "CONFLICT", "\(r.object)")
            XCTAssertEqual(r.records[1]["deleted"] as? Bool, true, "\(r.object)")
            r = try await c.post("/public/records/lookup", as: nil, #"{"records":[{"recordName":"a"}]}"#)
            XCTAssertEqual(r.status, 200, "R30: public reads need only the API token")
        }
    }

    func testSharingFlowAndShareLinks() async throws {
        let (api, alice, bob) = (api, alice, bob)
        try await withServer { c in
            var r = try await c.post(
                "/private/zones/modify",
                as: alice,
                #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Trips"}}}]}"#
            )
            r = try await c.post(
                "/private/records/modify",
                as: alice,
                """
                {"zoneID":{"zoneName":"Trips"},"operations":[
                 {"operationType":"create","record":{"recordName":"lisbon","recordType":"Trip","fields":{"title":{"value":"Lisbon"}}}},
                 {"operationType":"create","record":{"recordName":"s","recordType":"cloudKit.share","forRecord":{"recordName":"lisbon"},
                  "participants":[{"type":"USER","permission":"READ_WRITE","userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}]}
                """
            )
            let guid = try XCTUnwrap(r.records.last?["shortGUID"] as? String, "\(r.object)")
            r = try await c.post("/public/records/resolve", as: bob, #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
            XCTAssertEqual((r.object["results"] as? [[String: Any]])?.first?["participantStatus"] as? String, "INVITED", "\(r.object)")
            r = try await c.post("/public/records/accept", as: bob, #"{"shortGUIDs":[{"value":"\#(guid)"},{"value":"made-up"}]}"#)
            let results = try XCTUnwrap(r.object["results"] as? [[String: Any]])
            XCTAssertEqual(results[0]["participantStatus"] as? String, "ACCEPTED", "\(r.object)")
            XCTAssertEqual(results[1]["serverErrorCode"] as? String, "NOT_FOUND", "a made-up GUID fails alone: \(results[1])")
            r = try await c.post("/private/records/resolve", as: bob, #"{"shortGUIDs":[]}"#)
            XCTAssertEqual(r.status, 400)
            XCTAssertTrue(r.reason.contains("records/resolve is on the public database's path"), r.reason)
            r = try await c.call(.get, "/share/\(guid)", as: nil, api: api)
            XCTAssertEqual(r.status, 200)
        }
    }

    /// A share created over records/modify with one invitee tells observers of one fetched
    /// participant: the route's lookup of the invitee is the only one (issue 41 said two; this
    /// holds the count while records/modify becomes one engine call).
    func testEachInviteeOfAShareSavedOverHTTPIsFetchedOnce() async throws {
        let alice = alice
        final class Seen: @unchecked Sendable {
            var count = 0
            let lock = NSLock()
        }  // under `lock`
        let seen = Seen()
        let handle = engine.events.observe(.participantFetched, priority: 0, label: "count") { _ in
            seen.lock.withLock { seen.count += 1 }
        }
        defer { handle.remove() }
        try await withServer { c in
            try await c.makeTrips(as: alice)
            let r = try await c.modifyTrips(
                """
                 {"operationType":"create","record":{"recordName":"lisbon","recordType":"Trip","fields":{"title":{"value":"Lisbon"}}}},
                 {"operationType":"create","record":{"recordName":"s","recordType":"cloudKit.share","forRecord":{"recordName":"lisbon"},
                  "participants":[{"type":"USER","permission":"READ_WRITE","userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}
                """,
                as: alice
            )
            XCTAssertEqual(r.status, 200, "\(r.object)")
        }
        XCTAssertEqual(seen.lock.withLock { seen.count }, 1)
    }

    /// records/modify is one engine call: a `forceUpdate` compares nothing with a copy read
    /// earlier, so another node writing the record while the request is under way (here when
    /// an invitee of the same request is looked up, where the route once read the record and
    /// the save came later) cannot turn it into CONFLICT. Each invitee named is fetched once,
    /// after the save commits; a kept participant is not fetched; a save that fails tells of none.
    func testAForceUpdateBetweenAnotherNodesWritesSucceeds() async throws {
        let folder = try makeTemporaryFolder("sf-two-nodes")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("store.sqlite").path
        try prepare(try Engine(store: Store(path: path)))
        let nodeB = try Engine(store: Store(path: path))
        defer { nodeB.store.close() }
        let alice = alice
        let aliceOnB = try nodeB.session(for: "alice@example.com").container("iCloud.test").privateCloudDatabase
        final class Seen: @unchecked Sendable {
            var fetched: [String] = []
            var writes: [Result<Void, Error>] = []
            var writeFromB: (() throws -> Void)?
            var armed = false
            let lock = NSLock()
        }  // under `lock`
        let seen = Seen()
        let handle = engine.events.observe(.participantFetched, priority: 0, label: "node B writes") { event in
            let write = seen.lock.withLock { () -> (() throws -> Void)? in
                seen.fetched.append(event.lookupInfo?.value ?? "?")
                return seen.armed ? seen.writeFromB : nil
            }
            guard let write else { return }
            let outcome = Result { try write() }
            seen.lock.withLock { seen.writes.append(outcome) }
        }
        defer { handle.remove() }
        // Node B edits the note whenever an invitee is looked up on node A, once armed.
        seen.writeFromB = {
            let zone = try aliceOnB.zoneID("Trips")
            let note = try aliceOnB.fetchRecord(RecordID(recordName: "note", zoneID: zone))
            note["text"] = .string("from node B")
            _ = try XCTUnwrap(aliceOnB.modifyRecords(saving: [note], savePolicy: .allKeys).saveResults.first).1.get()
        }
        try await withServer { c in
            try await c.makeTrips(as: alice)
            var r = try await c.modifyTrips(
                """
                 {"operationType":"create","record":{"recordName":"lisbon","recordType":"Trip","fields":{"title":{"value":"Lisbon"}}}},
                 {"operationType":"create","record":{"recordName":"note","recordType":"Note","fields":{"text":{"value":"v1"}}}}
                """,
                as: alice
            )
            XCTAssertEqual(r.status, 200, "\(r.object)")
            seen.lock.withLock { seen.armed = true }
            r = try await c.modifyTrips(
                """
                 {"operationType":"forceUpdate","record":{"recordName":"note","recordType":"Note","fields":{"text":{"value":"forced"}}}},
                 {"operationType":"create","record":{"recordName":"s","recordType":"cloudkit.share","forRecord":{"recordName":"lisbon"},
                  "participants":[{"type":"USER","permission":"READ_WRITE","userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}},
                                  {"type":"USER","permission":"READ_ONLY","userIdentity":{"lookupInfo":{"emailAddress":"carol@example.com"}}}]}}
                """,
                as: alice
            )
            XCTAssertEqual(r.status, 200, "\(r.object)")
            XCTAssertEqual(r.records.count, 2)
            XCTAssertNil(r.records.first?["serverErrorCode"], "the forceUpdate: \(r.records.first ?? [:])")
            XCTAssertNil(r.records.last?["serverErrorCode"], "the share: \(r.records.last ?? [:])")
            XCTAssertEqual(seen.lock.withLock { seen.fetched }, ["bob@example.com", "carol@example.com"], "one participant.fetched per invitee")
            let writes = seen.lock.withLock { seen.writes }
            XCTAssertEqual(writes.count, 2)
            for write in writes { XCTAssertNoThrow(try write.get(), "node B writes once the request has committed") }
            // The share again, bob kept by participantId at a new permission, dana invited:
            // only dana is looked up.
            seen.lock.withLock {
                seen.armed = false
                seen.fetched = []
            }
            let share = try XCTUnwrap(r.records.last)
            let participants = try XCTUnwrap(share["participants"] as? [[String: Any]])
            let bobID = try XCTUnwrap(
                participants.first { participant in
                    let identity = participant["userIdentity"] as? [String: Any]
                    return (identity?["lookupInfo"] as? [String: Any])?["emailAddress"] as? String == "bob@example.com"
                }?["participantId"] as? String
            )
            let tag = try XCTUnwrap(share["recordChangeTag"] as? String)
            r = try await c.modifyTrips(
                """
                 {"operationType":"update","record":{"recordName":"s","recordType":"cloudkit.share","recordChangeTag":"\(tag)",
                  "participants":[{"participantId":"\(bobID)","permission":"READ_ONLY"},
                                  {"type":"USER","permission":"READ_ONLY","userIdentity":{"lookupInfo":{"emailAddress":"dana@example.com"}}}]}}
                """,
                as: alice
            )
            XCTAssertNil(r.records.first?["serverErrorCode"], "\(r.object)")
            XCTAssertEqual(seen.lock.withLock { seen.fetched }, ["dana@example.com"])
            // A save that fails (a stale tag) looks no one up, and tells of no one.
            seen.lock.withLock { seen.fetched = [] }
            r = try await c.modifyTrips(
                """
                 {"operationType":"update","record":{"recordName":"s","recordType":"cloudkit.share","recordChangeTag":"\(tag)",
                  "participants":[{"type":"USER","permission":"READ_ONLY","userIdentity":{"lookupInfo":{"emailAddress":"erin@example.com"}}}]}}
                """,
                as: alice
            )
            XCTAssertEqual(r.records.first?["serverErrorCode"] as? String, "CONFLICT", "\(r.object)")
            XCTAssertEqual(seen.lock.withLock { seen.fetched }, [])
        }
        let note = try engine.session(for: "alice@example.com").container("iCloud.test").privateCloudDatabase
            .fetchRecord(RecordID(recordName: "note", zoneID: RecordZoneID(zoneName: "Trips", ownerName: RecordZoneID.currentUserName)))
        XCTAssertEqual(note["text"], .string("from node B"), "node B's last write came after the forced one")
    }

    /// The walk of a share saved with one invitee over records/modify: one write transaction
    /// (the route reads nothing; the engine decides the share, looks the invitee up and saves
    /// in it), and no other transaction once the caller is known.
    func testAShareSavedWithAnInviteeIsOneTransaction() async throws {
        let (api, alice) = (api, alice)
        try await withServer { c in
            try await c.makeTrips(as: alice)
            let r = try await c.modifyTrips(#"{"operationType":"create","record":{"recordName":"lisbon","recordType":"Trip"}}"#, as: alice)
            XCTAssertNil(r.records.first?["serverErrorCode"], "\(r.object)")
        }
        final class Statements: @unchecked Sendable {
            var sql: [String] = []
            let lock = NSLock()
        }  // under `lock`
        let recorded = Statements()
        engine.store.queue.inDatabase { db in
            db.trace { statement in recorded.lock.withLock { recorded.sql.append(statement.description) } }
        }
        defer { engine.store.queue.inDatabase { db in db.trace(options: .statement, nil) } }
        try await withServer { c in
            // The caller is read once, as any request's (a first request on this server).
            _ = try await c.call(.get, "/database/1/iCloud.test/development/private/users/caller", as: alice, api: api)
            recorded.lock.withLock { recorded.sql = [] }
            let r = try await c.modifyTrips(
                """
                {"operationType":"create","record":{"recordName":"s","recordType":"cloudkit.share","forRecord":{"recordName":"lisbon"},
                 "participants":[{"type":"USER","permission":"READ_WRITE","userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}
                """,
                as: alice
            )
            XCTAssertNil(r.records.first?["serverErrorCode"], "\(r.object)")
        }
        let transactions = recorded.lock.withLock { recorded.sql.filter { $0.hasPrefix("BEGIN") } }
        XCTAssertEqual(transactions.count, 1, "\(transactions)")
        XCTAssertTrue(transactions.first?.hasPrefix("BEGIN IMMEDIATE") ?? false, "the one transaction writes: \(transactions)")
    }

    /// What the attack on records/modify-as-one-call found (each against the code before it):
    /// a share that fails leaves its root's answer naming no share; a share whose root failed
    /// is ATOMIC_ERROR in an atomic request (R22) and never takes the root's own code; a share
    /// in the public database is R3's BAD_REQUEST; someone already on the share named again by
    /// userRecordName is kept (R9); naming the participants as they are is no change (R35).
    func testSharesOfRecordsModifyFailAsTheirRulesSay() async throws {
        let alice = alice
        try await withServer { c in
            try await c.makeTrips(as: alice)
            var r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"lisbon","recordType":"Trip"}},{"operationType":"create","record":{"recordName":"note","recordType":"Note"}}"#,
                as: alice
            )
            XCTAssertEqual(r.records.count, 2, "\(r.object)")
            let lisbonTag = try XCTUnwrap(r.records.first?["recordChangeTag"] as? String)
            // A share that fails (its name is a record's): the root saved beside it names no share.
            r = try await c.post(
                "/private/records/modify",
                as: alice,
                """
                {"zoneID":{"zoneName":"Trips"},"atomic":false,"operations":[
                 {"operationType":"create","record":{"recordName":"porto","recordType":"Trip"}},
                 {"operationType":"create","record":{"recordName":"note","recordType":"cloudkit.share","forRecord":{"recordName":"porto"}}}]}
                """
            )
            XCTAssertNil(r.records.first?["serverErrorCode"], "\(r.object)")
            XCTAssertNil(r.records.first?["share"], "porto's answer names a share that was not saved: \(r.records.first ?? [:])")
            XCTAssertNotNil(r.records.last?["serverErrorCode"], "\(r.object)")
            // A share whose root failed, atomically: ATOMIC_ERROR, whatever the root's code.
            for root in [
                #"{"operationType":"update","record":{"recordName":"lisbon","recordType":"Trip","recordChangeTag":"stale"}}"#,
                #"{"operationType":"create","record":{"recordName":"lisbon","recordType":"Trip"}}"#,
            ] {
                r = try await c.modifyTrips(
                    root
                        + #",{"operationType":"create","record":{"recordName":"s2","recordType":"cloudkit.share","forRecord":{"recordName":"lisbon"}}}"#,
                    as: alice
                )
                XCTAssertEqual(r.records.last?["serverErrorCode"] as? String, "ATOMIC_ERROR", "\(r.object)")
            }
            // R3: no share in the public database.
            r = try await c.post(
                "/public/records/modify",
                as: alice,
                """
                {"operations":[{"operationType":"create","record":{"recordName":"x","recordType":"Trip"}},
                 {"operationType":"create","record":{"recordName":"s","recordType":"cloudkit.share","forRecord":{"recordName":"x"}}}]}
                """
            )
            XCTAssertEqual(r.records.last?["serverErrorCode"] as? String, "BAD_REQUEST", "\(r.object)")
            XCTAssertTrue((r.records.last?["reason"] as? String ?? "").contains("(R3)"), "\(r.object)")
            // A share of lisbon with bob, then bob named again by his userRecordName: kept.
            r = try await c.modifyTrips(
                """
                {"operationType":"create","record":{"recordName":"s","recordType":"cloudkit.share","forRecord":{"recordName":"lisbon","recordChangeTag":"\(lisbonTag)"},
                 "participants":[{"type":"USER","permission":"READ_WRITE","userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}
                """,
                as: alice
            )
            var share = try XCTUnwrap(r.records.first, "\(r.object)")
            XCTAssertNil(share["serverErrorCode"], "\(share)")
            func bob(_ share: [String: Any]) -> [String: Any]? {
                (share["participants"] as? [[String: Any]])?.first { participant in
                    let identity = participant["userIdentity"] as? [String: Any]
                    return (identity?["lookupInfo"] as? [String: Any])?["emailAddress"] as? String == "bob@example.com"
                }
            }
            let bobsName = try XCTUnwrap((bob(share)?["userIdentity"] as? [String: Any])?["userRecordName"] as? String, "\(share)")
            r = try await c.modifyTrips(
                """
                {"operationType":"update","record":{"recordName":"s","recordType":"cloudkit.share","recordChangeTag":"\(share["recordChangeTag"] as? String ?? "")",
                 "participants":[{"type":"USER","permission":"READ_WRITE","userIdentity":{"lookupInfo":{"userRecordName":"\(bobsName)"}}}]}}
                """,
                as: alice
            )
            share = try XCTUnwrap(r.records.first, "\(r.object)")
            XCTAssertNil(share["serverErrorCode"], "\(share)")
            XCTAssertNotNil(bob(share), "bob, named by his userRecordName, stays on the share (R9): \(share)")
            // A forced save naming the participants as they are changes none: no tag needed (R35).
            r = try await c.modifyTrips(
                """
                {"operationType":"forceUpdate","record":{"recordName":"s","recordType":"cloudkit.share",
                 "participants":[{"type":"USER","permission":"READ_WRITE","userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}
                """,
                as: alice
            )
            XCTAssertNil(r.records.first?["serverErrorCode"], "\(r.object)")
            // …and one that changes them does need it.
            r = try await c.modifyTrips(
                """
                {"operationType":"forceUpdate","record":{"recordName":"s","recordType":"cloudkit.share",
                 "participants":[{"type":"USER","permission":"READ_ONLY","userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}
                """,
                as: alice
            )
            XCTAssertEqual(r.records.first?["serverErrorCode"] as? String, "CONFLICT", "\(r.object)")
        }
    }

    /// The comparators CloudKit JS and pyicloud send beside the first eight (SPEC §13 wave 4,
    /// issue 42 point 9): NOT_IN, NOT_LIST_CONTAINS, LIST_CONTAINS_ANY, LIST_CONTAINS_ALL,
    /// NOT_BEGINS_WITH, CONTAINS_ALL_TOKENS, CONTAINS_ANY_TOKENS, NEAR with a distance, and a sort
    /// by distance (`relativeLocation`); a record ID given as a reference to `recordName`; an
    /// unknown comparator names the ones there are.
    func testEveryComparatorAndASortByDistance() async throws {
        try await withServer { [alice] c in
            try await c.makeTrips(as: alice)
            func trip(_ name: String, _ title: String, _ tags: [String], _ lat: Double, _ lon: Double) -> String {
                let list = tags.map { "\"\($0)\"" }.joined(separator: ",")
                return
                    #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Trip","fields":{"title":{"value":"\#(title)"},"tags":{"value":[\#(list)],"type":"STRING_LIST"},"at":{"value":{"latitude":\#(lat),"longitude":\#(lon)}}}}}"#
            }
            var r = try await c.modifyTrips(
                [
                    trip("lisbon", "Lisbon by the sea", ["sun", "food"], 38.72, -9.14),
                    trip("porto", "Porto: wine and the river", ["wine", "food"], 41.15, -8.61),
                    trip("oslo", "Oslo in Winter", ["snow"], 59.91, 10.75),
                ].joined(separator: ","),
                as: alice
            )
            XCTAssertEqual(r.records.count, 3, "\(r.object)")
            func names(_ filter: String, sort: String = "") async throws -> [String] {
                let sortBy = sort.isEmpty ? #""sortBy":[{"fieldName":"___recordID","ascending":true}]"# : sort
                let r = try await c.post(
                    "/private/records/query",
                    as: alice,
                    #"{"zoneID":{"zoneName":"Trips"},"query":{"recordType":"Trip","filterBy":[\#(filter)],\#(sortBy)}}"#
                )
                XCTAssertEqual(r.status, 200, "\(filter): \(r.object)")
                return r.records.compactMap { $0["recordName"] as? String }.sorted()
            }
            let byName = #""sortBy":[]"#
            func list(_ items: String) -> String { #""fieldValue":{"value":[\#(items)],"type":"STRING_LIST"}"# }
            var got = try await names(#"{"fieldName":"title","comparator":"NOT_IN",\#(list(#""Oslo in Winter""#))}"#, sort: byName)
            XCTAssertEqual(got, ["lisbon", "porto"])
            got = try await names(#"{"fieldName":"tags","comparator":"NOT_LIST_CONTAINS","fieldValue":{"value":"food"}}"#, sort: byName)
            XCTAssertEqual(got, ["oslo"])
            got = try await names(#"{"fieldName":"tags","comparator":"LIST_CONTAINS_ANY",\#(list(#""snow","wine""#))}"#, sort: byName)
            XCTAssertEqual(got, ["oslo", "porto"])
            got = try await names(#"{"fieldName":"tags","comparator":"LIST_CONTAINS_ALL",\#(list(#""food","sun""#))}"#, sort: byName)
            XCTAssertEqual(got, ["lisbon"])
            got = try await names(#"{"fieldName":"title","comparator":"NOT_BEGINS_WITH","fieldValue":{"value":"Oslo"}}"#, sort: byName)
            XCTAssertEqual(got, ["lisbon", "porto"])
            got = try await names(#"{"fieldName":"title","comparator":"CONTAINS_ALL_TOKENS","fieldValue":{"value":"the WINE"}}"#, sort: byName)
            XCTAssertEqual(got, ["porto"], "words, any case")
            got = try await names(#"{"fieldName":"title","comparator":"CONTAINS_ANY_TOKENS","fieldValue":{"value":"winter sea"}}"#, sort: byName)
            XCTAssertEqual(got, ["lisbon", "oslo"], "whole words: 'winter' is not 'wine'")
            let nearLisbon =
                #"{"fieldName":"at","comparator":"NEAR","fieldValue":{"value":{"latitude":38.7,"longitude":-9.1},"type":"LOCATION"},"distance":400000}"#
            got = try await names(nearLisbon, sort: byName)
            XCTAssertEqual(got, ["lisbon", "porto"], "Porto is about 275 km from Lisbon, Oslo far")
            for meters in ["0", "1", "0.0"] {
                let atLisbon =
                    #"{"fieldName":"at","comparator":"NEAR","fieldValue":{"value":{"latitude":38.72,"longitude":-9.14}},"distance":\#(meters)}"#
                got = try await names(atLisbon, sort: byName)
                XCTAssertEqual(got, ["lisbon"], "a distance of \(meters) is a distance, not a boolean")
            }
            r = try await c.post(
                "/private/records/query",
                as: alice,
                #"{"zoneID":{"zoneName":"Trips"},"resultsLimit":2,"query":{"recordType":"Trip","sortBy":[{"fieldName":"at","relativeLocation":{"latitude":60,"longitude":10}}]}}"#
            )
            XCTAssertEqual(r.records.map { $0["recordName"] as? String }, ["oslo", "porto"], "nearest Oslo first: \(r.object)")
            let marker = try XCTUnwrap(r.object["continuationMarker"] as? String)
            r = try await c.post(
                "/private/records/query",
                as: alice,
                #"{"zoneID":{"zoneName":"Trips"},"resultsLimit":2,"continuationMarker":"\#(marker)","query":{"recordType":"Trip","sortBy":[{"fieldName":"at","relativeLocation":{"latitude":60,"longitude":10}}]}}"#
            )
            XCTAssertEqual(r.records.map { $0["recordName"] as? String }, ["lisbon"], "\(r.object)")
            got = try await names(
                #"{"systemFieldName":"recordName","comparator":"EQUALS","fieldValue":{"value":{"recordName":"oslo"},"type":"REFERENCE"}}"#,
                sort: byName
            )
            XCTAssertEqual(got, ["oslo"], "a record ID as a reference")
            got = try await names(
                #"{"systemFieldName":"recordName","comparator":"IN","fieldValue":{"value":[{"recordName":"oslo"},{"recordName":"porto"}],"type":"REFERENCE_LIST"}}"#,
                sort: byName
            )
            XCTAssertEqual(got, ["oslo", "porto"])
            r = try await c.post(
                "/private/records/query",
                as: alice,
                #"{"zoneID":{"zoneName":"Trips"},"query":{"recordType":"Trip","filterBy":[{"fieldName":"at","comparator":"NEAR","fieldValue":{"value":{"latitude":1,"longitude":2}}}]}}"#
            )
            XCTAssertEqual(r.status, 400)
            XCTAssertTrue(r.reason.contains("distance"), r.reason)
            r = try await c.post(
                "/private/records/query",
                as: alice,
                #"{"zoneID":{"zoneName":"Trips"},"query":{"recordType":"Trip","filterBy":[{"fieldName":"title","comparator":"LIKE","fieldValue":{"value":"x"}}]}}"#
            )
            XCTAssertEqual(r.status, 400)
            XCTAssertTrue(r.reason.contains("LIKE is not one of EQUALS"), r.reason)
        }
    }

    /// `zoneWide: true` reads every zone the caller may read, with one continuation across
    /// them (SPEC §13 wave 4, issue 42 point 7): Alice's own zones in her private database;
    /// in Bob's shared database the hierarchy Alice shared with him, not the rest of her zone.
    func testAZoneWideQueryReadsEveryZoneTheCallerMayRead() async throws {
        try await withServer { [alice, bob] c in
            for zone in ["A", "B", "C"] {
                var r = try await c.post(
                    "/private/zones/modify",
                    as: alice,
                    #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"\#(zone)"}}}]}"#
                )
                XCTAssertEqual(r.status, 200)
                let records = (1...2).map { n in
                    #"{"operationType":"create","record":{"recordName":"\#(zone)\#(n)","recordType":"Event","fields":{"n":{"value":\#(n)}}}}"#
                }
                r = try await c.post(
                    "/private/records/modify",
                    as: alice,
                    #"{"zoneID":{"zoneName":"\#(zone)"},"operations":[\#(records.joined(separator: ","))]}"#
                )
                XCTAssertEqual(r.records.count, 2, "\(r.object)")
            }
            // Zone B is empty of Events once its two go; the pages run across it.
            var r = try await c.post(
                "/private/records/modify",
                as: alice,
                #"{"zoneID":{"zoneName":"B"},"operations":[{"operationType":"forceDelete","record":{"recordName":"B1"}},{"operationType":"forceDelete","record":{"recordName":"B2"}}]}"#
            )
            var seen: [String] = []
            var marker: String?
            var pages = 0
            repeat {
                let more = marker.map { #","continuationMarker":"\#($0)""# } ?? ""
                r = try await c.post(
                    "/private/records/query",
                    as: alice,
                    #"{"zoneWide":true,"resultsLimit":3,"query":{"recordType":"Event"}\#(more)}"#
                )
                XCTAssertEqual(r.status, 200, "\(r.object)")
                seen += r.records.compactMap { $0["recordName"] as? String }
                marker = r.object["continuationMarker"] as? String
                pages += 1
            } while marker != nil && pages < 10
            XCTAssertEqual(seen, ["A1", "A2", "C1", "C2"], "each once, zone by zone")
            // A marker of a zone-wide query is no marker of a one-zone one.
            r = try await c.post("/private/records/query", as: alice, #"{"zoneWide":true,"resultsLimit":1,"query":{"recordType":"Event"}}"#)
            let wide = try XCTUnwrap(r.object["continuationMarker"] as? String)
            r = try await c.post(
                "/private/records/query",
                as: alice,
                #"{"zoneID":{"zoneName":"A"},"resultsLimit":1,"continuationMarker":"\#(wide)","query":{"recordType":"Event"}}"#
            )
            XCTAssertEqual(r.status, 400, "\(r.object)")
            // Bob: a share of A1 only; his shared database's zone-wide query sees A1 and no other.
            r = try await c.post(
                "/private/records/modify",
                as: alice,
                #"{"zoneID":{"zoneName":"A"},"operations":[{"operationType":"create","record":{"recordName":"s","recordType":"cloudkit.share","forRecord":{"recordName":"A1"},"participants":[{"type":"USER","permission":"READ_ONLY","userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}]}"#
            )
            let guid = try XCTUnwrap(r.records.last?["shortGUID"] as? String, "\(r.object)")
            r = try await c.post("/shared/records/query", as: bob, #"{"zoneWide":true,"query":{"recordType":"Event"}}"#)
            XCTAssertEqual(r.records.count, 0, "not accepted yet: \(r.object)")
            r = try await c.post("/public/records/accept", as: bob, #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
            r = try await c.post("/shared/records/query", as: bob, #"{"zoneWide":true,"query":{"recordType":"Event"}}"#)
            XCTAssertEqual(r.records.compactMap { $0["recordName"] as? String }, ["A1"], "\(r.object)")
            r = try await c.post("/private/records/query", as: bob, #"{"zoneWide":true,"query":{"recordType":"Event"}}"#)
            XCTAssertEqual(r.records.count, 0, "Bob's own zones hold none")
        }
    }

    /// `ENCRYPTED_BYTES`, and any field flagged `isEncrypted` (Apple Invites sends INT64 and
    /// STRING so), are stored and returned as given (SPEC §13 wave 4, issue 42 point 9): what
    /// pyicloud's strict model asks of a field named `…Encrypted`. No query matches one.
    func testEncryptedFieldsComeBackAsGiven() async throws {
        try await withServer { [alice] c in
            try await c.makeTrips(as: alice)
            let fields =
                #"{"titleEncrypted":{"type":"STRING","value":"Party","isEncrypted":true},"status":{"type":"INT64","value":2,"isEncrypted":true},"keyEncrypted":{"type":"ENCRYPTED_BYTES","value":"AAEC"},"plain":{"type":"STRING","value":"Party"}}"#
            var r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"e","recordType":"Event","fields":"# + fields + "}}",
                as: alice
            )
            for answer in [r.records.first, nil] {
                let record: [String: Any]
                if let answer {
                    record = answer
                } else {
                    r = try await c.post("/private/records/lookup", as: alice, #"{"zoneID":{"zoneName":"Trips"},"records":[{"recordName":"e"}]}"#)
                    record = try XCTUnwrap(r.records.first)
                }
                let got = try XCTUnwrap(record["fields"] as? [String: [String: Any]], "\(record)")
                XCTAssertEqual(got["titleEncrypted"]?["type"] as? String, "STRING")
                XCTAssertEqual(got["titleEncrypted"]?["isEncrypted"] as? Bool, true)
                XCTAssertEqual(got["titleEncrypted"]?["value"] as? String, "Party")
                XCTAssertEqual(got["status"]?["isEncrypted"] as? Bool, true)
                XCTAssertEqual(got["status"]?["value"] as? Int, 2)
                XCTAssertEqual(got["keyEncrypted"]?["type"] as? String, "ENCRYPTED_BYTES")
                XCTAssertEqual(got["keyEncrypted"]?["value"] as? String, "AAEC")
                XCTAssertNil(got["keyEncrypted"]?["isEncrypted"])
                XCTAssertNil(got["plain"]?["isEncrypted"])
            }
            for field in ["titleEncrypted", "plain"] {
                r = try await c.post(
                    "/private/records/query",
                    as: alice,
                    #"{"zoneID":{"zoneName":"Trips"},"query":{"recordType":"Event","filterBy":[{"fieldName":"\#(field)","comparator":"EQUALS","fieldValue":{"value":"Party"}}]}}"#
                )
                XCTAssertEqual(r.records.count, field == "plain" ? 1 : 0, "\(field): \(r.object)")
            }
            r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"f","recordType":"Event","fields":{"k":{"type":"ENCRYPTED_BYTES","value":"not base64!"}}}}"#,
                as: alice
            )
            XCTAssertEqual(r.status, 400)
            XCTAssertTrue(r.reason.contains("ENCRYPTED_BYTES"), r.reason)
            r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"g","recordType":"Event","fields":{"keys":{"type":"ENCRYPTED_BYTES_LIST","value":["AAEC","AwQ="]}}}}"#,
                as: alice
            )
            let keys = (r.records.first?["fields"] as? [String: [String: Any]])?["keys"]
            XCTAssertEqual(keys?["type"] as? String, "ENCRYPTED_BYTES_LIST", "\(r.object)")
            XCTAssertEqual(keys?["value"] as? [String], ["AAEC", "AwQ="])
            r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"h","recordType":"Event","fields":{"d":{"type":"DOUBLE","value":"0x10"}}}}"#,
                as: alice
            )
            XCTAssertEqual(r.status, 400, "hexadecimal is no number a read gave: \(r.object)")
        }
    }

    /// A field sent as `null` (pyicloud's Reminders clears a date so: `{"type": "TIMESTAMP",
    /// "value": null}`) is no field: a create leaves it out, an update takes it off the
    /// server's record. Never a 400 for the request.
    func testAFieldSentAsNullIsTakenOff() async throws {
        try await withServer { [alice] c in
            try await c.makeTrips(as: alice)
            var r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"r","recordType":"Reminder","fields":{"title":{"value":"milk"},"due":{"type":"TIMESTAMP","value":1700000000000},"done":{"type":"TIMESTAMP","value":null}}}}"#,
                as: alice
            )
            var fields = try XCTUnwrap(r.records.first?["fields"] as? [String: Any], "\(r.object)")
            XCTAssertEqual(fields.keys.sorted(), ["due", "title"])
            let tag = try XCTUnwrap(r.records.first?["recordChangeTag"] as? String)
            r = try await c.modifyTrips(
                #"{"operationType":"update","record":{"recordName":"r","recordType":"Reminder","recordChangeTag":"\#(tag)","fields":{"due":{"type":"TIMESTAMP","value":null},"parent":null,"title":{"value":"oat milk"}}}}"#,
                as: alice
            )
            fields = try XCTUnwrap(r.records.first?["fields"] as? [String: Any], "\(r.object)")
            XCTAssertEqual(fields.keys.sorted(), ["title"], "the update took `due` off")
            XCTAssertEqual((fields["title"] as? [String: Any])?["value"] as? String, "oat milk")
        }
    }

    /// `records/changes` (Apple's older feed form) honours `desiredRecordTypes` as
    /// `changes/zone` does (SPEC §13 wave 4, issue 42 point 9): only records of those types,
    /// and `[]` none, with the current token.
    func testRecordsChangesHonoursDesiredRecordTypes() async throws {
        try await withServer { [alice] c in
            try await c.makeTrips(as: alice)
            var r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"t","recordType":"Trip","fields":{}}},{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{}}}"#,
                as: alice
            )
            XCTAssertEqual(r.records.count, 2)
            r = try await c.post("/private/records/changes", as: alice, #"{"zoneID":{"zoneName":"Trips"},"desiredRecordTypes":["Note"]}"#)
            XCTAssertEqual(r.records.compactMap { $0["recordName"] as? String }, ["n"], "\(r.object)")
            let token = try XCTUnwrap(r.object["syncToken"] as? String)
            r = try await c.post("/private/records/changes", as: alice, #"{"zoneID":{"zoneName":"Trips"},"desiredRecordTypes":[]}"#)
            XCTAssertEqual(r.records.count, 0, "\(r.object)")
            XCTAssertEqual(r.object["syncToken"] as? String, token, "the current token")
        }
    }

    /// A zone's share over HTTP, as Apple Invites makes one (SPEC §13 wave 4, issue 42 point
    /// 8): a `cloudkit.share` named `cloudkit.zoneshare` with no `forRecord`, here with an
    /// invitee listed as `ADMINISTRATOR` (point 9: stored as one, not as `USER`). Bob resolves
    /// and accepts it and reads every record of the zone; as an administrator he may invite.
    func testAZoneShareOverHTTPWithAnAdministrator() async throws {
        try await withServer { [alice, bob] c in
            try await c.makeTrips(as: alice)
            var r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"a","recordType":"Trip","fields":{}}},{"operationType":"create","record":{"recordName":"b","recordType":"Trip","fields":{}}}"#,
                as: alice
            )
            XCTAssertEqual(r.records.count, 2)
            r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","publicPermission":"NONE","fields":{"cloudkit.title":{"value":"Party"}},"participants":[{"type":"ADMINISTRATOR","permission":"READ_WRITE","userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}"#,
                as: alice
            )
            let share = try XCTUnwrap(r.records.first, "\(r.object)")
            XCTAssertEqual(share["recordName"] as? String, "cloudkit.zoneshare", "\(r.object)")
            let guid = try XCTUnwrap(share["shortGUID"] as? String)
            let participants = try XCTUnwrap(share["participants"] as? [[String: Any]])
            let bobs = participants.first {
                ($0["userIdentity"] as? [String: Any]).flatMap { $0["lookupInfo"] as? [String: Any] }?["emailAddress"] as? String == "bob@example.com"
            }
            XCTAssertEqual(bobs?["type"] as? String, "ADMINISTRATOR", "\(participants)")
            r = try await c.post("/public/records/accept", as: bob, #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
            XCTAssertEqual((r.object["results"] as? [[String: Any]])?.first?["participantStatus"] as? String, "ACCEPTED", "\(r.object)")
            let owner = try XCTUnwrap(share["zoneID"] as? [String: Any])["ownerRecordName"] as! String
            r = try await c.post(
                "/shared/records/query",
                as: bob,
                #"{"zoneID":{"zoneName":"Trips","ownerRecordName":"\#(owner)"},"query":{"recordType":"Trip"}}"#
            )
            XCTAssertEqual(r.records.compactMap { $0["recordName"] as? String }.sorted(), ["a", "b"], "the whole zone: \(r.object)")
            // Listing someone else as the owner drops no one: refused.
            let bobsID = try XCTUnwrap(bobs?["participantId"] as? String)
            r = try await c.modifyTrips(
                #"{"operationType":"forceUpdate","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","participants":[{"participantId":"\#(bobsID)","type":"OWNER","permission":"READ_WRITE"}]}}"#,
                as: alice
            )
            XCTAssertEqual(r.records.first?["serverErrorCode"] as? String, "BAD_REQUEST", "\(r.object)")
            XCTAssertTrue((r.records.first?["reason"] as? String ?? "").contains("is not the share's owner"), "\(r.object)")
            // Bob deletes the zone from his shared database: he leaves its share; Alice's zone stays.
            let leave = #"{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"Trips","ownerRecordName":"\#(owner)"}}}]}"#
            r = try await c.post("/shared/zones/modify", as: bob, leave)
            XCTAssertEqual((r.object["zones"] as? [[String: Any]])?.first?["deleted"] as? Bool, true, "\(r.object)")
            r = try await c.post("/shared/zones/list", as: bob, "{}")
            XCTAssertEqual((r.object["zones"] as? [Any])?.count, 0, "gone from his shared database: \(r.object)")
            r = try await c.post("/private/records/query", as: alice, #"{"zoneID":{"zoneName":"Trips"},"query":{"recordType":"Trip"}}"#)
            XCTAssertEqual(r.records.count, 2, "the owner's zone and records stay")
            r = try await c.post("/shared/zones/modify", as: bob, leave)
            XCTAssertEqual(
                (r.object["zones"] as? [[String: Any]])?.first?["serverErrorCode"] as? String,
                "ZONE_NOT_FOUND",
                "left already: \(r.object)"
            )
            // A share of a zone is named for it: another name without forRecord still needs one.
            r = try await c.modifyTrips(#"{"operationType":"create","record":{"recordName":"other","recordType":"cloudkit.share"}}"#, as: alice)
            XCTAssertEqual(r.status, 400)
            XCTAssertTrue(r.reason.contains("cloudkit.zoneshare"), r.reason)
            r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"x","recordType":"cloudkit.share","forRecord":{"recordName":"a"},"participants":[{"type":"BOSS","userIdentity":{"lookupInfo":{"emailAddress":"carol@example.com"}}}]}}"#,
                as: alice
            )
            XCTAssertEqual(r.status, 400, "\(r.object)")
            XCTAssertTrue(r.reason.contains("type must be OWNER, ADMINISTRATOR, USER or PUBLIC_USER"), r.reason)
        }
    }

    /// R38 over HTTP, by Apple's name: a share record carries `denyAccessRequests` (the flag's
    /// opposite) to everyone who sees it, and the owner changes it in a share `update`.
    func testAShareTellsWhetherItTakesAccessRequests() async throws {
        try await withServer { [alice, bob] c in
            try await c.makeTrips(as: alice)
            var r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"a","recordType":"Trip","fields":{}}},{"operationType":"create","record":{"recordName":"s","recordType":"cloudkit.share","forRecord":{"recordName":"a"},"participants":[{"type":"USER","permission":"READ_ONLY","userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}"#,
                as: alice
            )
            var share = try XCTUnwrap(r.records.last, "\(r.object)")
            XCTAssertEqual(share["denyAccessRequests"] as? Bool, true, "off by default")
            let tag = try XCTUnwrap(share["recordChangeTag"] as? String)
            let guid = try XCTUnwrap(share["shortGUID"] as? String)
            r = try await c.modifyTrips(
                #"{"operationType":"update","record":{"recordName":"s","recordType":"cloudkit.share","recordChangeTag":"\#(tag)","denyAccessRequests":false}}"#,
                as: alice
            )
            share = try XCTUnwrap(r.records.first, "\(r.object)")
            XCTAssertEqual(share["denyAccessRequests"] as? Bool, false, "\(r.object)")
            XCTAssertEqual((share["participants"] as? [Any])?.count, 2, "an update naming no participants keeps them")
            r = try await c.post("/public/records/accept", as: bob, #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
            let owner = try XCTUnwrap((share["zoneID"] as? [String: Any])?["ownerRecordName"] as? String)
            r = try await c.post(
                "/shared/records/lookup",
                as: bob,
                #"{"zoneID":{"zoneName":"Trips","ownerRecordName":"\#(owner)"},"records":[{"recordName":"s"}]}"#
            )
            XCTAssertEqual(r.records.first?["denyAccessRequests"] as? Bool, false, "a participant sees it: \(r.object)")
        }
    }

    /// SPEC §17 over HTTP: Bob asks through records/requestAccess (the same answer for a share
    /// that takes no requests and for a made-up short GUID), Alice reads him in `requesters`,
    /// denies him with the update key `denyRequesters`, blocks him when he asks again, reads him
    /// in `blocked`, unblocks him by userRecordName and approves by adding him: his participant
    /// says `isApprovedRequester`. A key naming nothing is refused, naming it.
    func testAccessRequestsOverHTTP() async throws {
        try await withServer { [alice, bob] c in
            try await c.makeTrips(as: alice)
            var r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"a","recordType":"Trip","fields":{}}},{"operationType":"create","record":{"recordName":"s","recordType":"cloudkit.share","forRecord":{"recordName":"a"},"denyAccessRequests":false}}"#,
                as: alice
            )
            var share = try XCTUnwrap(r.records.last, "\(r.object)")
            let guid = try XCTUnwrap(share["shortGUID"] as? String)
            func ask(_ value: String) async throws -> [String: Any] {
                let r = try await c.post("/public/records/requestAccess", as: bob, #"{"shortGUIDs":[{"value":"\#(value)"}]}"#)
                return try XCTUnwrap((r.object["results"] as? [[String: Any]])?.first, "\(r.object)")
            }
            func current() async throws -> [String: Any] {
                let r = try await c.post("/private/records/lookup", as: alice, #"{"zoneID":{"zoneName":"Trips"},"records":[{"recordName":"s"}]}"#)
                return try XCTUnwrap(r.records.first, "\(r.object)")
            }
            func update(_ extra: String) async throws -> Answer {
                let now = try await current()
                let tag = try XCTUnwrap(now["recordChangeTag"] as? String)
                return try await c.modifyTrips(
                    #"{"operationType":"update","record":{"recordName":"s","recordType":"cloudkit.share","recordChangeTag":"\#(tag)",\#(extra)}}"#,
                    as: alice
                )
            }
            let silent = try await ask("madeUpGUIDmadeUpGUIDmadeUp")
            XCTAssertEqual(silent.keys.sorted(), ["shortGUID"], "\(silent)")
            let first = try await ask(guid)
            XCTAssertEqual(first.keys.sorted(), ["shortGUID"])
            share = try await current()
            let requesters = try XCTUnwrap(share["requesters"] as? [[String: Any]], "\(share)")
            XCTAssertEqual(requesters.count, 1)
            let requestID = try XCTUnwrap(requesters[0]["participantId"] as? String)
            let identity = try XCTUnwrap(requesters[0]["userIdentity"] as? [String: Any])
            XCTAssertEqual((identity["lookupInfo"] as? [String: Any])?["emailAddress"] as? String, "bob@example.com")
            let bobName = try XCTUnwrap(identity["userRecordName"] as? String)

            r = try await update(#""denyRequesters":["\#(requestID)"]"#)
            XCTAssertNil(r.records.first?["requesters"], "\(r.object)")
            r = try await update(#""denyRequesters":["nobody"]"#)
            XCTAssertEqual(r.records.first?["serverErrorCode"] as? String, "BAD_REQUEST", "\(r.object)")
            XCTAssertTrue(r.text.contains("nobody"), r.text)
            r = try await update(#""blockRequesters":["twice","twice"]"#)
            XCTAssertTrue(r.text.contains("names 'twice' twice") || r.text.contains("names twice twice"), r.text)

            _ = try await ask(guid)
            share = try await current()
            let again = try XCTUnwrap((share["requesters"] as? [[String: Any]])?.first?["participantId"] as? String)
            r = try await update(#""blockRequesters":["\#(again)"]"#)
            share = try await current()
            XCTAssertNil(share["requesters"])
            XCTAssertEqual((share["blocked"] as? [[String: Any]])?.count, 1, "\(share)")
            _ = try await ask(guid)
            share = try await current()
            XCTAssertNil(share["requesters"], "a blocked caller's request is not recorded")

            r = try await update(#""unblockIdentities":["\#(bobName)"]"#)
            share = try await current()
            XCTAssertNil(share["blocked"], "\(r.object)")
            _ = try await ask(guid)
            r = try await update(
                #""participants":[{"type":"USER","permission":"READ_WRITE","userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]"#
            )
            share = try await current()
            XCTAssertNil(share["requesters"], "approving closed the request: \(share)")
            let bobs = (share["participants"] as? [[String: Any]])?.first { $0["type"] as? String == "USER" }
            XCTAssertEqual(bobs?["isApprovedRequester"] as? Bool, true, "\(share)")
            XCTAssertEqual(bobs?["acceptanceStatus"] as? String, "INVITED")

            // Invited, he is told so.
            let invited = try await ask(guid)
            XCTAssertEqual(invited["serverErrorCode"] as? String, "BAD_REQUEST")
            XCTAssertTrue((invited["reason"] as? String)?.contains("participantAlreadyInvited") == true, "\(invited)")
        }
    }

    /// An approval the owner's save refuses tells the requester no more than a denial does:
    /// not the share's title, its size nor the owner's policy's reason (R16, R27). And
    /// `shareflowExtensions=1` adds the times (ms) to requesters and participants, which a
    /// plain request leaves out (pyicloud's strict models have no such keys).
    func testAccessRequestAnswersTellNothingOfTheShareAndTimesAreOptIn() async throws {
        let engine = try XCTUnwrap(engine)
        // Switched off by the test between requests; read by the engine's thread under a lock.
        let staffOnly = NSLockedFlag(true)
        engine.policies.add(.shareRequestAccess, name: "approve-all") { _ in .approve(permission: .readOnly, role: .privateUser) }
        engine.policies.add(.participantAdd, name: "staff-only") { _ in staffOnly.value ? .deny("only staff") : .allow }
        try await withServer { [alice, bob] c in
            try await c.makeTrips(as: alice)
            var r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"a","recordType":"Trip","fields":{}}},{"operationType":"create","record":{"recordName":"s","recordType":"cloudkit.share","forRecord":{"recordName":"a"},"fields":{"cloudkit.title":{"value":"Secret merger"}},"denyAccessRequests":false}}"#,
                as: alice
            )
            let guid = try XCTUnwrap(r.records.last?["shortGUID"] as? String, "\(r.object)")
            r = try await c.post("/public/records/requestAccess", as: bob, #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
            let result = try XCTUnwrap((r.object["results"] as? [[String: Any]])?.first, "\(r.object)")
            XCTAssertEqual(result["serverErrorCode"] as? String, "ACCESS_DENIED", "\(result)")
            let reason = result["reason"] as? String ?? ""
            XCTAssertFalse(reason.contains("Secret") || reason.contains("only staff") || reason.contains("staff-only"), reason)
            XCTAssertTrue(reason.contains("the request was not approved"), reason)

            staffOnly.value = false
            r = try await c.post("/public/records/requestAccess", as: bob, #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
            let lookup = #"{"zoneID":{"zoneName":"Trips"},"records":[{"recordName":"s"}]}"#
            r = try await c.post("/private/records/lookup", as: alice, lookup)
            let plain = try XCTUnwrap(
                (r.records.first?["participants"] as? [[String: Any]])?.first { $0["type"] as? String == "USER" },
                "\(r.object)"
            )
            XCTAssertEqual(plain["isApprovedRequester"] as? Bool, true)
            XCTAssertNil(plain["dateAddedToShare"])
            r = try await c.post("/private/records/lookup?shareflowExtensions=1", as: alice, lookup)
            let extended = try XCTUnwrap((r.records.first?["participants"] as? [[String: Any]])?.first { $0["type"] as? String == "USER" })
            let added = try XCTUnwrap(extended["dateAddedToShare"] as? Int, "\(extended)")
            XCTAssertLessThan(abs(Double(added) / 1000 - Date().timeIntervalSince1970), 600)
        }
    }

    /// R44 over HTTP: a one-time link's token is a short GUID records/resolve and
    /// records/accept take; Bob claims it, then Alice's second reader is refused as a stranger.
    func testAOneTimeLinkResolvesAndIsClaimedOverHTTP() async throws {
        let engine = try XCTUnwrap(engine)
        let db = try engine.session(for: "alice@example.com").container("iCloud.test").privateCloudDatabase
        let zone = try db.saveZone("Links")
        let root = Record(recordType: "Doc", recordID: RecordID(recordName: "d", zoneID: zone.zoneID))
        let share = Share(rootRecord: root)
        let guest = Participant.oneTimeURLParticipant()
        share.addParticipant(guest)
        XCTAssertNil(try db.modifyRecords(saving: [root, share]).error)
        let link = try XCTUnwrap(share.oneTimeURL(for: guest.participantID))
        let guid = try XCTUnwrap(Engine.shareToken(url: link))
        _ = try engine.accounts.create(emails: ["carol@example.com"])
        let carol = try Credentials.newWebAuthToken(
            container: "iCloud.test",
            account: try XCTUnwrap(engine.accounts.find("carol@example.com")),
            ttl: 3600,
            engine: engine
        )
        try await withServer { [bob] c in
            var r = try await c.post("/public/records/resolve", as: bob, #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
            var result = try XCTUnwrap((r.object["results"] as? [[String: Any]])?.first, "\(r.object)")
            XCTAssertEqual(result["participantStatus"] as? String, "INVITED", "\(result)")
            r = try await c.post("/public/records/accept", as: bob, #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
            result = try XCTUnwrap((r.object["results"] as? [[String: Any]])?.first, "\(r.object)")
            XCTAssertEqual(result["participantStatus"] as? String, "ACCEPTED", "\(result)")
            r = try await c.post("/public/records/resolve", as: carol, #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
            result = try XCTUnwrap((r.object["results"] as? [[String: Any]])?.first, "\(r.object)")
            XCTAssertEqual(result["serverErrorCode"] as? String, "NOT_FOUND", "\(result)")
        }
    }

    /// A LOCATION keeps all eight of its keys (SPEC §13 wave 4, issue 42 point 5), alone and
    /// in a list, through the store and back; one given with its coordinates only comes back
    /// with those only; a key that is no finite number is refused naming it.
    func testALocationKeepsAllEightKeys() async throws {
        try await withServer { [alice] c in
            try await c.makeTrips(as: alice)
            let full =
                #"{"latitude":38.72,"longitude":-9.14,"horizontalAccuracy":5,"verticalAccuracy":-1,"altitude":95.5,"speed":1.25,"course":270,"timestamp":1700000000123}"#
            var r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"t","recordType":"Trip","fields":{"at":{"type":"LOCATION","value":"# + full
                    + #"},"stops":{"type":"LOCATION_LIST","value":["# + full + #",{"latitude":1,"longitude":2}]}}}}"#,
                as: alice
            )
            XCTAssertEqual(r.records.first?["recordName"] as? String, "t", "\(r.object)")
            r = try await c.post("/private/records/lookup", as: alice, #"{"zoneID":{"zoneName":"Trips"},"records":[{"recordName":"t"}]}"#)
            let fields = try XCTUnwrap(r.records.first?["fields"] as? [String: [String: Any]], "\(r.object)")
            let at = try XCTUnwrap(fields["at"]?["value"] as? [String: Any])
            XCTAssertEqual(
                at.keys.sorted(),
                ["altitude", "course", "horizontalAccuracy", "latitude", "longitude", "speed", "timestamp", "verticalAccuracy"]
            )
            XCTAssertEqual(at["verticalAccuracy"] as? Double, -1)
            XCTAssertEqual(at["altitude"] as? Double, 95.5)
            XCTAssertEqual((at["timestamp"] as? NSNumber)?.int64Value, 1_700_000_000_123)
            let stops = try XCTUnwrap(fields["stops"]?["value"] as? [[String: Any]])
            XCTAssertEqual(stops.first?.count, 8, "in a list too")
            XCTAssertEqual(stops.last?.keys.sorted(), ["latitude", "longitude"])
            r = try await c.modifyTrips(
                #"{"operationType":"create","record":{"recordName":"u","recordType":"Trip","fields":{"at":{"type":"LOCATION","value":{"latitude":1,"longitude":2,"speed":"fast"}}}}}"#,
                as: alice
            )
            XCTAssertEqual(r.status, 400, "\(r.object)")
            XCTAssertTrue(r.reason.contains("speed must be a number"), r.reason)
        }
    }

    /// CloudKit JS 1.2.0's `discoverAllContactUserInfos`: a GET of `users/lookup/contacts` with
    /// no body answers the caller's contacts that are discoverable accounts, as user infos
    /// (issue 42 point 9). A contact who is no account, or not discoverable, is left out.
    func testUsersLookupContactsAnswersTheCallersDiscoverableContacts() async throws {
        var alice = try XCTUnwrap(engine.accounts.find("alice@example.com"))
        let bob = try engine.accounts.setDiscoverability(.granted, of: try XCTUnwrap(engine.accounts.find("bob@example.com")))
        let carol = try engine.accounts.create(emails: ["carol@example.com"], name: NameComponents(givenName: "Carol"))
        alice = try engine.accounts.addContacts([("bob@example.com", nil), ("carol@example.com", nil), ("nobody@example.com", nil)], to: alice)
        let token = self.alice
        try await withServer { c in
            for method in [HTTPRequest.Method.get, .post] {
                let r = try await c.call(
                    method,
                    "/database/1/iCloud.test/development/public/users/lookup/contacts",
                    as: token,
                    api: c.api,
                    body: method == .post ? "{}" : nil
                )
                XCTAssertEqual(r.status, 200, "\(r.object)")
                let users = try XCTUnwrap(r.object["users"] as? [[String: Any]], "\(r.object)")
                XCTAssertEqual(users.map { $0["userRecordName"] as? String }, [bob.userRecordID], "not \(carol.userRecordID): not discoverable")
                XCTAssertEqual(users.first?["emailAddress"] as? String, "bob@example.com")
                XCTAssertEqual(users.first?["firstName"] as? String, "Bob")
            }
            let r = try await c.call(.get, "/database/1/iCloud.test/development/public/users/lookup/contacts", as: nil, api: c.api)
            XCTAssertEqual(r.status, 421, "a user's contacts need the user")
        }
    }

    /// CORS for browser clients on another origin (SPEC §13 wave 4, §19 A5; issue 42 point 10):
    /// a preflight as a browser sends it before CloudKit JS's `text/plain` POST is answered
    /// without credentials; answers (errors too) name the origin and expose the web auth token
    /// header; an origin not listed, a route that is not CloudKit's, and a server without
    /// `--cors-origin` get no CORS headers.
    func testBrowsersOnAnotherOriginReadTheAnswers() async throws {
        let (alice, db) = (alice, db)
        let preflight: HTTPFields = [
            .origin: "https://app.example.com", .accessControlRequestMethod: "POST",
            .accessControlRequestHeaders: "content-type",
        ]
        try await withServer(corsOrigins: ["https://app.example.com", "http://localhost:3000"]) { c in
            var r = try await c.call(.options, db + "/private/zones/list", as: nil, api: c.api, headers: preflight)
            XCTAssertEqual(r.status, 204)
            XCTAssertEqual(r.headers[.accessControlAllowOrigin], "https://app.example.com")
            XCTAssertEqual(r.headers[.accessControlAllowMethods]?.contains("POST"), true)
            XCTAssertEqual(r.headers[.accessControlAllowHeaders]?.contains("content-type"), true)
            XCTAssertNil(r.headers[.accessControlAllowCredentials])
            let from = HTTPFields([HTTPField(name: .origin, value: "http://localhost:3000"), HTTPField(name: .contentType, value: "text/plain")])
            r = try await c.call(.post, db + "/private/zones/list", as: alice, api: c.api, body: "{}", headers: from)
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.headers[.accessControlAllowOrigin], "http://localhost:3000")
            XCTAssertEqual(r.headers[.accessControlExposeHeaders]?.contains("X-Apple-CloudKit-Web-Auth-Token"), true)
            XCTAssertEqual(r.headers[.vary], "Origin")
            r = try await c.call(.post, db + "/private/zones/list", as: "null", api: c.api, body: "{}", headers: from)
            XCTAssertEqual(r.status, 421, "an error is readable too: the page offers sign-in")
            XCTAssertEqual(r.headers[.accessControlAllowOrigin], "http://localhost:3000")
            r = try await c.call(.post, db + "/private/zones/list", as: alice, api: c.api, body: "{}", headers: [.origin: "https://evil.example.com"])
            XCTAssertEqual(r.status, 200)
            XCTAssertNil(r.headers[.accessControlAllowOrigin], "an origin not listed")
            XCTAssertEqual(r.headers[.vary], "Origin", "an answer that depends on the origin says so to caches")
            r = try await c.call(
                .options,
                db + "/private/zones/list",
                as: nil,
                api: c.api,
                headers: [.origin: "https://evil.example.com", .accessControlRequestMethod: "POST"]
            )
            XCTAssertNil(r.headers[.accessControlAllowOrigin])
            r = try await c.call(.get, "/signin", as: nil, api: "", headers: [.origin: "https://app.example.com"])
            XCTAssertNil(r.headers[.accessControlAllowOrigin], "pages are not CloudKit routes")
        }
        try await withServer(corsOrigins: ["*"]) { c in
            let r = try await c.call(.options, db + "/public/records/query", as: nil, api: c.api, headers: preflight)
            XCTAssertEqual(r.headers[.accessControlAllowOrigin], "*")
        }
        try await withServer { c in
            let r = try await c.call(.options, db + "/public/records/query", as: nil, api: c.api, headers: preflight)
            XCTAssertNil(r.headers[.accessControlAllowOrigin], "no --cors-origin, no CORS")
        }
    }

    /// A user's token that expired asks for sign-in again (421, `redirectURL` the server's
    /// sign-in page): CloudKit JS recovers from nothing else. A token that is no token of this
    /// server, or one revoked, is 401 (SPEC §13 wave 4, issue 42 point 2). The sign-in page
    /// tells how an operator makes a token, and runs nothing.
    func testAnExpiredTokenAsksForSignInAndAWrongOneIsRefused() async throws {
        let account = try XCTUnwrap(engine.accounts.find("alice@example.com"))
        let expired = try Credentials.newWebAuthToken(container: "iCloud.test", account: account, ttl: -1, engine: engine)
        let revoked = try Credentials.newWebAuthToken(container: "iCloud.test", account: account, ttl: 3600, engine: engine)
        engine.options.publicURL = "https://share.example.com/"
        let unknown = String(repeating: "A", count: 128)
        let engine = engine!
        try await withServer { c in
            // The revoked token is first seen (and remembered) while it is good.
            var r = try await c.post("/private/zones/list", as: revoked, "{}")
            XCTAssertEqual(r.status, 200, "\(r.object)")
            XCTAssertEqual(try engine.credentials.revoke(hash: Credentials.hash(revoked)), 1)
            for path in ["/private/zones/list", "/public/records/query", "/public/users/caller"] {
                let body = path.hasSuffix("query") ? #"{"query":{"recordType":"Note"}}"# : "{}"
                r = try await c.post(path, as: expired, body)
                XCTAssertEqual(r.status, 421, "\(path): \(r.object)")
                XCTAssertEqual(r.code, "AUTHENTICATION_REQUIRED")
                XCTAssertEqual(r.reason, "ckWebAuthToken has expired")
                XCTAssertEqual(r.object["redirectURL"] as? String, "https://share.example.com/signin")
                r = try await c.post(path, as: unknown, body)
                XCTAssertEqual(r.status, 401, "\(path): \(r.object)")
                XCTAssertEqual(r.code, "AUTHENTICATION_FAILED")
                XCTAssertNil(r.object["redirectURL"])
            }
            r = try await c.call(.get, "/signin", as: nil, api: "")
            XCTAssertEqual(r.status, 200)
            XCTAssertTrue(r.text.contains("shareflow tokens user"), r.text)
            XCTAssertFalse(r.text.contains("<script"), r.text)
            XCTAssertEqual(r.headers[.contentSecurityPolicy]?.hasPrefix("default-src 'none'"), true)
        }
        // A revoked token is forgotten by the server once the store tells it (StoreWatch); a
        // new router reads it afresh: 401.
        try await withServer { c in
            let r = try await c.post("/private/zones/list", as: revoked, "{}")
            XCTAssertEqual(r.status, 401, "\(r.object)")
        }
    }

    /// CloudKit JS before sign-in: every request carries `ckWebAuthToken=null` (the text). It is
    /// anonymous — an API token's read of the public database answers, a user's route asks for
    /// sign-in (421) — never a bad token (401). A query's continuation comes back with
    /// `zoneID: {zoneName: "_defaultZone"}` though the first page named no zone: the same query
    /// (SPEC §13 wave 4, issue 42 points 1 and 4).
    func testCloudKitJSsAnonymousRequestsAndDefaultZoneContinuations() async throws {
        let alice = alice
        try await withServer { c in
            for database in ["public", "private"] {
                let r = try await c.post(
                    "/\(database)/records/modify",
                    as: alice,
                    #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"Note","fields":{"n":{"value":1}}}},{"operationType":"create","record":{"recordName":"b","recordType":"Note","fields":{"n":{"value":2}}}}]}"#
                )
                XCTAssertEqual(r.records.count, 2, "\(r.object)")
            }
            var r = try await c.post("/public/records/query", as: "null", #"{"query":{"recordType":"Note"}}"#)
            XCTAssertEqual(r.status, 200, "an API token's read of the public database: \(r.object)")
            XCTAssertEqual(r.records.count, 2)
            r = try await c.post("/private/records/query", as: "null", #"{"query":{"recordType":"Note"}}"#)
            XCTAssertEqual(r.status, 421, "\(r.object)")
            XCTAssertEqual(r.code, "AUTHENTICATION_REQUIRED")
            r = try await c.post("/private/records/query", as: "", #"{"query":{"recordType":"Note"}}"#)
            XCTAssertEqual(r.status, 421, "an empty token names none either: \(r.object)")
            r = try await c.post("/private/records/query", as: "undefined", #"{"query":{"recordType":"Note"}}"#)
            XCTAssertEqual(r.status, 421, "nor does `undefined`: \(r.object)")
            r = try await c.post("/public/records/query", as: "undefined", #"{"query":{"recordType":"Note"}}"#)
            XCTAssertEqual(r.status, 200, "\(r.object)")
            for (database, token) in [("public", "null"), ("private", alice), ("public", alice)] {
                let query = #"{"query":{"recordType":"Note","sortBy":[{"fieldName":"n","ascending":true}]},"resultsLimit":1"#
                r = try await c.post("/\(database)/records/query", as: token, query + "}")
                XCTAssertEqual(r.records.map { $0["recordName"] as? String }, ["a"], "\(database): \(r.object)")
                let marker = try XCTUnwrap(r.object["continuationMarker"] as? String, "\(r.object)")
                r = try await c.post(
                    "/\(database)/records/query",
                    as: token,
                    query + #","zoneID":{"zoneName":"_defaultZone"},"continuationMarker":"\#(marker)"}"#
                )
                XCTAssertEqual(r.status, 200, "\(database): page 2 as CloudKit JS asks for it: \(r.object)")
                XCTAssertEqual(r.records.map { $0["recordName"] as? String }, ["b"], "\(database)")
            }
        }
    }

    /// A record read with `numbersAsStrings` saves back as it was read: INT64, DOUBLE and
    /// TIMESTAMP values (and their lists) given as the text a read gave are those numbers
    /// (SPEC §13 wave 4, issue 42 point 6); text that is no finite number is refused.
    func testNumbersReadAsStringsSaveBack() async throws {
        let alice = alice
        try await withServer { c in
            var r = try await c.post(
                "/private/records/modify",
                as: alice,
                #"{"operations":[{"operationType":"create","record":{"recordName":"m","recordType":"M","fields":{"n":{"value":9007199254740993,"type":"INT64"},"d":{"value":1.5,"type":"DOUBLE"},"t":{"value":1700000000123,"type":"TIMESTAMP"},"l":{"value":[1,2],"type":"INT64_LIST"}}}}]}"#
            )
            XCTAssertNil(r.records.first?["serverErrorCode"], "\(r.object)")
            r = try await c.post("/private/records/lookup", as: alice, #"{"records":[{"recordName":"m"}],"numbersAsStrings":true}"#)
            let read = try XCTUnwrap(r.records.first, "\(r.object)")
            let fields = try XCTUnwrap(read["fields"] as? [String: Any])
            XCTAssertEqual((fields["n"] as? [String: Any])?["value"] as? String, "9007199254740993", "\(fields)")
            let tag = try XCTUnwrap(read["recordChangeTag"] as? String)
            let asRead = String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
            r = try await c.post(
                "/private/records/modify",
                as: alice,
                #"{"operations":[{"operationType":"update","record":{"recordName":"m","recordType":"M","recordChangeTag":"\#(tag)","fields":\#(asRead)}}]}"#
            )
            XCTAssertNil(r.records.first?["serverErrorCode"], "saved back as read: \(r.object)")
            let saved = try XCTUnwrap(r.records.first?["fields"] as? [String: Any])
            XCTAssertEqual((saved["n"] as? [String: Any])?["value"] as? Int64, 9_007_199_254_740_993, "\(saved)")
            XCTAssertEqual((saved["d"] as? [String: Any])?["value"] as? Double, 1.5)
            XCTAssertEqual((saved["t"] as? [String: Any])?["value"] as? Int64, 1_700_000_000_123)
            XCTAssertEqual((saved["l"] as? [String: Any])?["value"] as? [Int64], [1, 2])
            for bad in [#""nan""#, #""inf""#, #""12abc""#, #""""#] {
                r = try await c.post(
                    "/private/records/modify",
                    as: alice,
                    #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"m","recordType":"M","fields":{"d":{"value":\#(bad),"type":"DOUBLE"}}}}]}"#
                )
                XCTAssertEqual(r.status, 400, "\(bad): \(r.object)")
            }
        }
    }

    /// What every database route shares: the path checked, methods, unknown routes, the body
    /// bound, rate limiting — each answered in Apple's error body.
    func testRoutingAndMiddleware() async throws {
        let (db, api, alice) = (db, api, alice)
        try await withServer(rateLimit: (8, 60), maxBodyBytes: 1024) { c in
            var r = try await c.call(.get, db + "/private/records/modify", as: alice, api: api)
            XCTAssertEqual(r.status, 400)
            XCTAssertTrue(r.reason.contains("records/modify is POST, not GET"), r.reason)
            r = try await c.call(.put, db + "/private/records/modify", as: alice, api: api)
            XCTAssertEqual(r.status, 404)
            XCTAssertEqual(r.code, "NOT_FOUND", "JSON like every other answer")
            r = try await c.post("/private/records/frobnicate", as: alice, "{}")
            XCTAssertEqual(r.status, 404)
            XCTAssertEqual(r.reason, "no endpoint records/frobnicate")
            r = try await c.call(.post, db + "/private/records/frobnicate", as: nil, api: "wrong", body: "{}")
            XCTAssertEqual(r.status, 401, "which endpoints exist is no answer to a stranger: \(r.object)")
            r = try await c.call(.get, db + "/private/users/caller/", as: alice, api: api)
            XCTAssertEqual(r.status, 200, "a trailing slash is the same route")
            r = try await c.call(.post, "/database/1/iCloud.test/staging/private/records/lookup", as: alice, api: api, body: "{}")
            XCTAssertEqual(r.status, 400)
            XCTAssertTrue(r.reason.contains("environment 'staging' is not development or production"), r.reason)
            r = try await c.post("/everyone/records/lookup", as: alice, "{}")
            XCTAssertTrue(r.reason.contains("is not public, private or shared"), r.reason)
            r = try await c.post("/private/records/lookup", as: alice, String(repeating: " ", count: 2000))
            XCTAssertEqual(r.status, 413)
            XCTAssertEqual(r.code, "QUOTA_EXCEEDED")
            r = try await c.post("/private/records/lookup", as: alice, "[1]")
            XCTAssertEqual(r.status, 400)
            XCTAssertTrue(r.reason.contains("not a JSON object"), r.reason)
            // Eight requests a minute: whatever is left of them, then THROTTLED with Retry-After.
            var throttled: Answer?
            for _ in 0..<10 where throttled == nil {
                r = try await c.call(.get, db + "/public/users/caller", as: alice, api: api)
                if r.status == 429 { throttled = r }
            }
            let t = try XCTUnwrap(throttled, "the ninth request in a minute is throttled")
            XCTAssertEqual(t.code, "THROTTLED")
            XCTAssertNotNil(t.object["retryAfter"] as? Int)
            XCTAssertNotNil(t.headers[.retryAfter], "pyicloud reads Retry-After")
        }
    }

    /// Rate limits count who a request turned out to be: a key ID is no secret, so requests
    /// naming one (with a bad signature) spend their address's bucket, never its account's or
    /// a signed-in user's.
    func testAKeyIDSpendsOnlyItsAddresssRequests() async throws {
        let (db, api, alice) = (db, api, alice)
        try await withServer(rateLimit: (4, 600)) { c in
            var r = try await c.call(.get, db + "/public/users/caller", as: alice, api: api)
            XCTAssertEqual(r.status, 200, "Alice's first request: hers, not the address's")
            var statuses: [Int] = []
            for _ in 0..<5 {
                let answer = try await c.client.execute(
                    uri: db + "/public/records/query",
                    method: .post,
                    headers: [
                        HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!: String(repeating: "ab", count: 32),
                        HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!: "2026-01-01T00:00:00Z",
                        HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!: "AAAA",
                    ],
                    body: ByteBuffer(string: "{}")
                ) { Int($0.status.code) }
                statuses.append(answer)
            }
            XCTAssertEqual(statuses, [401, 401, 401, 401, 429], "the address's four requests")
            for _ in 0..<3 {
                r = try await c.call(.get, db + "/public/users/caller", as: alice, api: api)
                XCTAssertEqual(r.status, 200, "Alice keeps her own bucket: \(r.object)")
            }
            r = try await c.call(.get, db + "/public/users/caller", as: alice, api: api)
            XCTAssertEqual(r.status, 429, "her fifth request in the window")
        }
    }

    /// The route list (`shareflow serve --routes`) and the router agree: every listed route
    /// answers, none with NOT_FOUND for want of a route.
    func testEveryListedRouteIsServed() async throws {
        let (api, alice) = (api, alice)
        // changes/stream ends after its lifetime: a short one here, the whole body read.
        try await withServer(streamSeconds: 1) { c in
            for line in CloudKitAPI.routes {
                let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                let path = parts[1].replacingOccurrences(of: "{container}", with: "iCloud.test")
                    .replacingOccurrences(of: "{environment}", with: "development").replacingOccurrences(of: "{database}", with: "private")
                    .replacingOccurrences(of: "{shortGUID}", with: "x")
                let r = try await c.call(HTTPRequest.Method(parts[0])!, path, as: alice, api: api, body: parts[0] == "POST" ? "{}" : nil)
                XCTAssertFalse(r.status == 404 && r.reason.hasPrefix("no route"), "\(line): \(r.object)")
                XCTAssertLessThan(r.status, 500, "\(line): \(r.object)")
            }
        }
    }

    /// docs/reference/server.md names every endpoint, and every file it points at exists.
    func testTheReferenceNamesEveryEndpoint() throws {
        let root = packageRoot
        let page = try String(contentsOf: root.appendingPathComponent("docs/reference/server.md"), encoding: .utf8)
        for endpoint in CloudKitAPI.endpoints {
            XCTAssertTrue(page.contains("`\(endpoint.subpath)`"), "server.md does not name \(endpoint.subpath)")
        }
        let files = try NSRegularExpression(pattern: "`((?:Endpoints|Routing|Middleware|Authentication|Errors|Connections|Wire)/[A-Za-z]+\\.swift)`")
        let matches = files.matches(in: page, range: NSRange(page.startIndex..., in: page))
        XCTAssertGreaterThan(matches.count, 5)
        for m in matches {
            let path = String(page[Range(m.range(at: 1), in: page)!])
            XCTAssertTrue(
                FileManager.default.fileExists(atPath: root.appendingPathComponent("Sources/ShareFlowServer/" + path).path),
                "server.md names \(path), which is not there"
            )
        }
    }
}

/// A flag one thread sets and another reads, under a lock.
private final class NSLockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Bool
    init(_ value: Bool) { stored = value }
    var value: Bool {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
