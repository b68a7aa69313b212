import Foundation

/// A question asked of the policies before a change (SPEC §6).
///
/// ```swift
/// engine.policies.add(.shareAccept, name: "no-guests") { request in
///     request.caller?.email?.hasSuffix("@example.com") == true ? .allow : .deny("not staff")
/// }
/// ```
public struct PolicyRequest {
    /// Where the engine asks: which change is about to happen.
    public let point: DecisionPoint
    /// The acting account (`caller` in policy requests, SPEC §5).
    public let caller: Account?
    /// `caller?.id`, kept apart: the Lua host reads it on every decision to find the caller's
    /// userdata, and testing the optional `Account` itself copies its 152 bytes.
    package let callerID: Int64?
    /// The container's identifier.
    public let container: String?
    /// `share.publicPermission`: the share's public permission now (a `ParticipantPermission` raw value).
    public let from: String?
    /// `share.publicPermission`: the public permission the save asks for.
    public let to: String?
    /// The share, participant and metadata, kept together so they travel as one reference.
    public let objects: Objects

    /// The share as stored before the change, its owner included (SPEC §18 P2); nil for a
    /// share being created. Read when first asked for; a store that cannot be read then throws
    /// (an outage a policy meets fails the request as that outage, not as a denial).
    public var share: Share? { get throws { try objects.share } }
    /// `participant.add`, `share.save`, `share.publicPermission`, `share.requestAccess`: the
    /// share as it would be after the change (a copy: changing it changes nothing).
    public var proposed: Share? { get throws { try objects.proposed } }
    /// What differs between `share` and `proposed` (nil where there is no `proposed`).
    public var changes: ShareChanges? { get throws { try objects.changes } }
    /// `share.accept`: the caller's participant, if they have one yet;
    /// `participant.add`: the one added. Read when first asked for, as `share`.
    public var participant: Participant? { get throws { try objects.participant } }
    /// `share.accept`: the metadata the caller accepts.
    public var metadata: ShareMetadata? { objects.metadata }
    /// `share.requestAccess`: the URL asked with.
    public var url: String? { objects.url }
    /// `share.requestAccess`: who asks (R40).
    public var requester: Share.AccessRequester? { objects.requester }

    /// A request whose objects are at hand (`participant.add`, `share.save`, tools and benchmarks).
    public init(
        point: DecisionPoint,
        caller: Account?,
        container: String?,
        share: Share? = nil,
        participant: Participant? = nil,
        metadata: ShareMetadata? = nil,
        from: String? = nil,
        to: String? = nil,
        proposed: Share? = nil
    ) {
        self.init(
            point: point,
            caller: caller,
            container: container,
            objects: Objects(share: { share }, participant: { participant }, metadata: metadata, proposed: { proposed }),
            from: from,
            to: to
        )
    }

    /// With the share and participant made on first read: an accept's share as it was before
    /// is a store read, and most policies (an allow-list reads only the caller) never look.
    public init(point: DecisionPoint, caller: Account?, container: String?, objects: Objects, from: String? = nil, to: String? = nil) {
        self.point = point
        self.caller = caller
        self.callerID = caller?.id
        self.container = container
        self.objects = objects
        self.from = from
        self.to = to
        objects.question = (point, caller, container, from, to)
    }

    /// A request's objects; the share and participant are made once, when first read.
    public final class Objects {
        /// `share.accept`: the metadata the caller accepts, made with the request.
        public let metadata: ShareMetadata?
        /// `share.requestAccess`: the URL asked with.
        public var url: String?
        /// `share.requestAccess`: who asks, as the owner will see them (R40).
        public var requester: Share.AccessRequester?
        /// `share.accept`: whether the caller accepts through a one-time link (R44).
        public var oneTimeURL = false
        /// The environment of the container asked about (`development`, `production`).
        public var environment: String?
        /// The rest of the question (`PolicyRequest.init` sets it): so the decision log keeps
        /// one reference to these objects, not a copy of the request.
        fileprivate var question: (point: DecisionPoint, caller: Account?, container: String?, from: String?, to: String?)?
        /// The request these objects were made for.
        var request: PolicyRequest? {
            question.map { PolicyRequest(point: $0.point, caller: $0.caller, container: $0.container, objects: self, from: $0.from, to: $0.to) }
        }
        private var deferredShare: Deferred<Share>
        private var deferredParticipant: Deferred<Participant>
        private var deferredProposed: Deferred<Share>
        private var madeChanges: ShareChanges??

