import Foundation
import Hummingbird
import NIOCore
import ShareFlow

/// SPEC §15 over HTTP: a database request asks the engine's fault rules before its endpoint
/// runs, on the connection's side — a delay sleeps there, never on the engine's thread — and
/// fails as CloudKit Web Services does: 429 `THROTTLED` and 503 `TRY_AGAIN_LATER` with
/// `retryAfter` and `Retry-After`, 413 `QUOTA_EXCEEDED`, 401 `AUTHENTICATION_FAILED`, or a
/// connection dropped without an answer, before the endpoint runs or after it committed.
/// Item and zone faults (`partialFailure`, `zoneBusy`, `zonePurged`, a zone's
/// `changeTokenExpired`) are the engine's, decided inside the request's `FaultScope`.
enum RequestFaults {
    /// What a request's fault left to do once the endpoint has run.
    struct Admitted {
        /// The scope the endpoint runs in (its subpath, for the engine's per-item rules).
        let scope: FaultScope
        /// Drop the connection once the endpoint has run (`networkFailure` after commit).
        let dropAfterCommit: Bool
    }

    /// The connection closed on purpose, no answer written (`networkFailure`).
    struct ConnectionDropped: Error, CustomStringConvertible {
        let when: FaultRule.When
        var description: String {
            "fault=networkFailure: the connection was dropped \(when == .afterCommit ? "after the request committed" : "before the request ran") (a fault rule)"
        }
    }

    /// Asks the rules for `subpath`'s request; throws its request-level fault, sleeps its
    /// delay, and returns the scope the endpoint runs in. Nil when no rule is armed.
    static func admit(
        _ subpath: String,
        _ request: DatabaseRequest,
        body: WireFormat.Object,
        context: ServerRequestContext,
        engine: Engine,
        thread: EngineThread
    ) async throws -> Admitted? {
        guard engine.faults.isArmed else { return nil }
        let native = (FaultRule.subpaths[subpath] ?? nil) ?? subpath
        let account = context.caller?.account
        var asked = FaultRequest(
            operation: native,
            subpath: subpath,
            container: request.container,
            environment: request.environment,
            database: request.scope.rawValue,
            items: items(subpath, body),
            callerID: account?.userRecordID,
            callerEmail: account?.email
        )
        asked.overHTTP = true
        // The token a feed's request sends: `syncToken`, or the older zones/changes' `metaSyncToken`.
        asked.sentChangeToken = (body["syncToken"] as? String ?? body["metaSyncToken"] as? String).map { !$0.isEmpty } ?? false
        let scope = FaultScope(operation: native, subpath: subpath)
        guard let decision = engine.faults.decide(asked) else { return Admitted(scope: scope, dropAfterCommit: false) }
        context.notes.addFault(decision.rule.fault?.rawValue ?? "latency")
        let injection = decision.injection
        // Observers run on the engine's thread, as every event's do.
        _ = try? await thread.run { engine.announce(injection, caller: account, container: request.container) }
        if decision.rule.latencyMs > 0 {
            try await Task.sleep(for: .milliseconds(Int64(decision.rule.latencyMs.rounded())))
        }
        guard let fault = decision.rule.fault else { return Admitted(scope: scope, dropAfterCommit: false) }
        let retryAfter = decision.rule.retryAfter
        let reason = "injected by fault rule \(decision.id)"
        switch fault {
        case .networkFailure where decision.rule.when == .afterCommit:
            return Admitted(scope: scope, dropAfterCommit: true)
        case .networkFailure:
            drop(context)
            throw ConnectionDropped(when: .beforeCommit)
        case .requestRateLimited:
            throw CloudKitError(
                status: 429,
                body: withRetry(WireFormat.error(code: "THROTTLED", reason: "requestRateLimited: too many requests (\(reason))"), retryAfter)
            )
        case .serviceUnavailable:
            throw CloudKitError(
                status: 503,
                body: withRetry(WireFormat.error(code: "TRY_AGAIN_LATER", reason: "serviceUnavailable: try again later (\(reason))"), retryAfter)
            )
        case .zoneBusy:
            throw CloudKitError(
                status: 503,
                body: withRetry(WireFormat.error(code: "ZONE_BUSY", reason: "zoneBusy: the zone is busy (\(reason))"), retryAfter)
            )
        case .quotaExceeded:
            throw CloudKitError(status: 413, code: "QUOTA_EXCEEDED", reason: "quotaExceeded: the account's storage quota is exceeded (\(reason))")
        case .authenticationFailed:
            throw CloudKitError.authenticationFailed("authentication failed (\(reason))")
        case .changeTokenExpired:
            throw CloudKitError.badRequest("changeTokenExpired: the change token expired (\(reason)); fetch again from the start")
        case .partialFailure, .zonePurged:
            // Never asked at the request's stage (FaultStage.admits).
            return Admitted(scope: scope, dropAfterCommit: false)
        }
    }

