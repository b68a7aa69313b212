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

    /// Read when first asked for; a store that cannot be read then throws (an outage a policy
    /// meets fails the request as that outage, not as a denial).
    public var share: Share? { get throws { try objects.share } }
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
        to: String? = nil
    ) {
        self.init(
            point: point,
            caller: caller,
            container: container,
            objects: Objects(share: { share }, participant: { participant }, metadata: metadata),
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
        private var deferredShare: Deferred<Share>
        private var deferredParticipant: Deferred<Participant>

        /// `share` and `participant` run at most once, on first read; what one throws is kept and
        /// thrown again on every read.
        public init(share: @escaping () throws -> Share?, participant: @escaping () throws -> Participant?, metadata: ShareMetadata?) {
            deferredShare = Deferred(share)
            deferredParticipant = Deferred(participant)
            self.metadata = metadata
        }

        /// The share, made on first read (a store read that may throw).
        public var share: Share? { get throws { try deferredShare.value() } }
        /// The participant, made on first read (a store read that may throw).
        public var participant: Participant? { get throws { try deferredParticipant.value() } }
    }

    /// A value made by `make` the first time it is asked for, then kept (or its failure).
    private struct Deferred<Value> {
        private var make: (() throws -> Value?)?
        private var made: Result<Value?, Error> = .success(nil)
        init(_ make: @escaping () throws -> Value?) { self.make = make }
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

/// One entry of the decision log.
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

    package init(id: Int, point: String, policies: [String], allow: Bool, reasons: [String], duration: Double, time: Date) {
        (self.id, self.point, self.policies, self.allow, self.reasons, self.duration, self.time) = (
            id, point, policies, allow, reasons, duration, time
        )
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
            self.label = Label(point: name, policies: entries.map(\.name))
        }
    }

    /// A decision point's name and its policies' names.
    final class Label {
        let point: String
        let policies: [String]
        init(point: String, policies: [String]) {
            self.point = point
            self.policies = policies
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
    public func add(_ point: DecisionPoint, name: String, priority: Int = 0, _ body: @escaping Policy) -> Int {
        nextID += 1
        let entry = Entry(id: nextID, name: name, priority: priority, body: body)
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
    @discardableResult
    func check(_ request: PolicyRequest, item: String) throws -> Approval? {
        let point = points[request.point.rawValue]
        guard !point.entries.isEmpty else { return nil }
        let start = PolicySet.monotonicNanoseconds()
        var asked = 0
        var denial: (String, String)?
        var failed: String?
        var approval: Approval?
        // By index: the point keeps its entries alive, so none is copied out (and retained).
        for i in point.entries.indices {
            asked += 1
            do {
                switch try point.entries[i].body(request) {
                case .allow: break
                case .deny(let reason): denial = (point.entries[i].name, reason)
                case .approve(let permission, let role):
                    // Fail closed: an approval anywhere else is the policy's mistake.
                    guard request.point == .shareRequestAccess else {
                        denial = (point.entries[i].name, "policy failed: sf.approve is share.requestAccess's verdict, not \(request.point.name)'s")
                        failed = "sf.approve is share.requestAccess's verdict, not \(request.point.name)'s"
                        break
                    }
                    if approval == nil { approval = Approval(policy: point.entries[i].name, permission: permission, role: role) }
                }
            } catch let e as ShareFlowError where e.code == .serviceUnavailable {
                // The store was busy or away for the policy: no decision was made, and the
                // request fails to be retried (503), not denied for good.
                throw e
            } catch {
                denial = (point.entries[i].name, "policy failed: \(error)")
                failed = ShareFlowError.clientLine(of: error)
            }
            if denial != nil { break }
        }
        let end = PolicySet.monotonicNanoseconds()
        nextDecision += 1
        // The point's names (one reference) go into the log, never its closures.
        log.append(
            LoggedDecision(
                id: nextDecision,
                point: point.label,
                asked: asked,
                denial: denial.map { "\($0.0): \($0.1)" },
                start: start,
                end: end,
                approval: denial == nil
                    ? approval.map { "\($0.policy): approved as \($0.role.rawValue) with \($0.permission.rawValue), with the owner's authority" }
                    : nil
            )
        )
        // The decision goes to the log every process on the store shares, too (SPEC §18 P3).
        if let sharedLog, let logged = log.last { sharedLog.add(decision(logged)) }
        // Trim in halves: amortised O(1) per decision instead of shifting the log each time.
        if log.count > 2 * logCapacity { log.removeFirst(log.count - logCapacity) }
        if let (name, reason) = denial {
            let denied = ShareFlowError.denied("\(item): denied by policy '\(name)' at \(request.point.name): \(reason)")
            // A policy's own failure (an error, its budget spent) names its plugin's file,
            // line and traceback: the operator's, in the log; a client reads who denied.
            guard let failed else { throw denied }
            throw denied.forOperator(
                outage: false,
                client: "\(item): denied by policy '\(name)' at \(request.point.name): the policy failed: \(failed)"
            )
        }
        return approval
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
    public func decisions(limit: Int = 20) -> [PolicyDecision] {
        guard limit > 0 else { return [] }
        if let sharedLog, let shared = sharedLog.latest(limit: min(limit, sharedLog.kept)) { return shared }
        return log.suffix(min(limit, logCapacity)).map(decision)
    }

    /// The log every process on the store shares, which gets every decision too (`Engine`
    /// sets it from `Store.decisionLog`). It knows nothing of the policy set.
    package var sharedLog: (any SharedDecisionLog)?

    private func decision(_ d: LoggedDecision) -> PolicyDecision {
        PolicyDecision(
            id: d.id,
            point: d.point.point,
            policies: d.asked == d.point.policies.count ? d.point.policies : Array(d.point.policies.prefix(d.asked)),
            allow: d.denial == nil,
            reasons: d.denial.map { [$0] } ?? d.approval.map { [$0] } ?? [],
            duration: Double(d.end - d.start) / 1e9,
            time: epoch.wall.addingTimeInterval(Double(d.end - epoch.uptime) / 1e9)
        )
    }
}
