import Logging

/// Where what a client must not read goes: the detail of a failure the client got only an
/// incident ID for (a store's path, its PostgreSQL user, host and database). The operator finds
/// the line by the ID the client reports.
enum OperatorLog {
    static let logger = Logger(label: "shareflow.server")

    static func incident(_ id: String, _ detail: String) {
        logger.error("incident \(id): \(detail)")
    }
}
