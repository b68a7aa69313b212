import Foundation
import HTTPTypes
import Hummingbird

/// Requests per identity (SPEC §13, `server.rateLimit`), in two steps around authentication.
///
/// Before it (this middleware, ahead of everything else of a database route — the body is not
/// even read for a client over its share): a request is counted against its address only for
/// what the address was refused. A refused request (401) takes from the address's refusals
/// bucket, and while that is empty a request whose credential has not been accepted before is
/// throttled before anything is read: guessing stops there. A request that authenticates is
/// counted as its identity (`IdentityRateLimitMiddleware`), never against its address, so the
/// users behind one address (a reverse proxy: every request of `proxy-auth` comes from it)
/// never share a bucket, neither with each other after a restart (when no credential is known
/// yet and each first request took from the address's) nor with refused requests. A
/// server-to-server key's ID is no secret — it travels in a header — so a request naming one
/// always takes from its address's bucket here: whoever knows a key's ID can spend only their
/// own address's requests, never the key's.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let credential = Self.credential(request, context)
        let client = context.remoteAddress?.ipAddress ?? "unknown"
        let address = "client " + client
        let refusals = "refused " + client
        let isKey = credential?.hasPrefix("key ") ?? false
        let known = credential.map { !isKey && limiter.identity(of: $0) != nil } ?? false
        if isKey {
            try await take(address, who: "from this address naming a server-to-server key")
        } else if !known, let wait = limiter.peek(refusals) {
            let seconds = max(1, Int(wait.rounded(.up)))
            throw CloudKitError.throttled(
                "requestRateLimited: more than \(limiter.requests) refused requests in \(limiter.perSeconds) s from this address; requests with credentials not accepted before are refused for \(seconds) s",
                retryAfter: seconds
            )
        }
        do {
            return try await next(request, context)
        } catch let error as CloudKitError where error.status == .unauthorized {
            _ = await limiter.take(refusals) as RateLimiter.Verdict
            throw error
        }
    }

    /// Takes one request from `bucket`, or throws THROTTLED saying when to come back.
    func take(_ bucket: String, who: String) async throws {
        let wait: Double
        switch await limiter.take(bucket) as RateLimiter.Verdict {
        case .granted: return
        case .throttled(let seconds): wait = seconds
        case .unchecked:
            var body = WireFormat.error(
                code: "TRY_AGAIN_LATER",
                reason: "the shared rate limit could not be checked (PostgreSQL did not answer within \(RateLimiter.sharedWait) s); retry after 1 s"
            )
            body["retryAfter"] = 1
            throw CloudKitError(status: 503, body: body)
        }
        let seconds = max(1, Int(wait.rounded(.up)))
        throw CloudKitError.throttled(
            "requestRateLimited: more than \(limiter.requests) requests in \(limiter.perSeconds) s \(who); retry after \(seconds) s",
            retryAfter: seconds
        )
    }

    /// What the limiter remembers a credential by: a web auth token, a key ID (in any case one
    /// key), or an API token with its environment.
    static func credential(_ request: Request, _ context: Context) -> String? {
        let query = request.uri.queryParameters
        let container = DatabaseRequestMiddleware.decoded(context.parameters.get("container"))
        let environment = DatabaseRequestMiddleware.decoded(context.parameters.get("environment"))
        return DatabaseRequestMiddleware.webAuthToken(query["ckWebAuthToken"]).map { "web \(container)\u{0}\($0)" }
            ?? request.headers[HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!].map { "key \(container)\u{0}\($0.lowercased())" }
            ?? query["ckAPIToken"].map { "api \(container)\u{0}\(environment)\u{0}\($0)" }
    }
}

/// Every request takes from its address's bucket, whatever it carries: for routes whose
/// credential is never remembered as an identity (the admin routes).
struct AddressRateLimit: RouterMiddleware {
    typealias Context = ServerRequestContext
    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await RateLimitMiddleware(limiter: limiter).take(
            "client " + (context.remoteAddress?.ipAddress ?? "unknown"),
            who: "from this address"
        )
        return try await next(request, context)
    }
}

/// The second step of the rate limit, after authentication: every accepted request takes from
/// its identity's bucket (an account, or an API token alone), and its secret credential is
/// remembered as that identity, so its next requests skip their address's bucket.
struct IdentityRateLimitMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let caller = context.caller {
            try await RateLimitMiddleware(limiter: limiter).take("identity " + caller.identity, who: "by this user")
            if let credential = RateLimitMiddleware.credential(request, context), !credential.hasPrefix("key ") {
                limiter.remember(credential: credential, identity: caller.identity)
            }
        }
        return try await next(request, context)
    }
}
