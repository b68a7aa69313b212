import Foundation

/// Something that happened in the engine, delivered to observers after it was committed
/// (SPEC §6). Only the fields of the event's kind are set.
public struct Event {
    public let name: String
    public let caller: Account?
    public let container: String?
    public let time: Date
    public var share: Share?
    public var participant: Participant?
    public var lookupInfo: LookupInfo?
    public var metadata: ShareMetadata?
    public var identity: UserIdentity?
    public var url: String?
    public var reason: String?
    public var from: String?
    public var to: String?
    public var created: Bool?
    public var operation: String?
    public var items: Int?
    public var failed: Int?
    public var duration: Double?

    public init(_ name: String, caller: Account?, container: String?) {
        self.name = name
        self.caller = caller
        self.container = container
        self.time = Date()
    }

    /// Every event name the engine emits.
    public static let names = [
        "participant.fetched", "participant.added", "participant.removed", "participant.permissionChanged",
        "share.saved", "share.deleted", "share.publicPermissionChanged", "share.metadataFetched",
        "share.accepted", "user.discovered", "operation.finished",
    ]
}

/// Why a participant left a share (`participant.removed`'s `reason`).
public enum RemovalReason: String, Sendable {
    case removedByOwner, left, publicPermissionChanged, shareDeleted, expired
}
