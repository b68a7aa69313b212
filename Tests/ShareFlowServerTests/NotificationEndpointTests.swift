import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import XCTest

@testable import ShareFlow
@testable import ShareFlowServer

/// The subscription, device-token and webcourier routes in process (SPEC §20 N1, N3), through
/// the server's own router: the shapes CloudKit JS 1.2.0 and pyicloud send and read, per-item
/// errors, held polls, and who gets what.
final class NotificationEndpointTests: XCTestCase {
    private var engine: Engine!
    private var api = "", alice = "", bob = ""
    private let db = "/database/1/iCloud.test/development"

    override func setUpWithError() throws {
        engine = try Engine(store: Store(path: ":memory:"))
        let accounts = try ServerTestAccounts(engine: engine)
        (api, alice, bob) = (accounts.api, accounts.alice, accounts.bob)
        // Alice's zone, shared with nobody yet.
        let session = try engine.session(for: "alice@example.com").container("iCloud.test")
        try session.privateCloudDatabase.saveZone("Trips")
    }

    private struct Answer {
        let status: Int
        let object: [String: Any]
        let headers: HTTPFields
        var code: String? { object["serverErrorCode"] as? String }
        var subscriptions: [[String: Any]] { object["subscriptions"] as? [[String: Any]] ?? [] }
        var ck: [String: Any]? { object["ck"] as? [String: Any] }
    }

    private func withServer(
        pollSeconds: Double = 1,
        corsOrigins: [String] = [],
        _ body: @escaping @Sendable (Client) async throws -> Void
    ) async throws {
        var server = CloudKitServer(engine: engine, host: "127.0.0.1", port: 0, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        server.pollSeconds = pollSeconds
        server.corsOrigins = corsOrigins
        let app = Application(router: server.router(thread: EngineThread()))
        let (api, db) = (api, db)
        try await app.test(.router) { client in try await body(Client(client: client, api: api, db: db)) }
    }

    private struct Client: Sendable {
        let client: any TestClientProtocol
        let api: String
        let db: String

        func post(_ path: String, as token: String?, _ body: String, query extra: String = "") async throws -> Answer {
            var query = "ckAPIToken=\(api)" + extra
            if let token { query += "&ckWebAuthToken=\(token)" }
            return try await call(.post, path.hasPrefix("/device/") ? path + "?" + query : db + path + "?" + query, body: Data(body.utf8))
        }

        func get(_ uri: String, headers: HTTPFields = [:]) async throws -> Answer { try await call(.get, uri, headers: headers) }

        func call(_ method: HTTPRequest.Method, _ uri: String, body: Data? = nil, headers: HTTPFields = [:]) async throws -> Answer {
            try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(bytes: $0) }) { response in
                let data = Data(buffer: response.body)
                let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
                return Answer(status: Int(response.status.code), object: object, headers: response.headers)
            }
        }

        /// A device token's poll path (CloudKit JS keeps the absolute URL; its path is ours).
        func token(as who: String, query: String = "") async throws -> (apnsToken: String, poll: String) {
            let r = try await post("/device/1/iCloud.test/development/tokens/create", as: who, #"{"apnsEnvironment":"development"}"#, query: query)
            XCTAssertEqual(r.status, 200, "\(r.object)")
            let url = try XCTUnwrap(r.object["webcourierURL"] as? String)
            XCTAssertTrue(url.hasPrefix("http"), "absolute: \(url)")
            let path = try XCTUnwrap(URL(string: url)?.path)
            XCTAssertTrue(path.hasPrefix("/webcourier/1/"), path)
            return (try XCTUnwrap(r.object["apnsToken"] as? String), path)
        }

        func modify(_ ops: [[String: Any]], as who: String, database: String = "private") async throws -> Answer {
            try await post("/\(database)/subscriptions/modify", as: who, NotificationEndpointTests.json(["operations": ops]))
        }
    }

