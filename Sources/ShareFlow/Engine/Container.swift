import Foundation

/// A container (`iCloud.com.example.app`) in one environment as one session sees it: its three
/// databases and its operation queue.
public final class Container {
    public let session: Session
    public let containerIdentifier: String
    /// Which data set it reads and writes (R32).
    public let environment: CloudEnvironment
    /// The container identifier and environment: what the store keys its data by.
    public var containerID: ContainerID { ContainerID(containerIdentifier, environment) }
    // A database keeps its container alive (it may outlive the caller's reference to it), so
    // the container does not keep its databases: they are small views, made on demand.
    public var privateCloudDatabase: CloudDatabase { CloudDatabase(container: self, scope: .private) }
    public var sharedCloudDatabase: CloudDatabase { CloudDatabase(container: self, scope: .shared) }
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

    public func database(_ scope: DatabaseScope) -> CloudDatabase {
        switch scope {
        case .private: return privateCloudDatabase
        case .shared: return sharedCloudDatabase
        case .public: return publicCloudDatabase
        }
    }
}
