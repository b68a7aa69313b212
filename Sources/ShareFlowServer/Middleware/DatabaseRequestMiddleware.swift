import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ShareFlow

/// Checks what a database route's path names — an environment (R32) and a database scope —
/// and reads the body whole, up to `maxBodyBytes` (past it: QUOTA_EXCEEDED), into the
/// context's `DatabaseRequest`.
struct DatabaseRequestMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let maxBodyBytes: Int
    /// A device route (`/device/1/<container>/<environment>/…`, SPEC §20 N3): no database in
    /// its path; it acts in the caller's own (private) scope, so a server key makes no tokens.
    var device = false

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let environmentName = Self.decoded(context.parameters.get("environment"))
        guard let environment = CloudEnvironment(rawValue: environmentName) else {
            throw CloudKitError.badRequest("environment '\(Naming.printable(environmentName))' is not development or production")
        }
        let databaseName = device ? "private" : Self.decoded(context.parameters.get("database"))
        guard let scope = DatabaseScope(rawValue: databaseName) else {
            throw CloudKitError.badRequest("database '\(Naming.printable(databaseName))' is not public, private or shared")
        }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: maxBodyBytes)
        } catch is NIOTooManyBytesError {
            throw CloudKitError(status: 413, code: "QUOTA_EXCEEDED", reason: "the body is larger than \(maxBodyBytes) bytes")
        } catch {
            throw CloudKitError.badRequest("the body could not be read whole (it ended early?)")
        }
        var headers: [String: String] = [:]
        for field in request.headers {
            let name = field.name.canonicalName
            headers[name] = headers[name].map { $0 + ", " + field.value } ?? field.value
        }
        let query = request.uri.queryParameters
        var others: [String: String] = [:]
        for (key, value) in query where key != "ckAPIToken" && key != "ckWebAuthToken" { others[String(key)] = String(value) }
        let path = request.uri.path
        // `/database/1/<container>/<environment>/<database>/` and what follows.
        // A trailing slash is the same route (the router's reading), so the same subpath.
        let subpath = Self.trimmingTrailingSlashes(
            path.split(separator: "/", omittingEmptySubsequences: false).dropFirst(device ? 5 : 6).joined(separator: "/")
        )
        var context = context
        context.database = DatabaseRequest(
            container: Self.decoded(context.parameters.get("container")),
            environment: environment,
            scope: scope,
            subpath: subpath,
            method: request.method.rawValue,
            path: path,
            target: request.uri.query.map { path + "?" + $0 } ?? path,
            headers: headers,
            query: others,
            apiToken: query["ckAPIToken"].map(String.init),
            webAuthToken: Self.webAuthToken(query["ckWebAuthToken"]),
            body: Data(buffer: body)
        )
        return try await next(request, context)
    }

    /// A path parameter as the client meant it (`iCloud%2Et` is `iCloud.t`). One without a `%`
    /// is itself: Foundation's decoding (through `NSString`) is not asked on every request.
    static func decoded(_ s: String?) -> String {
        guard let s else { return "" }
        guard s.utf8.contains(UInt8(ascii: "%")) else { return s }
        return s.removingPercentEncoding ?? s
    }

    /// `subpath` without the slashes it ends with (what the regular expression `/+$` took off,
    /// without compiling one on every request).
    static func trimmingTrailingSlashes(_ subpath: String) -> String {
        var end = subpath.utf8.endIndex
        while end > subpath.utf8.startIndex, subpath.utf8[subpath.utf8.index(before: end)] == UInt8(ascii: "/") {
            end = subpath.utf8.index(before: end)
        }
        return end == subpath.utf8.endIndex ? subpath : String(subpath[..<end])
    }

    /// The web auth token a request carries, if any: CloudKit JS sends `ckWebAuthToken=null`
    /// (the text) on every request before sign-in, a page's own code may send `undefined`, and
    /// an empty value names no token either (SPEC §13 wave 4: such a request is anonymous, not
    /// one with a bad token).
    static func webAuthToken(_ value: Substring?) -> String? {
        guard let value, !Self.noToken.contains(value) else { return nil }
        return String(value)
    }

    /// What names no web auth token.
    private static let noToken: Set<Substring> = ["", "null", "undefined"]
}