    static func json(_ object: Any) -> String { String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self) }

    private static var trips: [String: Any] { ["zoneName": "Trips"] }

    func testSubscriptionsAreMadeListedLookedUpAndDeletedInCloudKitsShapes() async throws {
        let alice = alice
        try await withServer { c in
            let zone: [String: Any] = [
                "subscriptionID": "trips", "subscriptionType": "zone", "zoneID": Self.trips,
                "notificationInfo": ["alertBody": "Trips changed", "shouldSendContentAvailable": true],
            ]
            let query: [String: Any] = [
                "subscriptionID": "long", "subscriptionType": "query", "zoneID": Self.trips,
                "query": [
                    "recordType": "Trip", "filterBy": [["comparator": "GREATER_THAN", "fieldName": "stops", "fieldValue": ["value": 3]]],
                    "junk": String(repeating: "A", count: 1000),
                ] as [String: Any],
                "firesOn": ["create", "delete"], "notificationInfo": ["additionalFields": ["title"]],
            ]
            let made = try await c.modify(
                [["operationType": "create", "subscription": zone], ["operationType": "create", "subscription": query]],
                as: alice
            )
            XCTAssertEqual(made.status, 200, "\(made.object)")
            XCTAssertEqual(made.subscriptions.map { $0["subscriptionID"] as? String }, ["trips", "long"])
            XCTAssertEqual(made.subscriptions[1]["firesOn"] as? [String], ["create", "delete"])
            XCTAssertEqual((made.subscriptions[1]["query"] as? [String: Any])?["recordType"] as? String, "Trip")
            XCTAssertEqual(
                (made.subscriptions[1]["query"] as? [String: Any]).map { Set($0.keys) },
                ["recordType", "filterBy"],
                "only CloudKit's keys kept"
            )
            XCTAssertEqual((made.subscriptions[0]["zoneID"] as? [String: Any])?["zoneName"] as? String, "Trips")
            // create again: the one saved is answered unchanged (Apple's service); update replaces.
            var changed = zone
            changed["notificationInfo"] = ["alertBody": "other"]
            let again = try await c.modify([["operationType": "create", "subscription": changed]], as: alice)
            XCTAssertEqual((again.subscriptions.first?["notificationInfo"] as? [String: Any])?["alertBody"] as? String, "Trips changed")
            let updated = try await c.modify([["operationType": "update", "subscription": changed]], as: alice)
            XCTAssertEqual((updated.subscriptions.first?["notificationInfo"] as? [String: Any])?["alertBody"] as? String, "other")
            // list as CloudKit JS 1.2.0 sends it: a GET without a body.
            let listed = try await c.call(.get, c.db + "/private/subscriptions/list?ckAPIToken=\(c.api)&ckWebAuthToken=\(alice)")
            XCTAssertEqual(listed.status, 200, "\(listed.object)")
            XCTAssertEqual(Set(listed.subscriptions.compactMap { $0["subscriptionID"] as? String }), ["trips", "long"])
            let posted = try await c.post("/private/subscriptions/list", as: alice, "{}")
            XCTAssertEqual(posted.subscriptions.count, 2)
            let looked = try await c.post(
                "/private/subscriptions/lookup",
                as: alice,
                #"{"subscriptions":[{"subscriptionID":"long"},{"subscriptionID":"nope"}]}"#
            )
            XCTAssertEqual(looked.subscriptions.first?["subscriptionID"] as? String, "long")
            XCTAssertEqual(looked.subscriptions.last?["serverErrorCode"] as? String, "NOT_FOUND")
            let deleted = try await c.modify([["operationType": "delete", "subscription": ["subscriptionID": "long"]]], as: alice)
            XCTAssertEqual(deleted.subscriptions.first?["deleted"] as? Bool, true)
            let gone = try await c.modify([["operationType": "delete", "subscription": ["subscriptionID": "long"]]], as: alice)
            XCTAssertEqual(gone.subscriptions.first?["serverErrorCode"] as? String, "NOT_FOUND")
            // Per item: a zone that is not there, a bad type; a bad request names its key.
            let bad = try await c.modify(
                [
                    ["operationType": "create", "subscription": ["subscriptionType": "zone", "zoneID": ["zoneName": "Nope"]]],
                    ["operationType": "create", "subscription": ["subscriptionType": "zone", "zoneID": Self.trips, "subscriptionID": "ok"]],
                ],
                as: alice
            )
            XCTAssertEqual(bad.subscriptions.first?["serverErrorCode"] as? String, "ZONE_NOT_FOUND")
            XCTAssertEqual(bad.subscriptions.last?["subscriptionID"] as? String, "ok")
            let malformed = try await c.modify([["operationType": "create", "subscription": ["subscriptionType": "galaxy"]]], as: alice)
            XCTAssertEqual(malformed.status, 400)
            XCTAssertTrue("\(malformed.object)".contains("subscriptionType"), "\(malformed.object)")
            // Without a user: 421, as every write.
            let anonymous = try await c.post("/private/subscriptions/list", as: nil, "{}")
            XCTAssertEqual(anonymous.status, 421)
        }
    }

    func testATokenNeedsAUserAndAnotherUsersTokenIsNotOneToRegister() async throws {
        let (alice, bob) = (alice, bob)
        try await withServer { c in
            let none = try await c.post("/device/1/iCloud.test/development/tokens/create", as: nil, #"{"apnsEnvironment":"development"}"#)
            XCTAssertEqual(none.status, 421)
            XCTAssertEqual(none.code, "AUTHENTICATION_REQUIRED")
            let bad = try await c.post("/device/1/iCloud.test/development/tokens/create", as: alice, #"{"apnsEnvironment":"moon"}"#)
            XCTAssertEqual(bad.status, 400)
            let (token, _) = try await c.token(as: alice)
            XCTAssertNotNil(Data(base64Encoded: token), "apnsToken is base64")
            let mine = try await c.post(
                "/device/1/iCloud.test/development/tokens/register",
                as: alice,
                Self.json(["apnsEnvironment": "production", "apnsToken": token])
            )
            XCTAssertEqual(mine.status, 200, "\(mine.object)")
            let theirs = try await c.post(
                "/device/1/iCloud.test/development/tokens/register",
                as: bob,
                Self.json(["apnsEnvironment": "production", "apnsToken": token])
            )
            let unknown = try await c.post(
                "/device/1/iCloud.test/development/tokens/register",
                as: bob,
                Self.json(["apnsEnvironment": "production", "apnsToken": "AAAA"])
            )
            XCTAssertEqual(theirs.status, unknown.status)
            XCTAssertEqual(theirs.code, unknown.code)
            XCTAssertEqual(theirs.object["reason"] as? String, unknown.object["reason"] as? String)
        }
    }

    func testAnIdlePollIsHeldThenAnsweredEmptyAndAForgedOneIsNeverFast() async throws {
        let alice = alice
        try await withServer(pollSeconds: 1) { c in
            let (_, poll) = try await c.token(as: alice)
            let start = ContinuousClock.now
            let idle = try await c.get(poll)
            XCTAssertEqual(idle.status, 200)
            XCTAssertEqual(idle.ck?.isEmpty, true, "\(idle.object)")
            XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .milliseconds(900))
            let forgedStart = ContinuousClock.now
            let forged = try await c.get("/webcourier/1/" + String(repeating: "A", count: 43))
            XCTAssertEqual(forged.status, 404)
            XCTAssertGreaterThanOrEqual(ContinuousClock.now - forgedStart, .milliseconds(900))
        }
    }

    func testANotificationDueIsAnsweredAtOnceInCloudKitsPushShape() async throws {
        let (alice, engine) = (alice, engine!)
        try await withServer(pollSeconds: 30) { c in
            _ = try await c.modify(
                [
                    [
                        "operationType": "create",
                        "subscription": [
                            "subscriptionID": "trips", "subscriptionType": "zone", "zoneID": Self.trips,
                            "notificationInfo": ["alertBody": "changed", "shouldBadge": true, "soundName": "ding"],
                        ] as [String: Any],
                    ],
                    [
                        "operationType": "create",
                        "subscription": [
                            "subscriptionID": "q", "subscriptionType": "query", "zoneID": Self.trips, "query": ["recordType": "Trip"],
                            "firesOn": ["create", "update", "delete"], "notificationInfo": ["additionalFields": ["title", "stops"]],
                        ] as [String: Any],
                    ],
                ],
                as: alice
            )
            let (_, poll) = try await c.token(as: alice)
            // A poll held before the write is answered by it (not by its timeout: 30 s).
            async let held = c.get(poll)
            try await Task.sleep(for: .milliseconds(100))
            let db = try engine.session(for: "alice@example.com").container("iCloud.test").privateCloudDatabase
            let trip = Record(
                recordType: "Trip",
                recordID: RecordID(recordName: "road", zoneID: try db.zoneID("Trips")),
                fields: ["title": .string("Road"), "stops": .integer(4)]
            )
            XCTAssertNil(try db.modifyRecords(saving: [trip]).error)
            let first = try await held
            let second = try await c.get(poll)
            let both = [first, second]
            let fet = try XCTUnwrap(both.compactMap { $0.ck?["fet"] as? [String: Any] }.first, "\(both.map(\.object))")
            let qry = try XCTUnwrap(both.compactMap { $0.ck?["qry"] as? [String: Any] }.first, "\(both.map(\.object))")
            XCTAssertEqual(fet["sid"] as? String, "trips")
            XCTAssertEqual(fet["zid"] as? String, "Trips")
            XCTAssertNotNil(fet["zoid"] as? String)
            XCTAssertEqual(qry["sid"] as? String, "q")
            XCTAssertEqual(qry["rid"] as? String, "road")
            XCTAssertEqual(qry["fo"] as? Int, 1)
            XCTAssertEqual(qry["dbs"] as? Int, 1)
            let af = try XCTUnwrap(qry["af"] as? [String: Any])
            XCTAssertEqual(af["title"] as? String, "Road")
            XCTAssertEqual(af["stops"] as? Int, 4)
            let withAlert = try XCTUnwrap(both.first { $0.ck?["fet"] != nil })
            let aps = try XCTUnwrap(withAlert.object["aps"] as? [String: Any])
            XCTAssertEqual((aps["alert"] as? [String: Any])?["body"] as? String, "changed")
            XCTAssertEqual(aps["badge"] as? Int, 1)
            XCTAssertEqual(aps["sound"] as? String, "ding")
            XCTAssertEqual(both.compactMap { $0.ck?["cid"] as? String }, ["iCloud.test", "iCloud.test"])
            XCTAssertEqual(Set(both.compactMap { $0.ck?["nid"] as? String }).count, 2)
            XCTAssertEqual(withAlert.headers[.cacheControl], "no-store")
        }
    }

    func testAStrangersSubscriptionOnTheZoneIsZoneNotFoundAndHearsNothing() async throws {
        let (alice, bob, engine) = (alice, bob, engine!)
        try await withServer(pollSeconds: 1) { c in
            let owner = ["zoneName": "Trips", "ownerRecordName": try engine.session(for: "alice@example.com").account.userRecordID]
            let probe = try await c.modify(
                [["operationType": "create", "subscription": ["subscriptionID": "peek", "subscriptionType": "zone", "zoneID": owner]]],
                as: bob,
                database: "shared"
            )
            XCTAssertEqual(probe.subscriptions.first?["serverErrorCode"] as? String, "ZONE_NOT_FOUND")
            _ = try await c.modify(
                [["operationType": "create", "subscription": ["subscriptionID": "all", "subscriptionType": "database"]]],
                as: bob,
                database: "shared"
            )
            let (_, poll) = try await c.token(as: bob)
            _ = try await c.modify(
                [["operationType": "create", "subscription": ["subscriptionID": "t", "subscriptionType": "zone", "zoneID": Self.trips]]],
                as: alice
            )
            let db = try engine.session(for: "alice@example.com").container("iCloud.test").privateCloudDatabase
            XCTAssertNil(
                try db.modifyRecords(saving: [Record(recordType: "Trip", recordID: RecordID(recordName: "x", zoneID: try db.zoneID("Trips")))]).error
            )
            let heard = try await c.get(poll)
            XCTAssertEqual(heard.ck?.isEmpty, true, "\(heard.object)")
        }
    }

    func testTheNotificationRoutesAnswerAcrossOrigins() async throws {
        let alice = alice
        try await withServer(pollSeconds: 1, corsOrigins: ["https://app.example"]) { c in
            let preflight = try await c.call(
                .options,
                "/device/1/iCloud.test/development/tokens/create",
                headers: [.origin: "https://app.example", .accessControlRequestMethod: "POST"]
            )
            XCTAssertEqual(preflight.headers[.accessControlAllowOrigin], "https://app.example")
            let r = try await c.client.execute(
                uri: "/device/1/iCloud.test/development/tokens/create?ckAPIToken=\(c.api)&ckWebAuthToken=\(alice)",
                method: .post,
                headers: [.origin: "https://app.example", .contentType: "text/plain"],
                body: ByteBuffer(string: #"{"apnsEnvironment":"production"}"#)
            ) { $0 }
            XCTAssertEqual(r.headers[.accessControlAllowOrigin], "https://app.example")
            let url = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(buffer: r.body)) as? [String: Any])?["webcourierURL"] as? String)
            let poll = try await c.get(URL(string: url)!.path, headers: [.origin: "https://app.example"])
            XCTAssertEqual(poll.headers[.accessControlAllowOrigin], "https://app.example")
        }
    }

    /// Polls of URLs that lead nowhere are never answered at once, but only a few from one
    /// address are held a whole period: the rest are 404 after a second, their connection
    /// closed, so such URLs cannot hold the node's connections.
    func testUnknownPollsAreHeldAFewAtATime() async throws {
        try await withServer(pollSeconds: 3) { c in
            let took = try await withThrowingTaskGroup(of: (Int, Duration, String?).self) { group in
                for n in 0..<6 {
                    group.addTask {
                        let start = ContinuousClock.now
                        let r = try await c.client.execute(uri: "/webcourier/1/guess\(n)", method: .get) { ($0.status.code, $0.headers[.connection]) }
                        return (r.0, ContinuousClock.now - start, r.1)
                    }
                }
                var all: [(Int, Duration, String?)] = []
                for try await one in group { all.append(one) }
                return all
            }
            XCTAssertEqual(took.map(\.0), Array(repeating: 404, count: 6))
            XCTAssertEqual(took.filter { $0.1 >= .milliseconds(2500) }.count, NotificationWaiters.unknownPerAddress)
            XCTAssertTrue(took.allSatisfy { $0.1 >= .milliseconds(900) }, "never at once: \(took)")
            XCTAssertTrue(took.allSatisfy { $0.2 == "close" })
        }
    }
}
