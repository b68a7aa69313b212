/// One of a container's two data sets (R32). Zones, records, shares and share URLs of one are
/// invisible in the other; accounts and identities are shared.
public enum CloudEnvironment: String, Sendable, CaseIterable, CustomStringConvertible {
    case development, production

    /// What a caller gets without asking (R32): stores written before environments existed
    /// keep their data here.
    public static let `default` = CloudEnvironment.development

    /// `development` or `production`, as scripts and tokens name it.
    public var description: String { rawValue }

    /// The environment named `text`, or `invalidArguments` naming it and the two there are.
    public init(named text: String) throws {
        guard let environment = CloudEnvironment(rawValue: text) else {
            throw ShareFlowError.invalid("environment '\(Naming.printable(text))' is not development or production (R32)")
        }
        self = environment
    }
}

/// A container's data set: the container identifier and the environment (R32). Everything the
/// store keeps per container is keyed by both.
///
/// ```swift
/// let live = ContainerID("iCloud.com.example.app", .production)
/// print(live)                                   // iCloud.com.example.app (production)
/// ```
public struct ContainerID: Hashable, Sendable, CustomStringConvertible {
    /// The container identifier, e.g. `iCloud.com.example.app`.
    public let identifier: String
    /// Which of the container's two data sets (R32).
    public let environment: CloudEnvironment

    /// The data set of `identifier` in `environment` (development unless given).
    public init(_ identifier: String, _ environment: CloudEnvironment = .default) {
        self.identifier = identifier
        self.environment = environment
    }

    /// `identifier (environment)`, as errors name a container.
    public var description: String { "\(identifier) (\(environment))" }
}