    /// After the endpoint ran in `admitted`'s scope: the faults the engine injected into the
    /// access log, and the connection dropped when the rule said so.
    static func finish(_ admitted: Admitted?, context: ServerRequestContext) async throws {
        guard let admitted else { return }
        for fault in admitted.scope.injected { context.notes.addFault(fault) }
        // The delays of the request's items and zones, here on the connection (the engine's
        // thread was not held for them).
        if admitted.scope.delayMs > 0 { try await Task.sleep(for: .milliseconds(Int64(admitted.scope.delayMs.rounded()))) }
        if admitted.dropAfterCommit {
            drop(context)
            throw ConnectionDropped(when: .afterCommit)
        }
    }

    /// Closes the request's connection: the client reads no answer.
    static func drop(_ context: ServerRequestContext) {
        context.channel.close(promise: nil)
    }

    private static func withRetry(_ body: WireFormat.Object, _ seconds: Double) -> WireFormat.Object {
        var body = body
        body["retryAfter"] = seconds == seconds.rounded() ? Int(seconds) as Any : seconds as Any
        return body
    }

    /// The most items of a body a rule is matched against: a request's items beyond it are
    /// not looked at (the endpoints refuse more anyway).
    static let maxItems = 1_000

    /// What a request is about, read from its body without trusting its shape: records by
    /// zone, type and name, or zones.
    static func items(_ subpath: String, _ body: WireFormat.Object) -> [FaultItem] {
        func object(_ v: Any?) -> WireFormat.Object? { v as? WireFormat.Object }
        func list(_ v: Any?) -> ArraySlice<Any> { (v as? [Any] ?? []).prefix(maxItems) }
        func zoneName(_ v: Any?) -> String? { object(v)?["zoneName"] as? String }
        let zone = zoneName(body["zoneID"]) ?? RecordZoneID.defaultZoneName
        switch subpath {
        case "records/modify":
            return list(body["operations"]).compactMap { object($0).flatMap { object($0["record"]) } }.map {
                FaultItem(zone: zone, recordType: $0["recordType"] as? String, recordName: $0["recordName"] as? String)
            }
        case "records/lookup":
            return list(body["records"]).compactMap(object).map { FaultItem(zone: zone, recordName: $0["recordName"] as? String) }
        case "records/query":
            return [FaultItem(zone: zone, recordType: object(body["query"])?["recordType"] as? String)]
        case "records/changes":
            return [FaultItem(zone: zone)]
        case "changes/zone":
            return list(body["zones"]).compactMap { zoneName(object($0)?["zoneID"]) }.map { FaultItem(zone: $0) }
        case "zones/modify":
            return list(body["operations"]).compactMap { zoneName(object(object($0)?["zone"])?["zoneID"]) }.map { FaultItem(zone: $0) }
        case "zones/lookup":
            return list(body["zones"]).compactMap { zoneName($0) }.map { FaultItem(zone: $0) }
        default:
            return []
        }
    }
}
