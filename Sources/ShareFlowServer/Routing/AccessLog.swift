import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ShareFlow

/// One line per request: method, path (never the query, where the tokens are), status,
/// duration and caller. Also where every error under a route becomes Apple's error body: a
/// `CloudKitError` as it is, and a request no route answers (an unknown path or method) a
/// JSON NOT_FOUND like every other answer, instead of the router's empty body.
struct AccessLog: RouterMiddleware {
    typealias Context = ServerRequestContext
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        var response: Response
        do {
            // An empty path segment is no route (`//database/…` is not `/database/…`): a proxy
            // or a signature may read the path as sent.
            // (Bytes compared: `String.contains` goes through Foundation's `NSString` search.)
            guard !Self.hasEmptySegment(request.uri.path) else { throw HTTPError(.notFound) }
            response = try await next(request, context)
        } catch let error as CloudKitError {
            response = try error.response(from: request, context: context)
        } catch let error as any HTTPResponseError {
            let (code, status): (String, Int) =
                switch error.status {
                case .notFound: ("NOT_FOUND", 404)
                case .contentTooLarge: ("QUOTA_EXCEEDED", 413)
                case .methodNotAllowed: ("BAD_REQUEST", 400)
                default: (error.status.code >= 500 ? "INTERNAL_ERROR" : "BAD_REQUEST", error.status.code >= 500 ? 500 : 400)
                }
            let reason = error.status == .notFound ? "no route \(request.method) \(String(request.uri.path.prefix(200)))" : "\(error.status)"
            response = try CloudKitError(status: status, code: code, reason: reason).response(from: request, context: context)
        } catch let dropped as RequestFaults.ConnectionDropped {
            // SPEC §15: a connection dropped on purpose is a request line like any other —
            // `dropped` where the status goes, the duration in ms, the faults as `fault=`.
            logger.info(
                "\(request.method) \(Self.shown(request.uri.path)) dropped \(Self.milliseconds(since: start)) ms \(context.notes.caller ?? "-")\(Self.faults(context.notes)) (\(dropped.when.rawValue))"
            )
            throw dropped
        } catch {
            logger.info(
                "\(request.method) \(Self.shown(request.uri.path)) error \(start.duration(to: .now)) \(context.notes.caller ?? "-") \(error)"
            )
            throw error
        }
        // The path shown is cut to 80 characters: a log line per request stays a line.
        logger.info(
            "\(request.method) \(Self.shown(request.uri.path)) \(response.status.code) \(Self.milliseconds(since: start)) ms \(context.notes.caller ?? "-")\(Self.faults(context.notes))"
        )
        return response
    }

    /// Whether `path` has two slashes in a row.
    static func hasEmptySegment(_ path: String) -> Bool {
        var slash = false
        for byte in path.utf8 {
            let isSlash = byte == UInt8(ascii: "/")
            if isSlash && slash { return true }
            slash = isSlash
        }
        return false
    }

    /// A path as the log shows it: an asset URL's secret or token, or a webcourier URL's (a
    /// credential: the URL is all a client needs, SPEC §19 A3, §20 N3) replaced by `…`.
    static func shown(_ path: String) -> String {
        for prefix in ["/assets/1/upload/", "/assets/1/download/", NotificationRoutes.pollPrefix] where path.hasPrefix(prefix) {
            let rest = path.dropFirst(prefix.count)
            let after = rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? ""
            return Naming.printable(prefix + "…" + after)
        }
        return Naming.printable(path)
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> String {
        let elapsed = start.duration(to: .now).components
        return String(format: "%.1f", Double(elapsed.attoseconds) / 1e15 + Double(elapsed.seconds) * 1000)
    }

    /// ` fault=a,b` for a request faults were injected into (SPEC §15), else nothing.
    static func faults(_ notes: RequestNotes) -> String {
        let faults = notes.faults
        return faults.isEmpty ? "" : " fault=" + faults.joined(separator: ",")
    }
}
