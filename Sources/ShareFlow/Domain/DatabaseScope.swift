/// Which of a container's databases.
public enum DatabaseScope: String, Sendable, CaseIterable {
    case `private`, shared, `public`
}
