import Foundation

/// A container (`iCloud.com.example.app`) in one environment as one session sees it: its three
/// databases and its operation queue.
///
/// ```swift
/// let container = try engine.session(for: "alice@example.com").container("iCloud.com.example.app")
/// let trips = try container.privateCloudDatabase.saveZone("Trips")
/// let shared = try container.database(.shared).fetchAllRecordZones()   // zones of the shares Alice accepted
/// ```
public final class Container {
    /// The session the container acts as: the caller of everything done through it (O1).
    public let session: Session
    /// The container's identifier, e.g. `iCloud.com.example.app`.
    public let containerIdentifier: String
    /// Which data set it reads and writes (R32).
    public let environment: CloudEnvironment
    /// The container identifier and environment: what the store keys its data by.
    public var containerID: ContainerID { ContainerID(containerIdentifier, environment) }
    // A database keeps its container alive (it may outlive the caller's reference to it), so
    // the container does not keep its databases: they are small views, made on demand.
    /// The caller's own database: their zones and records, and where their shares are made (R3).
    public var privateCloudDatabase: CloudDatabase { CloudDatabase(container: self, scope: .private) }
    /// The zones of other users' shares the caller accepted, as far as each share reaches (R12).
    public var sharedCloudDatabase: CloudDatabase { CloudDatabase(container: self, scope: .shared) }
    /// The container's public database: one default zone, read by everyone, each record changed by its
    /// creator only (R30).
    public var publicCloudDatabase: CloudDatabase { CloudDatabase(container: self, scope: .public) }
    /// Where the operations layer keeps this container's queue (`queue`, Operations/): the
    /// engine holds it without knowing its type, so its folder depends on no operation.
    var operationQueue: AnyObject?

    init(session: Session, identifier: String, environment: CloudEnvironment) {
        self.session = session
        self.containerIdentifier = identifier
        self.environment = environment
    }

    var engine: Engine { session.engine }

    /// The database of `scope`, as the three properties give it.
    public func database(_ scope: DatabaseScope) -> CloudDatabase {
        switch scope {
        case .private: return privateCloudDatabase
        case .shared: return sharedCloudDatabase
        case .public: return publicCloudDatabase
        }
    }
}
