import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import XCTest

@testable import ShareFlow
@testable import ShareFlowServer

/// A browser's side of the web console in process: it keeps the console's cookie, reads each
/// page's form token, and posts forms as a browser would (URL-encoded, same origin).
struct ConsoleClient: Sendable {
    let client: any TestClientProtocol
    var cookie = ""
    var csrf = ""

    init(client: any TestClientProtocol) { self.client = client }

    struct Page: Sendable {
        let status: Int
        let headers: HTTPFields
        let text: String
        var location: String? { headers[.location] }
        var cookies: [String] { headers[values: .setCookie] }
    }

    static func encode(_ fields: [(String, String)]) -> String {
        fields.map { ConsoleLink.encode($0.0) + "=" + ConsoleLink.encode($0.1) }.joined(separator: "&")
    }

    func get(_ path: String, headers extra: HTTPFields = [:]) async throws -> Page {
        var headers = extra
        if !cookie.isEmpty { headers[.cookie] = cookie }
        return try await client.execute(uri: path, method: .get, headers: headers, body: nil) { r in
            Page(status: Int(r.status.code), headers: r.headers, text: String(buffer: r.body))
        }
    }

    func post(_ path: String, _ fields: [(String, String)], csrf given: String? = nil, headers extra: HTTPFields = [:]) async throws -> Page {
        var headers = extra
        if headers[.contentType] == nil { headers[.contentType] = "application/x-www-form-urlencoded" }
        if !cookie.isEmpty && headers[.cookie] == nil { headers[.cookie] = cookie }
        let all = [("csrf", given ?? csrf)] + fields
        return try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: ConsoleClient.encode(all))) { r in
            Page(status: Int(r.status.code), headers: r.headers, text: String(buffer: r.body))
        }
    }

    /// Signs in with `adminToken`: the sign-in form's nonce, then the POST; keeps the session.
    mutating func signIn(_ adminToken: String) async throws {
        let form = try await get("/console")
        XCTAssertEqual(form.status, 200)
        let nonce = try XCTUnwrap(ConsoleClient.field("nonce", in: form.text))
        let login = try XCTUnwrap(form.cookies.first { $0.hasPrefix("sf_console_login=") }).split(separator: ";")[0]
        let answer = try await client.execute(
            uri: "/console/session",
            method: .post,
            headers: [.contentType: "application/x-www-form-urlencoded", .cookie: String(login)],
            body: ByteBuffer(string: ConsoleClient.encode([("nonce", nonce), ("token", adminToken)]))
        ) { r in Page(status: Int(r.status.code), headers: r.headers, text: String(buffer: r.body)) }
        XCTAssertEqual(answer.status, 303, answer.text)
        let session = try XCTUnwrap(answer.cookies.first { $0.hasPrefix("sf_console=") })
        cookie = String(session.split(separator: ";")[0])
        let accounts = try await get("/console/accounts")
        csrf = try XCTUnwrap(ConsoleClient.field("csrf", in: accounts.text))
    }

    /// A hidden field's value on a page.
    static func field(_ name: String, in html: String) -> String? {
        let pattern = "name=\"\(name)\" value=\"([^\"]*)\""
        guard let r = html.range(of: pattern, options: .regularExpression) else { return nil }
        let match = String(html[r])
        return String(match.dropFirst("name=\"\(name)\" value=\"".count).dropLast())
    }

    /// Follows a 303 and returns the page it leads to.
    func follow(_ page: Page) async throws -> Page {
        guard page.status == 303, let location = page.location else { return page }
        return try await get(location)
    }
}
