import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import ShareFlowTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowServer

/// The requests CloudKit JS 1.2.0 sends for a web app's whole flow, replayed as the library
/// sends them: its own query parameters (`ckjsBuildVersion`, `ckjsVersion`), the web auth token
/// before the API token, `text/plain` bodies in the library's key order, GETs without a body
/// (SPEC §13 wave 4). The shapes were recorded by running the library (which may not be
/// committed: its licence) against this server; each answer is checked for what the library
/// reads from it.
final class CloudKitJSReplayTests: XCTestCase {
    private var engine: Engine!
    private var api = "", alice = "", bob = ""

    override func setUpWithError() throws {
        engine = try Engine(store: Store(path: ":memory:"))
        let accounts = try ServerTestAccounts(engine: engine)
        (api, alice, bob) = (accounts.api, accounts.alice, accounts.bob)
        // Bob is found by his address, as a user who turned discovery on.
        try engine.accounts.setDiscoverability(.granted, of: try XCTUnwrap(engine.accounts.find("bob@example.com")))
    }

    private struct Answer {
        let status: Int
        let object: [String: Any]
        let headers: HTTPFields
        var records: [[String: Any]] { object["records"] as? [[String: Any]] ?? [] }
    }

    /// Sends what the library sends for `route` of `database` as the user of `token` (the text
    /// `null` before sign-in): a GET when there is no payload, else a `text/plain` POST.
    private struct Library: Sendable {
        let client: any TestClientProtocol
        let api: String

        func send(_ database: String, _ route: String, token: String, _ payload: String? = nil, origin: String? = nil) async throws -> Answer {
            let uri =
                "/database/1/iCloud.test/development/\(database)/\(route)?ckjsBuildVersion=16CProjectDev42&ckjsVersion=1.2.0"
                + "&ckWebAuthToken=\(token)&ckAPIToken=\(api)"
            var headers: HTTPFields = [.contentType: "text/plain"]
            if let origin { headers[.origin] = origin }
            return try await client.execute(
                uri: uri,
                method: payload == nil ? .get : .post,
                headers: headers,
                body: payload.map { ByteBuffer(string: $0) }
            ) {
                let object = (try? JSONSerialization.jsonObject(with: Data(buffer: $0.body))) as? [String: Any] ?? [:]
                return Answer(status: Int($0.status.code), object: object, headers: $0.headers)
            }
        }
    }

