import Foundation
import ShareFlow

/// A request on a database's path (`/database/1/<container>/<environment>/<database>/<subpath>`),
/// checked and read whole by `DatabaseRequestMiddleware`: what authentication and the
/// endpoints work from, on the engine's thread.
struct DatabaseRequest: Sendable {
    let container: String
    let environment: CloudEnvironment
    let scope: DatabaseScope
    /// What follows the database on the path (`records/modify`).
    let subpath: String
    let method: String
    /// The URL path, and the request target as sent (path and query): what a server-to-server
    /// signature covers, depending on the client.
    let path: String
    let target: String
    /// Names in lowercase; a repeated field's values joined by ", ".
    let headers: [String: String]
    /// Every query parameter but the two tokens.
    let query: [String: String]
    let apiToken: String?
    let webAuthToken: String?
    let body: Data

    var isGET: Bool { method == "GET" }
}
