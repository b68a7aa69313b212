import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import XCTest

@testable import ShareFlow
@testable import ShareFlowServer

/// The asset routes in process (SPEC §19 A3, A5), through the server's own router: the wire
/// shapes each client sends (typed, untyped, lists), what is refused and how, the limits, and
/// CORS on the upload and download URLs.
final class AssetEndpointTests: XCTestCase {
    private var engine: Engine!
    private var api = "", alice = "", bob = ""
    private let db = "/database/1/iCloud.test/development"

    override func setUpWithError() throws {
        engine = try Engine(store: Store(path: ":memory:"))
        let accounts = try ServerTestAccounts(engine: engine)
        (api, alice, bob) = (accounts.api, accounts.alice, accounts.bob)
    }

    private struct Answer {
        let status: Int
        let object: [String: Any]
        let headers: HTTPFields
        let body: Data
        var code: String? { object["serverErrorCode"] as? String }
        var reason: String { object["reason"] as? String ?? "" }
        var records: [[String: Any]] { object["records"] as? [[String: Any]] ?? [] }
    }

    private func withServer(corsOrigins: [String] = [], _ body: @escaping @Sendable (Client) async throws -> Void) async throws {
        var server = CloudKitServer(engine: engine, host: "127.0.0.1", port: 0, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        server.corsOrigins = corsOrigins
        let app = Application(router: server.router(thread: EngineThread()))
        let (api, db) = (api, db)
        try await app.test(.router) { client in try await body(Client(client: client, api: api, db: db)) }
    }

    private struct Client: Sendable {
        let client: any TestClientProtocol
        let api: String
        let db: String

        func post(_ path: String, as token: String?, _ body: String) async throws -> Answer {
            var query = "ckAPIToken=\(api)"
            if let token { query += "&ckWebAuthToken=\(token)" }
            return try await call(.post, db + path + "?" + query, body: Data(body.utf8))
        }

        func call(_ method: HTTPRequest.Method, _ uri: String, body: Data? = nil, headers: HTTPFields = [:]) async throws -> Answer {
            try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(bytes: $0) }) { response in
                let data = Data(buffer: response.body)
                let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
                return Answer(status: Int(response.status.code), object: object, headers: response.headers, body: data)
            }
        }

        /// An upload's `singleFile` for `bytes`, for field `field` (and record `record`).
        func upload(_ bytes: Data, field: String, record: String? = nil, as token: String) async throws -> (recordName: String, single: [String: Any])
        {
            let name = record.map { #","recordName":"\#($0)""# } ?? ""
            let r = try await post("/private/assets/upload", as: token, #"{"tokens":[{"fieldName":"\#(field)"\#(name)}]}"#)
            XCTAssertEqual(r.status, 200, "\(r.object)")
            let token = try XCTUnwrap((r.object["tokens"] as? [[String: Any]])?.first)
            let url = try XCTUnwrap(token["url"] as? String)
            let path = String(url.dropFirst("https://shareflow.invalid".count))
            let up = try await call(.post, path, body: bytes, headers: [.contentType: "image/png"])
            XCTAssertEqual(up.status, 200, "\(up.object)")
            return (try XCTUnwrap(token["recordName"] as? String), try XCTUnwrap(up.object["singleFile"] as? [String: Any]))
        }
    }

    private static func json(_ object: Any) -> String { String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self) }

