import Foundation
import Hummingbird

/// Finds who a database request acts as (`CallerAuthenticator`: from the credentials it has
/// checked before, else on the engine's thread) and puts it on the context for the endpoint; a
/// request whose credentials are refused goes no further (AUTHENTICATION_FAILED).
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let thread: EngineThread
    let authenticator: CallerAuthenticator

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let asked = context.database else {
            throw CloudKitError(status: 500, code: "INTERNAL_ERROR", reason: "authentication ran before the database request was read")
        }
        let authenticator = self.authenticator
        let caller: Caller
        if let known = authenticator.knownCaller(asked) {
            caller = known
        } else {
            caller = try await thread.run {
                do { return try authenticator.authenticate(asked) } catch { throw CloudKitError.from(error) }
            }
        }
        if let account = caller.account { context.notes.caller = account.email ?? account.userRecordID }
        var context = context
        context.caller = caller
        return try await next(request, context)
    }
}