        /// `share`, `participant` and `proposed` run at most once, on first read; what one
        /// throws is kept and thrown again on every read.
        public init(
            share: @escaping () throws -> Share?,
            participant: @escaping () throws -> Participant?,
            metadata: ShareMetadata?,
            proposed: @escaping () throws -> Share? = { nil }
        ) {
            deferredShare = Deferred(share)
            deferredParticipant = Deferred(participant)
            deferredProposed = Deferred(proposed)
            self.metadata = metadata
        }

        /// The share, made on first read (a store read that may throw).
        public var share: Share? { get throws { try deferredShare.value() } }
        /// The participant, made on first read (a store read that may throw).
        public var participant: Participant? { get throws { try deferredParticipant.value() } }
        /// The share as the change would leave it, made on first read.
        public var proposed: Share? { get throws { try deferredProposed.value() } }
        /// From `share` to `proposed`, made on first read; nil without `proposed`.
        public var changes: ShareChanges? {
            get throws {
                if let made = madeChanges { return made }
                let made = try proposed.map { ShareChanges.between(try share, $0) }
                madeChanges = .some(made)
                return made
            }
        }
        /// Whether `share` (or `participant`, `proposed`) was made: read by the policy, or for
        /// the decision log.
        var madeShare: Bool { deferredShare.isMade }
        var madeParticipant: Bool { deferredParticipant.isMade }
        var madeProposed: Bool { deferredProposed.isMade }
    }

    /// A value made by `make` the first time it is asked for, then kept (or its failure).
    private struct Deferred<Value> {
        private var make: (() throws -> Value?)?
        private var made: Result<Value?, Error> = .success(nil)
        init(_ make: @escaping () throws -> Value?) { self.make = make }
        var isMade: Bool { make == nil }
        mutating func value() throws -> Value? {
            if let m = make {
                make = nil
                made = Result { try m() }
            }
            return try made.get()
        }
    }
}

/// Where the engine asks the policies (SPEC §6).
public enum DecisionPoint: Int, CaseIterable, Sendable, NamedByLiteral {
    /// `share.accept`, `participant.add`, `share.publicPermission`, `share.save`.
    case shareAccept, participantAdd, sharePublicPermission, shareSave
    /// `share.requestAccess` (SPEC §17): someone asks to join a share that takes requests.
    case shareRequestAccess

    /// The point's name as scripts see it (`share.accept`).
    public var staticName: StaticString {
        switch self {
        case .shareAccept: "share.accept"
        case .participantAdd: "participant.add"
        case .sharePublicPermission: "share.publicPermission"
        case .shareSave: "share.save"
        case .shareRequestAccess: "share.requestAccess"
        }
    }
}

/// A policy's answer.
public enum PolicyVerdict: Sendable, Equatable {
    /// The change may go ahead, as far as this policy is concerned.
    case allow
    /// The change fails `permissionFailure`, naming the policy and this reason.
    case deny(String)
    /// `share.requestAccess` only (SPEC §17): the requester is approved at once, in the same
    /// transaction, with the owner's authority — a `pending` participant with this permission
    /// and role and `isApprovedRequester`. At any other point it denies, as a policy's mistake.
    case approve(permission: ParticipantPermission, role: ParticipantRole)
}

/// One entry of the decision log (SPEC §18 P3): what OPA's decision log carries.
public struct PolicyDecision: Sendable {
    /// The decision's number in the log it was read from: this process's count, or the shared
    /// log's row (SPEC §18 P3).
    public let id: Int
    /// The decision point's name (`share.accept`).
    public let point: String
    /// The names of the policies asked, in order, up to the one that denied.
    public let policies: [String]
    /// Whether the change was allowed.
    public let allow: Bool
    /// `policy: reason` of the denial; empty when allowed.
    public let reasons: [String]
    /// Seconds the decision took.
    public let duration: Double
    /// When the decision was made (wall-clock time at its end).
    public let time: Date
    /// Who asked: the caller's user record ID.
    public var caller: String?
    /// The container's identifier and environment.
    public var container: String?
    /// The container's environment (`development`, `production`).
    public var environment: String?
    /// The share decided about: record name, zone and its owner's user record ID.
    public var share: SharedRecord?
    /// The request as the policies saw it, as JSON (`PolicyInput`), `policies.mask` applied.
    public var input: String?
    /// The dotted paths `policies.mask` erased from `input`.
    public var erased: [String] = []
    /// Each policy asked, in order, with its verdict.
    public var consulted: [Consulted] = []
    /// The process that decided (`host:pid`, or the node's name).
    public var node: String?
    /// What the candidate policies in shadow mode decided (SPEC §18 P6), nil without them.
    public var shadow: ShadowVerdict?