    func testTheShapesClientsSendAreReadAndTheOthersRefused() async throws {
        let alice = alice
        try await withServer { c in
            // Untyped (CloudKit JS, MistKit), typed (pyicloud), and a list.
            let one = try await c.upload(Data([0, 1, 2, 255]), field: "a", as: alice)
            let two = try await c.upload(Data("two".utf8), field: "b", record: "r1", as: alice)
            let three = try await c.upload(Data("three".utf8), field: "b", record: "r1", as: alice)
            XCTAssertFalse(one.recordName.isEmpty, "a recordName is made when none was sent")
            XCTAssertEqual(two.recordName, "r1")
            let fields: [String: Any] = [
                "a": ["value": one.single],
                "b": ["value": [two.single, three.single], "type": "ASSETID_LIST"],
            ]
            var r = try await c.post(
                "/private/records/modify",
                as: alice,
                Self.json(["operations": [["operationType": "create", "record": ["recordName": "r1", "recordType": "T", "fields": fields]]]])
            )
            XCTAssertEqual(r.status, 200, "\(r.object)")
            XCTAssertNil(r.records.first?["serverErrorCode"], "\(r.records)")
            let saved = try XCTUnwrap(r.records.first?["fields"] as? [String: Any])
            XCTAssertEqual((saved["a"] as? [String: Any])?["type"] as? String, "ASSETID")
            let list = try XCTUnwrap((saved["b"] as? [String: Any])?["value"] as? [[String: Any]])
            XCTAssertEqual(list.count, 2)
            XCTAssertEqual((saved["b"] as? [String: Any])?["type"] as? String, "ASSETID_LIST")
            // The read gives exactly the three keys Apple's does.
            XCTAssertEqual(
                Set(((saved["a"] as? [String: Any])?["value"] as? [String: Any])?.keys.map { $0 } ?? []),
                ["fileChecksum", "size", "downloadURL"]
            )
            for url in list.compactMap({ $0["downloadURL"] as? String }) + [
                ((saved["a"] as? [String: Any])?["value"] as? [String: Any])?["downloadURL"] as? String ?? ""
            ] {
                let path = String(url.dropFirst("https://shareflow.invalid".count))
                let got = try await c.call(.get, path)
                XCTAssertEqual(got.status, 200, url)
            }
            // Refused, each naming the field: bytes inline, an asset that is also a reference, a key no asset has.
            for (value, said) in [
                (#"{"value":{"downloadedData":"AAEC"},"type":"ASSETID"}"#, "upload them with assets/upload"),
                (#"{"value":{"receipt":"x","recordName":"y"}}"#, "both an asset and a reference"),
                (#"{"value":{"receipt":"x","color":"red"},"type":"ASSETID"}"#, "key 'color'"),
                (#"{"value":{"size":3},"type":"ASSETID"}"#, "needs an upload's receipt"),
                (#"{"value":{"receipt":"not one of ours"},"type":"ASSETID"}"#, "receipt this account was not given"),
            ] {
                r = try await c.post(
                    "/private/records/modify",
                    as: alice,
                    #"{"operations":[{"operationType":"create","record":{"recordName":"bad","recordType":"T","fields":{"f":\#(value)}}}]}"#
                )
                let text = r.reason + ((r.records.first?["reason"] as? String) ?? "")
                XCTAssertTrue(text.contains(said) && text.contains("f"), "\(value): \(r.status) \(r.object)")
            }
        }
    }

    func testLimitsAndURLsThatLeadNowhere() async throws {
        engine.options.assetMaxBytes = 1000
        let (alice, bob) = (alice, bob)
        try await withServer { c in
            var r = try await c.post("/private/assets/upload", as: alice, #"{"tokens":[{"fieldName":"a"}]}"#)
            let url = try XCTUnwrap(((r.object["tokens"] as? [[String: Any]])?.first?["url"] as? String))
            let path = String(url.dropFirst("https://shareflow.invalid".count))
            // Over the limit: 413, the URL still good.
            r = try await c.call(.post, path, body: Data(count: 1001))
            XCTAssertEqual(r.status, 413)
            XCTAssertEqual(r.code, "QUOTA_EXCEEDED")
            r = try await c.call(.post, path, body: Data(count: 1000))
            XCTAssertEqual(r.status, 200, "\(r.object)")
            // Used once.
            r = try await c.call(.post, path, body: Data(count: 10))
            XCTAssertEqual(r.status, 404)
            r = try await c.call(.post, "/assets/1/upload/never-made", body: Data(count: 10))
            XCTAssertEqual(r.status, 404)
            r = try await c.call(.get, "/assets/1/download/AAAA/x")
            XCTAssertEqual(r.status, 404)
            XCTAssertFalse(String(decoding: r.body, as: UTF8.self).contains("/"), "a 404 names nothing of the store")
            // 201 tokens: limitExceeded before any is reserved; no user: 421.
            let many = Self.json(["tokens": (0..<201).map { _ in ["fieldName": "a"] }])
            r = try await c.post("/private/assets/upload", as: alice, many)
            XCTAssertEqual(r.status, 400)
            r = try await c.post("/private/assets/upload", as: nil, #"{"tokens":[{"fieldName":"a"}]}"#)
            XCTAssertEqual(r.status, 421)
            r = try await c.post("/private/assets/upload", as: bob, #"{"tokens":[{"fieldName":"not a key"}]}"#)
            XCTAssertEqual(r.status, 400)
        }
    }

    func testRereferenceGivesAReceiptForWhatTheCallerReads() async throws {
        let (alice, bob) = (alice, bob)
        try await withServer { c in
            let one = try await c.upload(Data("shared".utf8), field: "a", record: "src", as: alice)
            var r = try await c.post(
                "/private/records/modify",
                as: alice,
                Self.json([
                    "operations": [
                        [
                            "operationType": "create",
                            "record": ["recordName": "src", "recordType": "T", "fields": ["a": ["value": one.single, "type": "ASSETID"]]],
                        ]
                    ]
                ])
            )
            XCTAssertEqual(r.status, 200)
            r = try await c.post(
                "/private/assets/rereference",
                as: alice,
                #"{"assets":[{"recordName":"src","fieldName":"a"},{"recordName":"nope","fieldName":"a"}]}"#
            )
            let items = try XCTUnwrap(r.object["assets"] as? [[String: Any]], "\(r.object)")
            let value = try XCTUnwrap(items[0]["value"] as? [String: Any])
            XCTAssertNotNil(value["receipt"])
            XCTAssertEqual(items[1]["serverErrorCode"] as? String, "NOT_FOUND")
            // Bob cannot rereference Alice's record, nor save her receipt.
            r = try await c.post("/private/assets/rereference", as: bob, #"{"assets":[{"recordName":"src","fieldName":"a"}]}"#)
            XCTAssertNotNil((r.object["assets"] as? [[String: Any]])?.first?["serverErrorCode"])
            let save = Self.json([
                "operations": [["operationType": "create", "record": ["recordName": "copy", "recordType": "T", "fields": ["c": ["value": value]]]]]
            ])
            r = try await c.post("/private/records/modify", as: bob, save)
            XCTAssertNotNil(r.records.first?["serverErrorCode"], "\(r.object)")
            // Alice saves it in another record and field (a rereferenced receipt names no field).
            r = try await c.post("/private/records/modify", as: alice, save)
            XCTAssertNil(r.records.first?["serverErrorCode"], "\(r.object)")
        }
    }

    func testCORSOnTheUploadAndDownloadURLs() async throws {
        let alice = alice
        try await withServer(corsOrigins: ["https://app.example.com"]) { c in
            let one = try await c.upload(Data("x".utf8), field: "a", as: alice)
            _ = one
            var r = try await c.call(
                .options,
                "/assets/1/upload/anything",
                headers: [.origin: "https://app.example.com", .accessControlRequestMethod: "POST", .accessControlRequestHeaders: "content-type"]
            )
            XCTAssertEqual(r.status, 204)
            XCTAssertEqual(r.headers[.accessControlAllowOrigin], "https://app.example.com")
            XCTAssertTrue(r.headers[.accessControlAllowHeaders]?.contains("content-type") ?? false)
            r = try await c.call(
                .options,
                "/assets/1/download/t/x",
                headers: [.origin: "https://app.example.com", .accessControlRequestMethod: "GET", .accessControlRequestHeaders: "range"]
            )
            XCTAssertTrue(r.headers[.accessControlAllowHeaders]?.contains("range") ?? false)
            r = try await c.call(.get, "/assets/1/download/t/x", headers: [.origin: "https://evil.example.com"])
            XCTAssertNil(r.headers[.accessControlAllowOrigin], "an origin not listed is named nowhere")
            r = try await c.post("/private/assets/upload", as: alice, #"{"tokens":[{"fieldName":"a"}]}"#)
            XCTAssertEqual(r.status, 200)
        }
    }

    func testWhatOneAccountMayMakeTheStoreKeepIsBounded() async throws {
        engine.options.assetMaxPendingBytes = 100
        let (alice, engine) = (alice, engine!)
        try await withServer { c in
            _ = try await c.upload(Data(count: 60), field: "a", as: alice)
            // 60 waiting: another 60 would pass the bound, and is refused before its body.
            var r = try await c.post("/private/assets/upload", as: alice, #"{"tokens":[{"fieldName":"a"}]}"#)
            let url = try XCTUnwrap(((r.object["tokens"] as? [[String: Any]])?.first?["url"] as? String))
            r = try await c.call(.post, String(url.dropFirst("https://shareflow.invalid".count)), body: Data(count: 60))
            XCTAssertEqual(r.status, 413, "\(r.object)")
            XCTAssertTrue(r.reason.contains("not yet saved"), r.reason)
        }
        // Reservations: at most 1,000 open per account.
        let db = try engine.session(for: try XCTUnwrap(try engine.accounts.find("bob@example.com"))).container("iCloud.test").privateCloudDatabase
        for _ in 0..<5 { _ = try engine.reserveAssetUploads(Array(repeating: .init(fieldName: "a"), count: 200), zoneName: nil, in: db) }
        XCTAssertThrowsError(try engine.reserveAssetUploads([.init(fieldName: "a")], zoneName: nil, in: db)) {
            XCTAssertEqual(($0 as? ShareFlowError)?.code, .limitExceeded)
        }
    }

    func testAPublicRecordsAssetDownloadsForAVisitorAndALostBlobIsNoCutAnswer() async throws {
        let (alice, engine) = (alice, engine!)
        try await withServer { c in
            let one = try await c.upload(Data("poster".utf8), field: "a", as: alice)
            _ = one
            var r = try await c.post("/public/assets/upload", as: alice, #"{"tokens":[{"fieldName":"p"}]}"#)
            let url = try XCTUnwrap(((r.object["tokens"] as? [[String: Any]])?.first?["url"] as? String))
            r = try await c.call(.post, String(url.dropFirst("https://shareflow.invalid".count)), body: Data("poster".utf8))
            let single = try XCTUnwrap(r.object["singleFile"] as? [String: Any])
            r = try await c.post(
                "/public/records/modify",
                as: alice,
                Self.json([
                    "operations": [
                        ["operationType": "create", "record": ["recordName": "pub", "recordType": "Poster", "fields": ["p": ["value": single]]]]
                    ]
                ])
            )
            XCTAssertNil(r.records.first?["serverErrorCode"], "\(r.object)")
            // A visitor (the API token alone) reads the record and downloads its asset.
            r = try await c.post("/public/records/lookup", as: nil, #"{"records":[{"recordName":"pub"}]}"#)
            let value = try XCTUnwrap(
                ((r.records.first?["fields"] as? [String: Any])?["p"] as? [String: Any])?["value"] as? [String: Any],
                "\(r.object)"
            )
            let download = String(try XCTUnwrap(value["downloadURL"] as? String).dropFirst("https://shareflow.invalid".count))
            r = try await c.call(.get, download)
            XCTAssertEqual(String(decoding: r.body, as: UTF8.self), "poster")
            // Its bytes lost from the store: 503 with an incident, never a 200 cut short.
            let sum = try XCTUnwrap(value["fileChecksum"] as? String)
            XCTAssertTrue(try XCTUnwrap(engine.store.fileAssets).remove(sum))
            r = try await c.call(.get, download)
            XCTAssertEqual(r.status, 503)
            XCTAssertTrue(r.reason.contains("incident"), r.reason)
            XCTAssertFalse(r.reason.contains(sum), "the store's detail stays in its log")
            r = try await c.call(.head, download)
            XCTAssertEqual(r.status, 503)
        }
    }

    func testUploadSecretsStayOutOfTheLogAndSlowUploadsHaveTime() {
        XCTAssertEqual(AccessLog.shown("/assets/1/upload/abcdefSECRET"), "/assets/1/upload/…")
        XCTAssertEqual(AccessLog.shown("/assets/1/download/TOKEN/photo.png"), "/assets/1/download/…/photo.png")
        XCTAssertEqual(AccessLog.shown("/database/1/x"), "/database/1/x")
        var deadlines = ConnectionDeadlines()
        deadlines.uploadMaxBytes = 15 << 20
        var head = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/assets/1/upload/s")
        XCTAssertEqual(deadlines.bodySeconds(for: head), 30 + 240, "15 MiB at 64 KiB/s, and the usual 30 s")
        head.headerFields[.contentLength] = String(64 << 10)
        XCTAssertEqual(deadlines.bodySeconds(for: head), 31)
        XCTAssertEqual(deadlines.bodySeconds(for: HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/database/1/x")), 30)
    }
}
