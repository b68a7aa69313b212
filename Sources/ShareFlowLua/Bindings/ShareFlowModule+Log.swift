import Logging

/// `sf.log`: `debug`, `info`, `warn`, `error` to the host's log, each value as `tostring`
/// shows it.
extension ShareFlowModule {
    static func logFunctions(_ host: ScriptHost) -> [ModuleFunction] {
        let levels: [(String, Logger.Level)] = [("debug", .debug), ("info", .info), ("warn", .warning), ("error", .error)]
        return levels.map { name, level in
            (
                name,
                { [unowned host] call in
                    var parts: [String] = []
                    var bytes = 0
                    for i in 1...max(call.count, 1) where call.count > 0 {
                        let part = describe(call.state, at: i)
                        bytes += part.utf8.count
                        parts.append(part)
                        if bytes > Sandbox.maxPrintBytes { break }  // past the per-call allowance anyway
                    }
                    host.log(level, parts.joined(separator: " "))
                    return 0
                }
            )
        }
    }
}