    /// A share as the log names it.
    public struct SharedRecord: Sendable, Equatable {
        /// The share's record name.
        public var recordName: String
        /// Its zone's name.
        public var zoneName: String
        /// Its zone's owner (user record ID).
        public var ownerName: String
        /// A share named by its record, zone and owner.
        public init(recordName: String, zoneName: String, ownerName: String) {
            (self.recordName, self.zoneName, self.ownerName) = (recordName, zoneName, ownerName)
        }
    }

    /// One policy's verdict in a decision: `allow`, `deny`, `approve` or `error` (a policy that
    /// failed denies); `location` is `file:line` of the return that decided — of the
    /// `sf.deny`/`sf.approve` call, else where the function begins.
    public struct Consulted: Sendable, Equatable {
        /// The policy's name (`plugin/name`).
        public var policy: String
        /// `allow`, `deny`, `approve` or `error`.
        public var verdict: String
        /// Why, for any verdict but `allow`.
        public var reason: String?
        /// `file:line` of the return that decided.
        public var location: String?
        /// A policy's verdict.
        public init(policy: String, verdict: String, reason: String? = nil, location: String? = nil) {
            (self.policy, self.verdict, self.reason, self.location) = (policy, verdict, reason, location)
        }
    }

    /// The shadow set's verdict beside the live one.
    public struct ShadowVerdict: Sendable, Equatable {
        /// Whether the candidates would have allowed.
        public var allow: Bool
        /// The candidate policy that denied.
        public var policy: String?
        /// Its reason, or why the candidates failed.
        public var reason: String?
        /// The candidates' verdict.
        public init(allow: Bool, policy: String?, reason: String?) { (self.allow, self.policy, self.reason) = (allow, policy, reason) }
    }

    package init(id: Int, point: String, policies: [String], allow: Bool, reasons: [String], duration: Double, time: Date) {
        (self.id, self.point, self.policies, self.allow, self.reasons, self.duration, self.time) = (
            id, point, policies, allow, reasons, duration, time
        )
    }

    /// The same decision under another ID (the row the shared log wrote it as).
    package func numbered(_ id: Int) -> PolicyDecision {
        var copy = PolicyDecision(id: id, point: point, policies: policies, allow: allow, reasons: reasons, duration: duration, time: time)
        copy.caller = caller
        copy.container = container
        copy.environment = environment
        copy.share = share
        copy.input = input
        copy.erased = erased
        copy.consulted = consulted
        copy.node = node
        copy.shadow = shadow
        return copy
    }
}

/// Which logged decisions to read (SPEC §18 P3: `shareflow decisions`, `sf.decisions{}`).
public struct DecisionFilter: Sendable {
    /// At most this many, the latest (1 to `maxLimit`).
    public var limit = 20
    /// Only this decision point's.
    public var point: String?
    /// Only denials.
    public var denied = false
    /// Only decisions made at or after this time.
    public var since: Date?
    /// Only decisions where the shadow candidates disagreed with the live verdict (P6).
    public var shadowFlips = false
    /// Only this caller's (user record ID).
    public var caller: String?
    /// The most a read returns: the log keeps no more by default.
    public static let maxLimit = 10_000

    /// A filter; every part optional.
    public init(limit: Int = 20, point: String? = nil, denied: Bool = false, since: Date? = nil, shadowFlips: Bool = false, caller: String? = nil) {
        (self.limit, self.point, self.denied, self.since, self.shadowFlips, self.caller) = (limit, point, denied, since, shadowFlips, caller)
    }

