import Foundation
import HTTPTypes
import Hummingbird
import ShareFlow

/// An error as CloudKit Web Services answers one: an HTTP status and Apple's error body
/// (`uuid`, `serverErrorCode`, `reason`, and `retryAfter` or `redirectURL` where the case has
/// one). Thrown anywhere under a route — a parser, a middleware, a handler — it is rendered
/// the same way (`HTTPResponseError`), so no path answers with another shape.
///
/// ```swift
/// throw CloudKitError.badRequest("zones is required")
/// ```
///
/// Unchecked: the body holds only immutable JSON values and is not changed once made.
struct CloudKitError: HTTPResponseError, @unchecked Sendable, CustomStringConvertible {
    let status: HTTPResponse.Status
    let body: WireFormat.Object

    init(status: Int, body: WireFormat.Object) {
        self.status = HTTPResponse.Status(code: status)
        self.body = body
    }

    init(status: Int, code: String, reason: String) {
        self.init(status: status, body: WireFormat.error(code: code, reason: reason))
    }

    /// An engine error as its wire code and status (SPEC §13).
    init(_ e: ShareFlowError) {
        self.init(status: WireFormat.serverErrorCode(e.code).1, body: WireFormat.error(e))
    }

    /// Any error thrown under a route: ours as it is, the engine's by its code, anything else
    /// an internal error that names it.
    static func from(_ error: any Error) -> CloudKitError {
        switch error {
        case let e as CloudKitError: e
        case let e as ShareFlowError: CloudKitError(e)
        default: internalError(error)
        }
    }

    /// An error of no known kind: its words are the operator's (a store's path, a library's
    /// message), so the client gets an incident ID and the log gets the words.
    static func internalError(_ error: any Error) -> CloudKitError {
        let incident = UUID().uuidString.lowercased()
        OperatorLog.incident(incident, "\(error)")
        var body = WireFormat.error(code: "INTERNAL_ERROR", reason: "the server failed to answer this request (incident \(incident))")
        body["uuid"] = incident
        return CloudKitError(status: 500, body: body)
    }

    /// A request that cannot be understood: `BAD_REQUEST`, naming the field.
    static func badRequest(_ reason: String) -> CloudKitError {
        CloudKitError(status: 400, code: "BAD_REQUEST", reason: reason)
    }

    static func authenticationFailed(_ reason: String) -> CloudKitError {
        CloudKitError(status: 401, code: "AUTHENTICATION_FAILED", reason: reason)
    }

    /// No user where the endpoint needs one, or a user's token that expired: 421 with the
    /// server's sign-in page as `redirectURL` (SPEC §13 wave 4). CloudKit JS offers sign-in
    /// only on a 421; a token that is wrong or revoked is 401 (`authenticationFailed`).
    static func authenticationRequired(publicURL: String, reason: String = "request needs authorization") -> CloudKitError {
        var body = WireFormat.error(code: "AUTHENTICATION_REQUIRED", reason: reason)
        body["redirectURL"] = SignInPage.url(publicURL: publicURL)
        return CloudKitError(status: 421, body: body)
    }

    /// `requestRateLimited`, with `retryAfter` in the body (and the header: `response`).
    static func throttled(_ reason: String, retryAfter seconds: Int) -> CloudKitError {
        var body = WireFormat.error(code: "THROTTLED", reason: reason)
        body["retryAfter"] = seconds
        return CloudKitError(status: 429, body: body)
    }

    var reason: String { body["reason"] as? String ?? "" }
    var description: String { "\(status.code) \(body["serverErrorCode"] ?? "?"): \(reason)" }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        CloudKitServer.response(status: Int(status.code), WireObject(body))
    }
}
