import Foundation
import Logging

/// Where what a client must not read goes: the detail of a failure the client got only an
/// incident ID for (a store's path, its PostgreSQL user, host and database). The operator finds
/// the line by the ID the client reports.
enum OperatorLog {
    static let logger = Logger(label: "shareflow.server")

    static func incident(_ id: String, _ detail: String) {
        let line = "incident \(id): \(detail)"
        if let held = Thread.current.threadDictionary[Held.key] as? Held {
            held.lines.append(line)
        } else {
            logger.error("\(line)")
        }
    }

    /// The lines of an attempt that may be dropped: a request run again because its write
    /// found the lock held (`EngineThread`) answered nothing, so its incidents never happened.
    final class Held {
        static let key = "shareflow.operatorLog.held"
        var lines: [String] = []

        /// Holds this thread's incident lines while `body` runs.
        static func during<T>(_ body: () -> T) -> (T, Held) {
            let held = Held()
            Thread.current.threadDictionary[key] = held
            defer { Thread.current.threadDictionary.removeObject(forKey: key) }
            return (body(), held)
        }

        /// Writes them, as they would have been.
        func write() {
            for line in lines { OperatorLog.logger.error("\(line)") }
        }
    }
}