    /// Whether `d` is one the filter selects.
    public func selects(_ d: PolicyDecision) -> Bool {
        if let point, d.point != point { return false }
        if denied, d.allow { return false }
        if let since, d.time < since { return false }
        if shadowFlips, d.shadow.map({ $0.allow == d.allow }) ?? true { return false }
        if let caller, d.caller != caller { return false }
        return true
    }

    /// `T` of `--since T`: an ISO 8601 time, or an age (`90s`, `10m`, `2h`, `3d`) before `now`.
    /// Nil for anything else; an age is at most 100 years.
    public static func time(_ text: String, now: Date = Date()) -> Date? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let unit = text.last.flatMap({ units[$0] }), let n = Double(text.dropLast()), n.isFinite, n >= 0, n * unit <= 100 * 365 * 86_400 {
            return now.addingTimeInterval(-n * unit)
        }
        let iso = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime], [.withFullDate]] {
            iso.formatOptions = options
            if let date = iso.date(from: text) { return date }
        }
        return nil
    }
}

/// The policies at the four decision points, and the log of every decision they made.
/// The first denial in priority order decides; a policy that throws denies (fail-closed).
///
/// ```swift
/// let id = engine.policies.add(.participantAdd, name: "small-shares", priority: 10) { request in
///     let count = try request.share?.participants.count ?? 0
///     return count < 10 ? .allow : .deny("at most 10 participants")
/// }
/// for decision in engine.policies.decisions(limit: 5) { print(decision.point, decision.allow, decision.reasons) }
/// engine.policies.remove(id: id)
/// ```
public final class PolicySet: @unchecked Sendable {
    /// A policy. What it throws denies (fail-closed, SPEC §6), but `serviceUnavailable`: the store
    /// was busy or away, no decision is made or logged, and the request fails to be retried (503).
    public typealias Policy = (PolicyRequest) throws -> PolicyVerdict
    /// Every decision point's name, as scripts name them.
    public static let points = DecisionPoint.allCases.map(\.name)

    struct Entry {
        let id: Int
        let name: String
        let priority: Int
        let body: Policy
        /// Where the policy's function begins (`file:line`), for the decision log.
        var location: String? = nil
    }

    /// One decision point's policies in the order they are asked, and their names (kept
    /// beside them so a decision that asks all of them logs the names without copying).
    /// Immutable, replaced whole on a change: a decision holds one reference and reads the
    /// rest in place, and a policy that adds or removes policies does not disturb it.
    final class Point {
        let entries: [Entry]
        /// The names, apart from the policies' closures: what the decision log keeps. A log
        /// holding the point itself held every closure of it (and what they capture) after
        /// the policy was removed — a policy's closure holding its engine was a cycle.
        let label: Label
        var name: String { label.point }
        var names: [String] { label.policies }
        init(_ name: String, _ entries: [Entry]) {
            self.entries = entries
            self.label = Label(point: name, policies: entries.map(\.name), locations: entries.map(\.location))
        }
    }

    /// A decision point's name and its policies' names.
    final class Label {
        let point: String
        let policies: [String]
        let locations: [String?]
        init(point: String, policies: [String], locations: [String?]) {
            self.point = point
            self.policies = policies
            self.locations = locations
        }
    }

    /// By `DecisionPoint.rawValue`.
    @exclusivity(unchecked) private var points: [Point] = DecisionPoint.allCases.map { Point($0.name, []) }

    private func update(_ change: (inout [Entry]) -> Void) {
        for i in points.indices {
            var entries = points[i].entries
            change(&entries)
            points[i] = Point(points[i].name, entries)
        }
    }
    private var nextID = 0
    @exclusivity(unchecked) private var log: [LoggedDecision] = []

