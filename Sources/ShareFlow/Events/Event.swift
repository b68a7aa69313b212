import Foundation

/// Something that happened in the engine, delivered to observers after it was committed
/// (SPEC §6). Only the fields of the event's kind are set.
public struct Event {
    public let kind: EventKind
    /// The event's name as scripts see it (`participant.fetched`).
    public var name: String { kind.name }
    public let caller: Account?
    /// `caller?.id`, kept apart: the Lua host reads it on every event to find the caller's
    /// userdata, and testing the optional `Account` itself copies its 152 bytes.
    package let callerID: Int64?
    public let container: String?
    public let time: Date
    public var share: Share?
    public var participant: Participant?
    public var lookupInfo: LookupInfo?
    public var metadata: ShareMetadata?
    public var identity: UserIdentity? { didSet { hasIdentity = identity != nil } }
    /// `identity != nil`, kept apart: an optional `UserIdentity` is 152 bytes, and testing it
    /// copied it to the stack (three memcpy) on every event, though most carry none.
    package private(set) var hasIdentity = false
    public var url: String?
    public var reason: String?
    public var from: String?
    public var to: String?
    public var created: Bool?
    public var operation: String?
    public var items: Int?
    public var failed: Int?
    public var duration: Double?
    /// `record.saved`: the record as saved (a read-only view in Lua).
    public var record: Record?
    /// `record.deleted`: what was deleted.
    public var recordID: RecordID?
    public var recordType: String?
    /// `zone.saved`, `zone.deleted`.
    public var zoneID: RecordZoneID?
    /// The record and zone events: the database's scope (`private`, `shared`, `public`).
    public var database: String?
    /// `fault.injected` (SPEC §15): what was injected, where and by which rule.
    public var injection: FaultInjection?

    public init(_ kind: EventKind, caller: Account?, container: String?) {
        self.kind = kind
        self.caller = caller
        self.callerID = caller?.id
        self.container = container
        self.time = Date()
    }

    /// Every event name the engine emits.
    public static let names = EventKind.allCases.map(\.name)
}

/// The kinds of event the engine emits (SPEC §6). A closed set, so observers are found by
/// index rather than by hashing a name on every event.
public enum EventKind: Int, CaseIterable, Sendable, NamedByLiteral {
    case participantFetched, participantAdded, participantRemoved, participantPermissionChanged
    case shareSaved, shareDeleted, sharePublicPermissionChanged, shareMetadataFetched
    case shareAccepted, userDiscovered, operationFinished
    case recordSaved, recordDeleted, zoneSaved, zoneDeleted
    case faultInjected

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

/// Why a participant left a share (`participant.removed`'s `reason`).
public enum RemovalReason: String, Sendable {
    case removedByOwner, left, publicPermissionChanged, shareDeleted, expired
}
