import Foundation

/// Something that happened in the engine, delivered to observers after it was committed
/// (SPEC §6). Only the fields of the event's kind are set.
///
/// ```swift
/// engine.events.observe(.shareAccepted) { event in
///     guard let share = event.share, let who = event.caller?.email else { return }
///     print("\(who) accepted \(share.title ?? share.recordID.recordName) in \(event.container ?? "?")")
/// }
/// ```
public struct Event {
    /// What happened; it decides which of the optional fields below are set (SPEC §6).
    public let kind: EventKind
    /// The event's name as scripts see it (`participant.fetched`).
    public var name: String { kind.name }
    /// The acting account (`caller` in events, SPEC §5); nil when the engine has none to name.
    public let caller: Account?
    /// `caller?.id`, kept apart: the Lua host reads it on every event to find the caller's
    /// userdata, and testing the optional `Account` itself copies its 152 bytes.
    package let callerID: Int64?
    /// The container's identifier, when the event has one.
    public let container: String?
    /// When the event was made: inside a transaction, before the commit that delivers it.
    public let time: Date
    /// `participant.added`, `participant.removed`, `participant.permissionChanged`, and every
    /// `share.*` event but `share.metadataFetched`: the share.
    public var share: Share?
    /// `participant.*`: the participant; `share.accepted`: the caller's own.
    public var participant: Participant?
    /// `participant.fetched`: what the participant was looked up by.
    public var lookupInfo: LookupInfo?
    /// `share.metadataFetched`, `share.accepted`: the share's metadata as the caller read it.
    public var metadata: ShareMetadata?
    /// `user.discovered`: the identity found.
    public var identity: UserIdentity? { didSet { hasIdentity = identity != nil } }
    /// `identity != nil`, kept apart: an optional `UserIdentity` is 152 bytes, and testing it
    /// copied it to the stack (three memcpy) on every event, though most carry none.
    package private(set) var hasIdentity = false
    /// `share.metadataFetched`: the share URL whose metadata was fetched.
    public var url: String?
    /// `participant.removed`: why, a `RemovalReason` raw value (`removedByOwner`).
    public var reason: String?
    /// `participant.permissionChanged`, `share.publicPermissionChanged`: the permission before
    /// (a `ParticipantPermission` raw value).
    public var from: String?
    /// `participant.permissionChanged`, `share.publicPermissionChanged`: the permission after.
    public var to: String?
    /// `share.saved`, `record.saved`: whether the save created it.
    public var created: Bool?
    /// `operation.finished`: the operation's type name (`FetchShareParticipantsOperation`).
    public var operation: String?
    /// `operation.finished`: how many items the operation was given.
    public var items: Int?
    /// `operation.finished`: how many items failed, the count of its error's `partialErrors`
    /// (0 without an error).
    public var failed: Int?
    /// `operation.finished`: seconds the operation took.
    public var duration: Double?
    /// `record.saved`: the record as saved (a read-only view in Lua).
    public var record: Record?
    /// `record.deleted`: what was deleted.
    public var recordID: RecordID?
    /// `record.deleted`: the deleted record's type.
    public var recordType: String?
    /// `zone.saved`, `zone.deleted`.
    public var zoneID: RecordZoneID?
    /// The record and zone events: the database's scope (`private`, `shared`, `public`).
    public var database: String?
    /// `fault.injected` (SPEC §15): what was injected, where and by which rule.
    public var injection: FaultInjection?
    /// The access-request events (SPEC §17): requesters, identities, participants removed.
    public var access: AccessEventDetails?
    /// `participant.added`: whether the participant was added by approving their request (R41).
    public var approvedRequester: Bool?
    /// `share.accepted`: true when accepted through a one-time link (R44).
    public var oneTimeURL: Bool?
    /// `subscription.fired` (SPEC §20): the subscription, its owner and the notification.
    public var firing: SubscriptionFiring?

    /// An event of `kind` stamped now, with none of its kind's fields set yet: the engine sets
    /// them, then emits it.
    public init(_ kind: EventKind, caller: Account?, container: String?) {
        self.kind = kind
        self.caller = caller
        self.callerID = caller?.id
        self.container = container
        self.time = EngineClock.now()
    }

    /// Every event name the engine emits.
    public static let names = EventKind.allCases.map(\.name)
}