    /// A decision as the log keeps it, made into a `PolicyDecision` only when read: the point
    /// as it was (its name and its policies' names, one reference) and the clock readings.
    /// Building the `PolicyDecision` on every decision retained the point's name and the names
    /// array apiece, and later released both, on the path of every accept (SPEC §12).
    private struct LoggedDecision {
        let id: Int
        let point: Label
        let asked: Int
        /// "policy: reason" of the denial; nil when allowed.
        let denial: String?
        let start: UInt64
        let end: UInt64
        /// "policy: approved …" of an approval (SPEC §17); nil otherwise.
        var approval: String? = nil
        /// The request's objects, which hold the whole question (`PolicyRequest.Objects.request`),
        /// until `publish` wrote what the log keeps of it (SPEC §18 P3): one reference taken at
        /// the decision, the JSON made after it, outside the timed path.
        var objects: PolicyRequest.Objects? = nil
        /// What is rare on the path of an accept, boxed so the log's entries stay small.
        var more: More? = nil
    }

    /// A logged decision's verdict, shadow verdict and what `publish` made of its request.
    private final class More {
        /// The deciding policy's verdict: `deny`, `error` or `approve`, its reason and where it
        /// returned (the rest of those asked allowed).
        var verdict: (index: Int, kind: StaticString, reason: String, location: String?)?
        var detail: Detail?
        var shadow: PolicyDecision.ShadowVerdict?
        init(verdict: (index: Int, kind: StaticString, reason: String, location: String?)?) { self.verdict = verdict }
    }

    /// What the log keeps of a decision's request.
    private struct Detail {
        var caller: String?
        var container: String?
        var environment: String?
        var share: PolicyDecision.SharedRecord?
        var input: String
        var erased: [String]
    }
    @exclusivity(unchecked) private var nextDecision = 0
    /// Wall-clock time at a monotonic instant: a decision's time is derived from the
    /// monotonic clock it already reads for its duration.
    private let epoch = (wall: Date(), uptime: PolicySet.monotonicNanoseconds())
    /// How many decisions the log keeps.
    @exclusivity(unchecked) public var logCapacity = 1000

    /// Adds a policy at `point`, asked after those of equal or higher priority already there;
    /// returns the id `remove(id:)` takes. `name` is what decisions and denials show, and what
    /// `removeAll(namePrefix:)` matches (a plugin's policies are named `<plugin>/<name>`).
    @discardableResult
    public func add(_ point: DecisionPoint, name: String, priority: Int = 0, location: String? = nil, _ body: @escaping Policy) -> Int {
        nextID += 1
        let entry = Entry(id: nextID, name: name, priority: priority, body: body, location: location)
        var list = points[point.rawValue].entries
        let index = list.firstIndex { $0.priority < priority } ?? list.endIndex
        list.insert(entry, at: index)
        points[point.rawValue] = Point(point.name, list)
        return nextID
    }

    /// Removes the policy `add` returned `id` for; an unknown id does nothing.
    public func remove(id: Int) {
        update { $0.removeAll { $0.id == id } }
    }

    /// Removes every policy whose name starts with `prefix` (a plugin being unloaded).
    public func removeAll(namePrefix prefix: String) {
        update { $0.removeAll { $0.name.hasPrefix(prefix) } }
    }

    /// Policies taken out by `detach(namePrefix:)`, to be put back as they were.
    public struct Detached {
        fileprivate let entries: [(point: Int, entry: Entry)]
    }

    /// Takes out every policy whose name starts with `prefix`, keeping them to put back: while
    /// a plugin's new version loads, and for good only once it has loaded (SPEC §18 P1: a
    /// reload that fails never leaves its decisions to nobody).
    public func detach(namePrefix prefix: String) -> Detached {
        var taken: [(point: Int, entry: Entry)] = []
        for i in points.indices {
            taken += points[i].entries.filter { $0.name.hasPrefix(prefix) }.map { (i, $0) }
        }
        removeAll(namePrefix: prefix)
        return Detached(entries: taken)
    }

    /// Puts detached policies back in the order they were asked: by priority, then by when
    /// they were added.
    public func reattach(_ detached: Detached) {
        for (index, group) in Dictionary(grouping: detached.entries, by: \.point) {
            let merged = (points[index].entries + group.map(\.entry)).sorted {
                $0.priority != $1.priority ? $0.priority > $1.priority : $0.id < $1.id
            }
            points[index] = Point(points[index].name, merged)
        }
    }

    /// Whether `point` has a policy: without one the engine asks nothing and logs no decision.
    public func hasPolicies(_ point: DecisionPoint) -> Bool { !points[point.rawValue].entries.isEmpty }

