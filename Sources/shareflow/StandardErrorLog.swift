import Foundation
import Logging

/// Log lines on standard error: `level: message`, so a script's own output stays clean.
struct StandardErrorLog: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let name = event.level == .warning ? "warn" : event.level.rawValue
        FileHandle.standardError.write(Data("\(name): \(event.message)\n".utf8))
    }
}