    private func withLibrary(_ body: @escaping @Sendable (Library) async throws -> Void) async throws {
        var server = CloudKitServer(engine: engine, host: "127.0.0.1", port: 0, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        server.corsOrigins = ["http://localhost:3000"]
        let app = Application(router: server.router(thread: EngineThread()))
        let api = api
        try await app.test(.router) { client in try await body(Library(client: client, api: api)) }
    }

    /// `container.registerForNotifications()` and a subscription's life as the library sends
    /// them (SPEC §20 N3, N5): `tokens/create` as a `text/plain` POST with the library's own
    /// parameters, then a GET of the absolute `webcourierURL` it was given with nothing added;
    /// `subscriptions/modify` create, `subscriptions/list` as a GET without a body, `lookup`,
    /// delete sending only the ID. Each answer is checked for what the library reads.
    func testRegisterForNotificationsAndSubscriptionsAsCloudKitJSSendsThem() async throws {
        let alice = alice
        engine.options.publicURL = "https://cloud.example.com"
        try engine.session(for: "alice@example.com").container("iCloud.test").privateCloudDatabase.saveZone("Z1")
        try await withLibrary { ck in
            let device =
                "/device/1/iCloud.test/development/tokens/create?ckjsBuildVersion=16CProjectDev42&ckjsVersion=1.2.0"
                + "&ckWebAuthToken=\(alice)&ckAPIToken=\(ck.api)"
            let made = try await ck.client.execute(
                uri: device,
                method: .post,
                headers: [.contentType: "text/plain", .origin: "http://localhost:3000"],
                body: ByteBuffer(string: #"{"apnsEnvironment":"development"}"#)
            ) { ($0.status.code, (try? JSONSerialization.jsonObject(with: Data(buffer: $0.body))) as? [String: Any] ?? [:], $0.headers) }
            XCTAssertEqual(made.0, 200, "\(made.1)")
            XCTAssertEqual(made.2[.accessControlAllowOrigin], "http://localhost:3000")
            XCTAssertEqual(made.1["apnsEnvironment"] as? String, "development")
            let url = try XCTUnwrap(made.1["webcourierURL"] as? String)
            XCTAssertTrue(url.hasPrefix("https://cloud.example.com/webcourier/1/"), url)
            // The library saves a subscription: create, with its keys in its order.
            var r = try await ck.send(
                "private",
                "subscriptions/modify",
                token: alice,
                #"{"operations":[{"operationType":"create","subscription":{"subscriptionType":"query","query":{"recordType":"Note","filterBy":[{"fieldName":"n","comparator":"GREATER_THAN","fieldValue":{"value":1}}]},"zoneID":{"zoneName":"Z1"},"firesOn":["create","update","delete"],"notificationInfo":{"alertBody":"A note","additionalFields":["n","title"],"shouldSendContentAvailable":true},"subscriptionID":"notes"}}]}"#
            )
            XCTAssertEqual((r.object["subscriptions"] as? [[String: Any]])?.first?["subscriptionID"] as? String, "notes", "\(r.object)")
            r = try await ck.send(
                "private",
                "subscriptions/modify",
                token: alice,
                #"{"operations":[{"operationType":"create","subscription":{"subscriptionType":"zone","zoneID":{"zoneName":"Z1"},"subscriptionID":"z1"}}]}"#
            )
            XCTAssertEqual(r.status, 200, "\(r.object)")
            r = try await ck.send("private", "subscriptions/list", token: alice)
            XCTAssertEqual((r.object["subscriptions"] as? [[String: Any]])?.count, 2, "\(r.object)")
            r = try await ck.send("private", "subscriptions/lookup", token: alice, #"{"subscriptions":[{"subscriptionID":"notes"}]}"#)
            XCTAssertEqual(((r.object["subscriptions"] as? [[String: Any]])?.first?["query"] as? [String: Any])?["recordType"] as? String, "Note")
            // A record saved: the poll (the URL as given, nothing added) hands out both, one each.
            r = try await ck.send(
                "private",
                "records/modify",
                token: alice,
                #"{"operations":[{"operationType":"create","record":{"recordType":"Note","recordName":"n1","fields":{"n":{"value":3},"title":{"value":"hi"}}}}],"zoneID":{"zoneName":"Z1"}}"#
            )
            XCTAssertEqual(r.status, 200, "\(r.object)")
            var ck1: [[String: Any]] = []
            for _ in 0..<2 {
                let got = try await ck.client.execute(uri: String(url.dropFirst("https://cloud.example.com".count)), method: .get) {
                    (try? JSONSerialization.jsonObject(with: Data(buffer: $0.body))) as? [String: Any] ?? [:]
                }
                ck1.append(try XCTUnwrap(got["ck"] as? [String: Any], "\(got)"))
                XCTAssertNotNil(got["aps"], "\(got)")
            }
            // What the library reads: ck.qry.fo, ck.qry.af, ck.qry.rid; ck.fet.zid.
            let qry = try XCTUnwrap(ck1.compactMap { $0["qry"] as? [String: Any] }.first)
            XCTAssertEqual(qry["fo"] as? Int, 1)
            XCTAssertEqual(qry["rid"] as? String, "n1")
            XCTAssertEqual((qry["af"] as? [String: Any])?["title"] as? String, "hi")
            XCTAssertEqual(ck1.compactMap { ($0["fet"] as? [String: Any])?["zid"] as? String }, ["Z1"])
            // Deleted as the library deletes: the ID alone.
            r = try await ck.send(
                "private",
                "subscriptions/modify",
                token: alice,
                #"{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"notes"}}]}"#
            )
            XCTAssertEqual((r.object["subscriptions"] as? [[String: Any]])?.first?["deleted"] as? Bool, true, "\(r.object)")
        }
    }

    func testAWebAppsWholeFlowAsCloudKitJSSendsIt() async throws {
        let (alice, bob) = (alice, bob)
        engine.options.publicURL = "https://cloud.example.com"
        try await withLibrary { ck in
            // setUpAuth before sign-in: users/current with the text `null` → 421 and the
            // sign-in page, which the library opens in a popup. A visitor's public read works.
            var r = try await ck.send("public", "users/current", token: "null", origin: "http://localhost:3000")
            XCTAssertEqual(r.status, 421)
            XCTAssertEqual(r.object["redirectURL"] as? String, "https://cloud.example.com/signin")
            XCTAssertEqual(r.headers[.accessControlAllowOrigin], "http://localhost:3000", "the page reads the 421")
            r = try await ck.send("public", "records/query", token: "null", #"{"query":{"recordType":"Note"}}"#)
            XCTAssertEqual(r.status, 200)
            // Signed in.
            r = try await ck.send("public", "users/current", token: alice)
            XCTAssertEqual(r.object["firstName"] as? String, "Alice")
            r = try await ck.send("public", "users/lookup/contacts", token: alice)
            XCTAssertEqual(r.status, 200, "\(r.object)")
            XCTAssertNotNil(r.object["users"] as? [Any])
            r = try await ck.send("public", "users/lookup/email", token: alice, #"{"users":[{"emailAddress":"bob@example.com"}]}"#)
            XCTAssertEqual((r.object["users"] as? [[String: Any]])?.first?["firstName"] as? String, "Bob")
            r = try await ck.send(
                "private",
                "zones/modify",
                token: alice,
                #"{"operations":[{"zone":{"zoneID":{"zoneName":"Z1"}},"operationType":"create"},{"zone":{"zoneID":{"zoneName":"Z2"}},"operationType":"create"}]}"#
            )
            XCTAssertEqual((r.object["zones"] as? [Any])?.count, 2, "\(r.object)")
            r = try await ck.send("private", "zones/list", token: alice)
            XCTAssertEqual((r.object["zones"] as? [Any])?.count, 3, "the default zone and two")
            r = try await ck.send("private", "zones/lookup", token: alice, #"{"zones":[{"zoneName":"Z1"}]}"#)
            XCTAssertEqual(r.status, 200)
            r = try await ck.send(
                "private",
                "records/modify",
                token: alice,
                #"{"operations":[{"operationType":"create","record":{"recordType":"Note","recordName":"n1","fields":{"title":{"value":"hi"},"n":{"value":3},"loc":{"value":{"latitude":1.5,"longitude":2.5,"horizontalAccuracy":5,"verticalAccuracy":6,"altitude":7,"speed":8,"course":9,"timestamp":1700000000000}},"tags":{"value":["a","b"]}}}},{"operationType":"create","record":{"recordType":"Note","recordName":"n2","fields":{"title":{"value":"ho"},"n":{"value":4}}}}],"zoneID":{"zoneName":"Z1"}}"#
            )
            XCTAssertEqual(r.records.count, 2, "\(r.object)")
            let loc = ((r.records.first?["fields"] as? [String: Any])?["loc"] as? [String: Any])?["value"] as? [String: Any]
            XCTAssertEqual(loc?.count, 8, "\(String(describing: loc))")
            r = try await ck.send(
                "private",
                "records/modify",
                token: alice,
                #"{"operations":[{"operationType":"create","record":{"recordType":"Note","recordName":"m1","fields":{"title":{"value":"in z2"},"n":{"value":5}}}}],"zoneID":{"zoneName":"Z2"}}"#
            )
            XCTAssertEqual(r.records.count, 1)
            r = try await ck.send("private", "records/lookup", token: alice, #"{"records":[{"recordName":"n1"}],"zoneID":{"zoneName":"Z1"}}"#)
            XCTAssertEqual(r.records.first?["recordName"] as? String, "n1")
            for (filter, expected) in [
                (#"{"fieldName":"n","comparator":"NOT_IN","fieldValue":{"value":[3]}}"#, ["n2"]),
                (#"{"fieldName":"title","comparator":"CONTAINS_ANY_TOKENS","fieldValue":{"value":"hi there"}}"#, ["n1"]),
                (#"{"fieldName":"loc","comparator":"NEAR","fieldValue":{"value":{"latitude":1.5,"longitude":2.5}},"distance":1000}"#, ["n1"]),
            ] {
                r = try await ck.send(
                    "private",
                    "records/query",
                    token: alice,
                    #"{"query":{"recordType":"Note","filterBy":["# + filter + #"]},"zoneID":{"zoneName":"Z1"}}"#
                )
                XCTAssertEqual(r.records.compactMap { $0["recordName"] as? String }, expected, filter)
            }
            r = try await ck.send("private", "records/query", token: alice, #"{"query":{"recordType":"Note"},"zoneWide":true}"#)
            XCTAssertEqual(r.records.compactMap { $0["recordName"] as? String }, ["n1", "n2", "m1"])
            r = try await ck.send(
                "private",
                "records/modify",
                token: alice,
                #"{"operations":[{"operationType":"create","record":{"recordType":"cloudkit.share","recordName":"sh1","forRecord":{"recordName":"n1"},"publicPermission":"NONE","participants":[{"type":"ADMINISTRATOR","permission":"READ_WRITE","userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}}],"zoneID":{"zoneName":"Z1"}}"#
            )
            XCTAssertEqual(r.records.first?["recordName"] as? String, "sh1", "\(r.object)")
            r = try await ck.send(
                "private",
                "records/modify",
                token: alice,
                #"{"operations":[{"operationType":"create","record":{"recordType":"cloudkit.share","recordName":"cloudkit.zoneshare","publicPermission":"READ_ONLY"}}],"zoneID":{"zoneName":"Z2"}}"#
            )
            let zoneShare = try XCTUnwrap(r.records.first?["shortGUID"] as? String, "\(r.object)")
            r = try await ck.send("public", "records/accept", token: bob, #"{"shortGUIDs":[{"value":"\#(zoneShare)"}]}"#)
            XCTAssertEqual((r.object["results"] as? [[String: Any]])?.first?["participantStatus"] as? String, "ACCEPTED", "\(r.object)")
            r = try await ck.send("shared", "records/query", token: bob, #"{"query":{"recordType":"Note"},"zoneWide":true}"#)
            XCTAssertEqual(r.records.compactMap { $0["recordName"] as? String }, ["m1"], "Bob reads the zone shared with him")
            r = try await ck.send("private", "records/changes", token: alice, #"{"zoneID":{"zoneName":"Z1"}}"#)
            XCTAssertNotNil(r.object["syncToken"] as? String, "\(r.object)")
            r = try await ck.send(
                "private",
                "zones/modify",
                token: alice,
                #"{"operations":[{"zone":{"zoneID":{"zoneName":"Z2"}},"operationType":"delete"}]}"#
            )
            XCTAssertEqual(((r.object["zones"] as? [[String: Any]])?.first)?["deleted"] as? Bool, true, "\(r.object)")
        }
    }
}