    /// An approval a `share.requestAccess` policy gave (SPEC §17): which policy, and what the
    /// requester gets.
    struct Approval {
        let policy: String
        let permission: ParticipantPermission
        let role: ParticipantRole
    }

    /// Asks every policy at the request's point; throws `permissionFailure` on denial. Returns
    /// the first approval (`share.requestAccess`) when none denied.
    /// Set by a policy's host when its verdict knows the line it came from (`sf.deny` and
    /// `sf.approve` calls): read and cleared after each policy.
    @exclusivity(unchecked) package var verdictLocation: String?
    /// Whether decisions keep their request for the log (SPEC §18 P3); off, a decision costs
    /// a little less and logs no input.
    @exclusivity(unchecked) public var captureInputs = true
    /// Dotted paths into a decision's input erased before it is logged (`policies.mask`).
    @exclusivity(unchecked) public var mask: [String] = []
    /// The name the log gives this process (`host:pid` unless set).
    public var node = PolicySet.defaultNode
    static let defaultNode = "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"
    /// Candidate policies asked beside the live ones, never deciding (SPEC §18 P6 shadow
    /// mode): asked with the same request after the live decision, their verdict logged.
    @exclusivity(unchecked) public var shadow: PolicySet?
    /// Whether this is a candidate set: its decisions go to no log.
    @exclusivity(unchecked) private var isShadow = false

    /// The candidate set (shadow mode), made on first use: where a shadow plugin's policies go.
    public var candidates: PolicySet {
        if let shadow { return shadow }
        let made = PolicySet()
        made.isShadow = true
        made.captureInputs = false
        shadow = made
        return made
    }
    /// While above 0, decisions go to no log (`Engine.withoutChanges`: eval and replay).
    @exclusivity(unchecked) public var silenced = 0
    /// Index in `log` of the first decision `publish` has not seen.
    @exclusivity(unchecked) private var unpublished = 0

    /// Asks every policy at the request's point; throws `permissionFailure` on denial. Returns
    /// the first approval (`share.requestAccess`) when none denied.
    @discardableResult
    func check(_ request: PolicyRequest, item: String) throws -> Approval? {
        let point = points[request.point.rawValue]
        guard !point.entries.isEmpty else { return nil }
        let outcome = try decide(request, point: point)
        if let shadow, !isShadow, !shadow.points[request.point.rawValue].entries.isEmpty {
            // The candidate never decides: its verdict (or its failure) is noted, nothing more.
            let candidate = try? shadow.decide(request, point: shadow.points[request.point.rawValue], logging: false)
            let more = log[log.count - 1].more ?? More(verdict: nil)
            log[log.count - 1].more = more
            more.shadow = PolicyDecision.ShadowVerdict(
                allow: candidate.map { $0.denial == nil } ?? false,
                policy: candidate?.denial?.policy,
                reason: candidate.map { $0.denial?.reason } ?? "the candidate policies failed"
            )
        }
        if let denial = outcome.denial {
            let denied = ShareFlowError.denied("\(item): denied by policy '\(denial.policy)' at \(request.point.name): \(denial.reason)")
            // A policy's own failure (an error, its budget spent) names its plugin's file,
            // line and traceback: the operator's, in the log; a client reads who denied.
            guard let failed = outcome.failed else { throw denied }
            throw denied.forOperator(
                outage: false,
                client: "\(item): denied by policy '\(denial.policy)' at \(request.point.name): the policy failed: \(failed)"
            )
        }
        return outcome.approval
    }

    /// What asking a point's policies came to.
    struct Outcome {
        var denial: (policy: String, reason: String)?
        var failed: String?
        var approval: Approval?
        var asked: Int
        var verdict: (index: Int, kind: StaticString, reason: String, location: String?)?
    }

