import Foundation

/// An error as CloudKit reports it: a code (with CloudKit's raw value), a message naming the
/// item and the rule, per-item errors for a partial failure, and a retry delay.
///
/// ```swift
/// if case .failure(let error) = try db.modifyRecords(saving: [trip]).saveResults[0].1,
///     error.code == .serverRecordChanged, let server = error.serverRecord
/// {
///     server["title"] = trip["title"]           // merge into the server's copy (R21), then save that
///     _ = try db.modifyRecords(saving: [server])
/// }
/// ```
public struct ShareFlowError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, by CloudKit's `CKError.Code` names (SPEC §4); `number` is the raw value.
    public enum Code: String, Sendable, CaseIterable {
        case partialFailure, serviceUnavailable, requestRateLimited, permissionFailure, unknownItem,
            invalidArguments, serverRecordChanged, operationCancelled, batchRequestFailed,
            badDatabase, zoneNotFound, limitExceeded, tooManyParticipants, alreadyShared,
            referenceViolation, participantMayNeedVerification, changeTokenExpired,
            // R39: an access request from someone already invited.
            participantAlreadyInvited,
            // SPEC §15: what fault rules inject (CloudKit's own codes for these failures).
            networkFailure, zoneBusy, quotaExceeded

        /// CloudKit's `CKError.Code` raw value.
        public var number: Int {
            switch self {
            case .partialFailure: return 2
            case .serviceUnavailable: return 6
            case .requestRateLimited: return 7
            case .permissionFailure: return 10
            case .unknownItem: return 11
            case .invalidArguments: return 12
            case .serverRecordChanged: return 14
            case .operationCancelled: return 20
            case .batchRequestFailed: return 22
            case .badDatabase: return 24
            case .zoneNotFound: return 26
            case .limitExceeded: return 27
            case .tooManyParticipants: return 29
            case .alreadyShared: return 30
            case .referenceViolation: return 31
            case .participantMayNeedVerification: return 33
            case .participantAlreadyInvited: return 37
            case .changeTokenExpired: return 21
            case .networkFailure: return 4
            case .zoneBusy: return 23
            case .quotaExceeded: return 25
            }
        }
    }

    /// The kind of failure: what scripts and clients branch on.
    public var code: Code
    /// What failed and why, naming the item and the rule.
    public var message: String
    /// For `partialFailure`: each failed item's ID (lookup info, URL, record ID) and its error,
    /// in input order.
    public var partialErrors: [(item: String, error: ShareFlowError)]
    /// Seconds to wait before trying again, where the failure gives a delay (CloudKit's `retryAfterSeconds`).
    public var retryAfter: Double?
    /// Whether the message is for the operator only: it names the store (a path, a PostgreSQL
    /// user, host or database) or its state. A client gets a generic reason and an incident ID
    /// instead, and the message goes to the server's log under that ID (SPEC §13). Set where
    /// the store makes its errors (`forOperator()`), kept by `rephrased(_:)`.
    public internal(set) var isOperatorDetail = false
    /// Whether this is an outage of the service rather than a verdict on the request or an
    /// item: the store cannot be reached, is busy, full or failing. Over the wire it fails the
    /// whole request (503 `TRY_AGAIN_LATER`, which clients retry), never one item (which
    /// clients take as final). A damaged row is no outage: the rest of the store serves.
    public internal(set) var isOutage = false
    /// Whether a write gave up waiting for a lock another writer held past the busy timeout
    /// (`store.busyTimeoutMs`): while writes do, a server says it is not ready (`Store`).
    public package(set) var isLockWait = false
    /// For an operator-only message: what a client may read instead (the item and who decided,
    /// without a plugin's file, line or traceback); nil: a generic sentence.
    public internal(set) var clientMessage: String?
    /// For `serverRecordChanged` (R21): the server's current record, the record the caller
    /// tried to save, and the record as the caller last had it from the server, so a script
    /// can merge and retry.
    public var serverRecord: Record? { conflict?.server }
    /// For `serverRecordChanged`: the record the caller tried to save (R21).
    public var clientRecord: Record? { conflict?.client }
    /// For `serverRecordChanged`: the record as the caller last had it from the server; nil for a new record (R21).
    public var ancestorRecord: Record? { conflict?.ancestor }
    var conflict: RecordConflict?
    /// For `participantMayNeedVerification` (R16): the share's invitations no account matches
    /// (CloudKit's `potentialMatchList`), so the caller can tell which address to verify.
    public var potentialMatches: [(participantID: String, lookupInfo: LookupInfo)] = []

    /// An error of `code` saying `message`; a `partialFailure` carries its items' errors in `partialErrors`.
    public init(
        _ code: Code,
        _ message: String,
        partialErrors: [(item: String, error: ShareFlowError)] = [],
        retryAfter: Double? = nil
    ) {
        self.code = code
        self.message = message
        self.partialErrors = partialErrors
        self.retryAfter = retryAfter
    }

    /// CloudKit's raw value of `code` (SPEC §4).
    public var codeNumber: Int { code.number }

    /// This error, its message for the operator only (`isOperatorDetail`); an outage
    /// (`isOutage`) unless said otherwise when it is `serviceUnavailable`.
    public func forOperator(outage: Bool? = nil, client: String? = nil) -> ShareFlowError {
        var e = self
        e.isOperatorDetail = true
        e.isOutage = outage ?? (code == .serviceUnavailable || code == .networkFailure)
        e.clientMessage = client
        return e
    }

    /// What a client reads in place of an operator-only message (`isOperatorDetail`), before
    /// its incident ID: `clientMessage`, else a generic sentence.
    public var clientWords: String {
        clientMessage ?? (isOutage ? "the service is unavailable; try again later" : "the store could not complete this change")
    }

    /// This error as someone other than the operator may read it (a plugin, and through it a
    /// client): itself, or where its message is the operator's, the same error (code, retry
    /// hint, audience) with `clientWords` and an incident ID as its message, `log` given the
    /// operator's message under that ID. Its items' errors likewise.
    public func withheld(log: (_ incident: String, _ detail: String) -> Void) -> ShareFlowError {
        var e = self
        e.partialErrors = partialErrors.map { ($0.item, $0.error.withheld(log: log)) }
        guard isOperatorDetail else { return e }
        let incident = UUID().uuidString.lowercased()
        log(incident, message)
        e.message = "\(clientWords) (incident \(incident))"
        return e
    }

    /// An error's first line as a client may read it: without the Lua chunk's file and line
    /// (`/srv/plugins/gate/init.lua:12: `) and without the traceback after it, at most 300
    /// characters.
    public static func clientLine(of error: Error) -> String {
        let text = (error as? ShareFlowError)?.message ?? "\(error)"
        var line = Substring(text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        // "chunk:line: " prefixes, as Lua's error() adds them (one per level a message was re-raised at).
        while let range = line.range(of: #"^(\.\.\.)?[^:\n]*\.lua:[0-9]+: "#, options: .regularExpression) {
            line = line[range.upperBound...]
        }
        return String(line.prefix(300))
    }

    /// This error, marked as a write's wait for a lock that ran out (`isLockWait`).
    package func asLockWait() -> ShareFlowError {
        var e = self
        e.isLockWait = true
        return e
    }

    /// The same failure with another message (its code, retry hint and audience kept).
    public func rephrased(_ message: String) -> ShareFlowError {
        var e = self
        e.message = message
        return e
    }

    /// `code (number): message`, as logs and the console show it.
    public var description: String { "\(code.rawValue) (\(code.number)): \(message)" }

    /// The error for a batch in which `failures` of `total` items failed.
    static func partial(_ failures: [(item: String, error: ShareFlowError)], of total: Int) -> ShareFlowError {
        ShareFlowError(.partialFailure, "\(failures.count) of \(total) items failed", partialErrors: failures)
    }
}

extension ShareFlowError {
    static func invalid(_ message: String) -> ShareFlowError { ShareFlowError(.invalidArguments, message) }
    static func denied(_ message: String) -> ShareFlowError { ShareFlowError(.permissionFailure, message) }
    static func unknown(_ message: String) -> ShareFlowError { ShareFlowError(.unknownItem, message) }
}

/// The three records of a `serverRecordChanged` error. Immutable once made: the records are
/// copies no one else holds.
final class RecordConflict: @unchecked Sendable {
    let server: Record?
    let client: Record
    let ancestor: Record?

    init(server: Record?, client: Record, ancestor: Record?) {
        self.server = server
        self.client = client
        self.ancestor = ancestor
    }
}