/// The kinds of event the engine emits (SPEC §6). A closed set, so observers are found by
/// index rather than by hashing a name on every event.
///
/// ```swift
/// let kind = EventKind(name: "share.accepted")   // .shareAccepted
/// let name = EventKind.recordSaved.name           // "record.saved"
/// ```
public enum EventKind: Int, CaseIterable, Sendable, NamedByLiteral {
    /// `participant.fetched`, `participant.added`, `participant.removed`, `participant.permissionChanged`.
    case participantFetched, participantAdded, participantRemoved, participantPermissionChanged
    /// `share.saved`, `share.deleted`, `share.publicPermissionChanged`, `share.metadataFetched`.
    case shareSaved, shareDeleted, sharePublicPermissionChanged, shareMetadataFetched
    /// `share.accepted`, `user.discovered`, `operation.finished`.
    case shareAccepted, userDiscovered, operationFinished
    /// `record.saved`, `record.deleted`, `zone.saved`, `zone.deleted`: data changes.
    case recordSaved, recordDeleted, zoneSaved, zoneDeleted
    /// `fault.injected` (SPEC §15).
    case faultInjected
    /// `share.accessRequested`, `share.accessRequestDropped`, `share.requestersDenied`,
    /// `share.requestersBlocked`, `share.identitiesUnblocked` (SPEC §17).
    case shareAccessRequested, shareAccessRequestDropped, shareRequestersDenied, shareRequestersBlocked, shareIdentitiesUnblocked
    /// `participant.roleChanged` (R26).
    case participantRoleChanged
    /// `subscription.fired` (SPEC §20).
    case subscriptionFired

    /// The event's name as scripts see it (`participant.fetched`).
    public var staticName: StaticString {
        switch self {
        case .participantFetched: "participant.fetched"
        case .participantAdded: "participant.added"
        case .participantRemoved: "participant.removed"
        case .participantPermissionChanged: "participant.permissionChanged"
        case .shareSaved: "share.saved"
        case .shareDeleted: "share.deleted"
        case .sharePublicPermissionChanged: "share.publicPermissionChanged"
        case .shareMetadataFetched: "share.metadataFetched"
        case .shareAccepted: "share.accepted"
        case .userDiscovered: "user.discovered"
        case .operationFinished: "operation.finished"
        case .recordSaved: "record.saved"
        case .recordDeleted: "record.deleted"
        case .zoneSaved: "zone.saved"
        case .zoneDeleted: "zone.deleted"
        case .faultInjected: "fault.injected"
        case .shareAccessRequested: "share.accessRequested"
        case .shareAccessRequestDropped: "share.accessRequestDropped"
        case .shareRequestersDenied: "share.requestersDenied"
        case .shareRequestersBlocked: "share.requestersBlocked"
        case .shareIdentitiesUnblocked: "share.identitiesUnblocked"
        case .participantRoleChanged: "participant.roleChanged"
        case .subscriptionFired: "subscription.fired"
        }
    }
}

/// A closed set of cases named by string literals (event kinds, decision points), so the
/// bindings can push a name without copying it.
public protocol NamedByLiteral: CaseIterable {
    /// The name as a literal.
    var staticName: StaticString { get }
}

extension NamedByLiteral {
    /// The name as scripts see it (`participant.fetched`).
    public var name: String { staticName.description }

    /// The case named `name`, if any.
    public init?(name: String) {
        guard let found = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = found
    }
}

/// Why a participant left a share (`participant.removed`'s `reason`):
///
/// - `removedByOwner`: a save of the share left them out (its owner, or an administrator).
/// - `left`: they deleted the share from their shared database (R14).
/// - `publicPermissionChanged`: the public permission changed: to `none` removes all but the owner, to another the
///   pending participants.
/// - `shareDeleted`: the share was deleted, by its owner or with its root record (R13, R14).
/// - `blocked`: the owner or an administrator blocked their identity (R41).
/// - `expired`: never given by the engine itself; a caller of `Engine.removeParticipant(_:reason:)` gives it
///   (`sf.admin.removeParticipant`, the expiring-invitations plugin).
public enum RemovalReason: String, Sendable {
    case removedByOwner, left, publicPermissionChanged, shareDeleted, blocked, expired
}

/// What `subscription.fired` carries (SPEC §20): a class, so an event without one stays small.
public final class SubscriptionFiring: Sendable {
    /// The subscription that fired.
    public let subscription: Subscription
    /// Its owner, who is told.
    public let owner: Account
    /// The notification queued for them.
    public let notification: SubscriptionNotification

    init(subscription: Subscription, owner: Account, notification: SubscriptionNotification) {
        self.subscription = subscription
        self.owner = owner
        self.notification = notification
    }
}
