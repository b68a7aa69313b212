import Foundation

/// A server request as an authenticator sees it (SPEC §13 `ctx.authenticate`): enough to find
/// a deployment's own credential (a bearer token, a header set by a signing proxy), never the
/// CloudKit tokens themselves.
public struct AuthenticationRequest: Sendable {
    /// The HTTP method (`POST`).
    public var method: String
    /// The URL path, without the query.
    public var path: String
    /// The container identifier the request names (`iCloud.com.example.trips`).
    public var container: String
    /// The environment the request names: `development` or `production` (a `CloudEnvironment` raw value).
    public var environment: String
    /// The database the request names: `private`, `shared` or `public` (a `DatabaseScope` raw value).
    public var database: String
    /// Header names in lowercase; a repeated header's values joined with ", ".
    public var headers: [String: String]
    /// The query's parameters, without `ckAPIToken` and `ckWebAuthToken`.
    public var query: [String: String]

    /// A request as the server read it; authenticators expect `headers` keyed in lowercase and
    /// `query` without the CloudKit tokens (the server gives them so).
    public init(
        method: String,
        path: String,
        container: String,
        environment: String,
        database: String,
        headers: [String: String],
        query: [String: String]
    ) {
        self.method = method
        self.path = path
        self.container = container
        self.environment = environment
        self.database = database
        self.headers = headers
        self.query = query
    }
}

/// What an authenticator says about a request.
public enum AuthenticationVerdict {
    /// Not a credential this authenticator knows: the next one is asked.
    case pass
    /// The request acts as this account.
    case account(Account)
    /// A credential it knows, and refuses: the request fails `AUTHENTICATION_FAILED`.
    case refuse(String)
}

/// The authenticators a server consults for a request without `ckWebAuthToken`, highest
/// priority first (then in the order added). The first that names an account or refuses
/// decides; an authenticator that fails refuses (fail closed).
///
/// ```swift
/// engine.authenticators.add(name: "header") { request in
///     guard let who = request.headers["x-user"] else { return .pass }
///     return try engine.accounts.find(who).map { .account($0) } ?? .refuse("no account for \(who)")
/// }
/// ```
public final class Authenticators: @unchecked Sendable {  // used on the engine's executor only
    /// An authenticator. What it throws refuses the request (fail closed), but for an outage of
    /// the store, which fails the request as that outage.
    public typealias Body = (AuthenticationRequest) throws -> AuthenticationVerdict

    private struct Entry {
        let id: Int
        let name: String
        let priority: Int
        let body: Body
    }

    private var entries: [Entry] = []
    private var nextID = 0

    /// An empty set: `authenticate` names no account for any request.
    public init() {}

    /// Whether none is registered (the server then builds no `AuthenticationRequest`).
    public var isEmpty: Bool { entries.isEmpty }
    /// The authenticators' names, in the order they are asked.
    public var names: [String] { entries.map(\.name) }

    /// Adds an authenticator; returns what `remove(id:)` takes.
    @discardableResult
    public func add(name: String, priority: Int = 0, _ body: @escaping Body) -> Int {
        nextID += 1
        entries.append(Entry(id: nextID, name: name, priority: priority, body: body))
        // Stable: equal priorities keep the order they were added in.
        entries = entries.enumerated().sorted { ($0.element.priority, -$0.offset) > ($1.element.priority, -$1.offset) }.map(\.element)
        return nextID
    }

    /// Removes the authenticator `add` returned `id` for; an unknown id does nothing.
    public func remove(id: Int) { entries.removeAll { $0.id == id } }

    /// The account the first deciding authenticator names, with its name; nil when all pass.
    /// A refusal, or an authenticator's own failure, is `permissionFailure` naming it.
    public func authenticate(_ request: AuthenticationRequest) throws -> (account: Account, authenticator: String)? {
        for entry in entries {
            let verdict: AuthenticationVerdict
            do {
                verdict = try entry.body(request)
            } catch {
                // Its file, line and traceback are the operator's (the log); a client reads who failed.
                if let e = error as? ShareFlowError, e.isOutage { throw e }
                throw ShareFlowError(.permissionFailure, "authenticator '\(entry.name)' failed: \((error as? ShareFlowError)?.message ?? "\(error)")")
                    .forOperator(outage: false, client: "authenticator '\(entry.name)' failed: \(ShareFlowError.clientLine(of: error))")
            }
            switch verdict {
            case .pass: continue
            case .account(let account): return (account, entry.name)
            case .refuse(let reason): throw ShareFlowError(.permissionFailure, "authenticator '\(entry.name)' refused: \(reason)")
            }
        }
        return nil
    }
}
