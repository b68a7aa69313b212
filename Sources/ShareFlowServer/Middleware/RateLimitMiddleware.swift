import Foundation
import HTTPTypes
import Hummingbird

/// Requests per identity (SPEC §13, `server.rateLimit`), in two steps around authentication.
///
/// Before it (this middleware, ahead of everything else of a database route — the body is not
/// even read for a client over its share): a request whose credential has not been accepted
/// before takes from its address's bucket. A secret credential accepted before (a web auth or
/// API token: knowing it is being its holder) is counted after authentication instead, as its
/// identity. A server-to-server key's ID is no secret — it travels in a header — so a request
/// naming one always takes from its address's bucket here: whoever knows a key's ID can spend
/// only their own address's requests, never the key's. A request refused by authentication
/// counts against its address too.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let credential = Self.credential(request, context)
        let address = "client " + (context.remoteAddress?.ipAddress ?? "unknown")
        let known = credential.map { !$0.hasPrefix("key ") && limiter.identity(of: $0) != nil } ?? false
        if !known { try await take(address, who: "from this address without accepted credentials") }
        do {
            return try await next(request, context)
        } catch let error as CloudKitError where error.status == .unauthorized && known {
            _ = await limiter.take(address) as RateLimiter.Verdict
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
            var body = WireFormat.error(code: "TRY_AGAIN_LATER",
                                        reason: "the shared rate limit could not be checked (PostgreSQL did not answer within \(RateLimiter.sharedWait) s); retry after 1 s")
            body["retryAfter"] = 1
            throw CloudKitError(status: 503, body: body)
        }
        let seconds = max(1, Int(wait.rounded(.up)))
        throw CloudKitError.throttled("requestRateLimited: more than \(limiter.requests) requests in \(limiter.perSeconds) s \(who); retry after \(seconds) s",
                                      retryAfter: seconds)
    }

    /// What the limiter remembers a credential by: a web auth token, a key ID (in any case one
    /// key), or an API token with its environment.
    static func credential(_ request: Request, _ context: Context) -> String? {
        let query = request.uri.queryParameters
        let container = DatabaseRequestMiddleware.decoded(context.parameters.get("container"))
        let environment = DatabaseRequestMiddleware.decoded(context.parameters.get("environment"))
        return query["ckWebAuthToken"].map { "web \(container)\u{0}\($0)" }
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
        try await RateLimitMiddleware(limiter: limiter).take("client " + (context.remoteAddress?.ipAddress ?? "unknown"),
                                                             who: "from this address")
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
