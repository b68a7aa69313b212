import Foundation
import HTTPTypes
import Hummingbird

/// Requests per identity (SPEC §13, `server.rateLimit`), checked before anything else of a
/// database route — the body is not even read for a client over its share. A request takes
/// from the bucket of the identity its credential was accepted as before, else from its
/// address's (`RateLimiter`); once answered, its credential is remembered with the identity
/// authentication found.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let query = request.uri.queryParameters
        let container = DatabaseRequestMiddleware.decoded(context.parameters.get("container"))
        let environment = DatabaseRequestMiddleware.decoded(context.parameters.get("environment"))
        // What the limiter remembers a credential by (a key ID in any case is one key).
        let credential: String? = query["ckWebAuthToken"].map { "web \(container)\u{0}\($0)" }
            ?? request.headers[HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!].map { "key \(container)\u{0}\($0.lowercased())" }
            ?? query["ckAPIToken"].map { "api \(container)\u{0}\(environment)\u{0}\($0)" }
        let key = limiter.key(credential: credential, client: context.remoteAddress?.ipAddress ?? "unknown")
        if let wait = limiter.take(key) {
            let seconds = max(1, Int(wait.rounded(.up)))
            let who = key.hasPrefix("client ") ? "from this address without accepted credentials" : "by this user"
            throw CloudKitError.throttled("requestRateLimited: more than \(limiter.requests) requests in \(limiter.perSeconds) s \(who); retry after \(seconds) s",
                                          retryAfter: seconds)
        }
        defer {
            if let credential, let identity = context.notes.identity { limiter.remember(credential: credential, identity: identity) }
        }
        return try await next(request, context)
    }
}