    /// Asks `point`'s policies in order; the first denial ends it. `logging`: the decision goes
    /// to the log (not a shadow set's, nor `evaluate`'s).
    func decide(_ request: PolicyRequest, point: Point, logging: Bool = true) throws -> Outcome {
        let start = PolicySet.monotonicNanoseconds()
        var outcome = Outcome(asked: 0)
        // By index: the point keeps its entries alive, so none is copied out (and retained).
        for i in point.entries.indices {
            outcome.asked += 1
            verdictLocation = nil
            do {
                switch try point.entries[i].body(request) {
                case .allow: break
                case .deny(let reason):
                    outcome.denial = (point.entries[i].name, reason)
                    outcome.verdict = (i, "deny", reason, verdictLocation ?? point.entries[i].location)
                case .approve(let permission, let role):
                    // Fail closed: an approval anywhere else is the policy's mistake.
                    guard request.point == .shareRequestAccess else {
                        let why = "sf.approve is share.requestAccess's verdict, not \(request.point.name)'s"
                        outcome.denial = (point.entries[i].name, "policy failed: \(why)")
                        outcome.failed = why
                        outcome.verdict = (i, "error", "policy failed: \(why)", verdictLocation ?? point.entries[i].location)
                        break
                    }
                    if outcome.approval == nil {
                        outcome.approval = Approval(policy: point.entries[i].name, permission: permission, role: role)
                        outcome.verdict = (
                            i, "approve", "approved as \(role.rawValue) with \(permission.rawValue)", verdictLocation ?? point.entries[i].location
                        )
                    }
                }
            } catch let e as ShareFlowError where e.code == .serviceUnavailable {
                // The store was busy or away for the policy: no decision was made, and the
                // request fails to be retried (503), not denied for good.
                throw e
            } catch {
                outcome.denial = (point.entries[i].name, "policy failed: \(error)")
                outcome.failed = ShareFlowError.clientLine(of: error)
                outcome.verdict = (i, "error", "policy failed: \(outcome.failed!)", point.entries[i].location)
            }
            if outcome.denial != nil { break }
        }
        let end = PolicySet.monotonicNanoseconds()
        guard logging, !isShadow, silenced == 0 else { return outcome }
        nextDecision += 1
        // The point's names (one reference) go into the log, never its closures.
        log.append(
            LoggedDecision(
                id: nextDecision,
                point: point.label,
                asked: outcome.asked,
                denial: outcome.denial.map { "\($0.policy): \($0.reason)" },
                start: start,
                end: end,
                approval: outcome.denial == nil
                    ? outcome.approval.map {
                        "\($0.policy): approved as \($0.role.rawValue) with \($0.permission.rawValue), with the owner's authority"
                    }
                    : nil,
                objects: captureInputs ? request.objects : nil,
                more: outcome.verdict.map { More(verdict: $0) }
            )
        )
        if captureInputs, request.point != .shareAccept {
            // A save's shares are made now, before the change: the log asks again from them.
            // (An accept's share is its metadata's, made before the decision.)
            _ = try? request.objects.share
            _ = try? request.objects.changes
        }
        return outcome
    }

    /// Hands the decisions made since the last call to the shared log, their inputs turned
    /// into JSON (SPEC §18 P3). The engine calls it once a transaction is over: the work is
    /// outside the decision and outside the write.
    public func publish() {
        guard unpublished < log.count else { return }
        for i in unpublished..<log.count {
            if let request = log[i].objects?.request {
                let more = log[i].more ?? More(verdict: nil)
                more.detail = detail(of: request)
                log[i].more = more
                log[i].objects = nil
            }
            if let sharedLog { sharedLog.add(decision(log[i])) }
        }
        // Trim in halves: amortised O(1) per decision instead of shifting the log each time.
        if log.count > 2 * logCapacity { log.removeFirst(log.count - logCapacity) }
        unpublished = log.count
    }

    private func detail(of request: PolicyRequest) -> Detail {
        let object = PolicyInput.object(of: request)
        let (masked, erased) = PolicyInput.masked(object, mask)
        var share: PolicyDecision.SharedRecord?
        if let s = (object["share"] ?? object["proposed"]) as? [String: Any], let name = s["recordName"] as? String {
            share = PolicyDecision.SharedRecord(
                recordName: name,
                zoneName: s["zoneName"] as? String ?? "",
                ownerName: s["ownerName"] as? String ?? ""
            )
        }
        return Detail(
            caller: request.caller?.userRecordID,
            container: request.container,
            environment: request.objects.environment ?? request.objects.metadata?.environment.rawValue,
            share: share,
            input: PolicyInput.loggedText(masked),
            // A URL is never logged: a mask naming one erased nothing the log would keep.
            erased: erased.filter { $0.split(separator: ".").last.map(String.init) != PolicyInput.neverLogged }
        )
    }

    /// Asks the policies at `request.point` without logging or changing anything (SPEC §18 P4:
    /// `policy eval`, `sf.policies.evaluate`): the decision as the log would show it.
    public func evaluate(_ request: PolicyRequest) -> PolicyDecision {
        let point = points[request.point.rawValue]
        let start = PolicySet.monotonicNanoseconds()
        let outcome: Outcome
        do {
            outcome = try decide(request, point: point, logging: false)
        } catch {
            outcome = Outcome(denial: ("(store)", "\(error)"), failed: "\(error)", asked: 0, verdict: (0, "error", "\(error)", nil))
        }
        let end = PolicySet.monotonicNanoseconds()
        let logged = LoggedDecision(
            id: 0,
            point: point.label,
            asked: outcome.asked,
            denial: outcome.denial.map { "\($0.policy): \($0.reason)" },
            start: start,
            end: end,
            approval: outcome.denial == nil ? outcome.approval.map { "\($0.policy): approved" } : nil,
            more: {
                let more = More(verdict: outcome.verdict)
                more.detail = detail(of: request)
                return more
            }()
        )
        return decision(logged)
    }

    /// The monotonic clock read directly (DispatchTime adds a conversion on each read).
    static func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// The most recent decisions, oldest first: of every process on the store (the shared log;
    /// this process's own in memory, or if the store cannot be read).
    /// At most `logCapacity` of this process's, or what the shared log keeps;
    /// none for a limit below 1.
    /// The latest decisions `filter` selects, oldest first: of every process on the store (the
    /// shared log; this process's own in memory, or if the store cannot be read).
    public func decisions(_ filter: DecisionFilter) -> [PolicyDecision] {
        guard filter.limit > 0 else { return [] }
        // Only a limit: the log's cached read (a plugin asking in a loop reads it once).
        if filter.point == nil, !filter.denied, filter.since == nil, !filter.shadowFlips, filter.caller == nil {
            return decisions(limit: filter.limit)
        }
        publish()
        if let sharedLog, let shared = sharedLog.latest(filter) { return shared }
        var found: [PolicyDecision] = []
        for d in log.reversed() {
            let made = decision(d)
            if filter.selects(made) { found.append(made) }
            if found.count >= filter.limit { break }
        }
        return found.reversed()
    }

    /// The latest `limit` decisions, oldest first (`decisions(_:)` with only a limit).
    public func decisions(limit: Int = 20) -> [PolicyDecision] {
        guard limit > 0 else { return [] }
        publish()
        if let sharedLog, let shared = sharedLog.latest(limit: min(limit, sharedLog.kept)) { return shared }
        return log.suffix(min(limit, logCapacity)).map(decision)
    }

    /// The log every process on the store shares, which gets every decision too (`Engine`
    /// sets it from `Store.decisionLog`). It knows nothing of the policy set.
    @exclusivity(unchecked) package var sharedLog: (any SharedDecisionLog)?

    private func decision(_ d: LoggedDecision) -> PolicyDecision {
        let names = d.asked == d.point.policies.count ? d.point.policies : Array(d.point.policies.prefix(d.asked))
        var decision = PolicyDecision(
            id: d.id,
            point: d.point.point,
            policies: names,
            allow: d.denial == nil,
            reasons: d.denial.map { [$0] } ?? d.approval.map { [$0] } ?? [],
            duration: Double(d.end - d.start) / 1e9,
            time: epoch.wall.addingTimeInterval(Double(d.end - epoch.uptime) / 1e9)
        )
        decision.consulted = names.indices.map { i in
            if let v = d.more?.verdict, v.index == i {
                return PolicyDecision.Consulted(policy: names[i], verdict: v.kind.description, reason: v.reason, location: v.location)
            }
            return PolicyDecision.Consulted(policy: names[i], verdict: "allow", location: d.point.locations[i])
        }
        if let detail = d.more?.detail {
            decision.caller = detail.caller
            decision.container = detail.container
            decision.environment = detail.environment
            decision.share = detail.share
            decision.input = detail.input
            decision.erased = detail.erased
        }
        decision.node = node
        decision.shadow = d.more?.shadow
        return decision
    }
}
