import ArgumentParser
import Foundation
import Logging
import ShareFlow
import ShareFlowLua
import ShareFlowPostgres

@main
struct ShareFlowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shareflow",
        abstract: "CloudKit-style sharing engine with an embedded Lua 5.4.",
        version: "0.1.0",
        subcommands: [
            Run.self, Repl.self, Test.self, Plugins.self, Policy.self, Decisions.self, Bench.self, StoreCommand.self, Serve.self, Tokens.self,
            Keys.self,
        ]
    )

    /// The one way out on failure: every command throws (so its `defer`s run: the store is
    /// checkpointed and closed, Lua states finalized) and every error it lets out is one line
    /// in one format, `shareflow: …`, here (the argument parser's own usage errors and
    /// `ExitCode`s keep theirs).
    static func main() {
        do {
            // `run SCRIPT` with plain options, as the cold start measures it (SPEC §12), is read
            // here directly; every other command line goes through the argument parser, whose
            // set-up (its reflection over every command's options, its completion-script check)
            // would be a sixth of the start.
            if let invocation = RunInvocation(commandLine: Array(CommandLine.arguments.dropFirst())) {
                return try invocation.run()
            }
            var command = try parseAsRoot()
            try command.run()
        } catch {
            guard let (message, code) = oneLine(error) else { exit(withError: error) }
            FileHandle.standardError.write(Data(("shareflow: " + message + "\n").utf8))
            exit(withError: ExitCode(code))
        }
    }

    /// What a failure says after `shareflow: `, and its exit status; nil for the argument
    /// parser's own errors.
    static func oneLine(_ error: Error) -> (String, Int32)? {
        switch error {
        case let error as CLIFailure: (error.description, error.code)
        case let error as StoreError: (error.description, 1)
        case let error as ShareFlowError: (error.description, 1)
        case let error as PluginError: (error.description, 1)
        case let error as LuaError: (error.description, 1)
        default: nil
        }
    }
}

/// `--log-level`: swift-log's levels (`warn` is taken for `warning`), listed by `--help`. The
/// option is read as text and checked in `validate()`: the argument parser's own conversion
/// failure path leaks a block at exit under LeakSanitizer (48 bytes in `InputKey.fullPath`).
enum LogLevel: String, CaseIterable {
    case trace, debug, info, notice, warning, error, critical

    init?(argument: String) {
        self.init(rawValue: argument == "warn" ? "warning" : argument)
    }

    var level: Logger.Level { Logger.Level(rawValue: rawValue)! }
}

/// Options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    func validate() throws {
        guard LogLevel(argument: logLevel) != nil else {
            throw ValidationError("--log-level '\(logLevel)' is not one of \(LogLevel.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    @Option(name: .long, help: "The SQLite store (':memory:' for a throw-away one).")
    var store: String = ".shareflow/store.sqlite"

    @Option(name: .long, help: "How much the engine logs to standard error: \(LogLevel.allCases.map(\.rawValue).joined(separator: ", ")).")
    var logLevel: String = LogLevel.info.rawValue

    @Flag(name: .long, help: "Machine-readable output.")
    var json = false

    @Option(
        name: .long,
        help: "Folder of plugins (<dir>/<name>/init.lua); repeatable. Searched first, then the config file's folder, then ./Plugins."
    )
    var plugins: [String] = []

    @Option(name: .long, help: "Lua config file: which plugins are on, their settings, the limits (default: shareflow.config.lua if present).")
    var config: String?

    /// The options' values, for the work the commands share.
    var settings: GlobalSettings {
        GlobalSettings(store: store, logLevel: logLevel, json: json, plugins: plugins, config: config)
    }

    var pluginSearchPath: [String] { settings.pluginSearchPath }
    var configPath: String? { settings.configPath }
    func pluginConfig() throws -> PluginConfig { try settings.pluginConfig() }
    func loadPlugins(into engine: Engine, privateData: Bool = false) throws -> PluginManager {
        try settings.loadPlugins(into: engine, privateData: privateData)
    }
    func makeEngine() throws -> Engine { try settings.makeEngine() }
    func openStore() throws -> Store { try settings.openStore() }
    func openStore(at location: String) throws -> Store { try settings.openStore(at: location) }
}

/// The global options' values (`GlobalOptions` as parsed, or as `RunInvocation` reads them)
/// and what the commands do with them.
struct GlobalSettings {
    var store = ".shareflow/store.sqlite"
    var logLevel = LogLevel.info.rawValue
    var json = false
    var plugins: [String] = []
    var config: String?

    /// Where plugins are found (SPEC §9), first match winning: each --plugins, the config
    /// file's folder (and its Plugins folder), then ./Plugins — so a command works from any
    /// folder given its config.
    var pluginSearchPath: [String] {
        var dirs = plugins
        if let config = configPath {
            let folder = PathName.folder(of: config)
            let base = folder.isEmpty ? "." : folder
            dirs += [(base as NSString).appendingPathComponent("Plugins"), base]
        }
        dirs.append("Plugins")
        var seen = Set<String>()
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let cwd = getcwd(&buffer, buffer.count).map { String(cString: $0) }
        return dirs.filter { seen.insert(GlobalSettings.folderKey($0, workingDirectory: cwd)).inserted }
    }

    /// What two spellings of one folder have in common: its standardized absolute path, as
    /// URL gives it. A plain path (no empty, '.' or '..' component, no '~', no trailing '/') is
    /// that already, below the working directory when relative; others go through URL (cold
    /// start: URL's set-up is most of the search path's cost).
    static func folderKey(_ path: String, workingDirectory cwd: String?) -> String {
        // "." and a leading "./" name the working directory: a config file there (the default,
        // shareflow.config.lua) puts "./Plugins" and "." on the search path, and URL's first use
        // was 1M instructions of the cold start (issue 48).
        var relative = Substring(path)
        while relative.hasPrefix("./"), relative.count > 2, !relative.dropFirst(2).hasPrefix("/") { relative = relative.dropFirst(2) }
        if relative == ".", let cwd, cwd.hasPrefix("/") { return cwd }
        let path = String(relative)
        let absolute = path.hasPrefix("/")
        if let cwd, cwd.hasPrefix("/"), !path.isEmpty, !path.hasPrefix("~"), path != "/", !path.hasSuffix("/"),
            !path.split(separator: "/", omittingEmptySubsequences: false).dropFirst(absolute ? 1 : 0)
                .contains(where: { $0.isEmpty || $0 == "." || $0 == ".." })
        {
            return absolute ? path : (cwd == "/" ? "" : cwd) + "/" + path
        }
        return URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// The config file in use: --config, or shareflow.config.lua when present.
    var configPath: String? {
        config ?? (FileManager.default.fileExists(atPath: "shareflow.config.lua") ? "shareflow.config.lua" : nil)
    }

    /// The config file, read and checked.
    func pluginConfig() throws -> PluginConfig {
        if let config { return try PluginConfig(file: config) }
        if FileManager.default.fileExists(atPath: "shareflow.config.lua") { return try PluginConfig(file: "shareflow.config.lua") }
        return PluginConfig()
    }

    /// The plugin manager for `engine`, with the enabled plugins loaded. `config`: the config
    /// file as the caller read it already (each reading runs the file in a new Lua state).
    func loadPlugins(into engine: Engine, privateData: Bool = false, config: PluginConfig? = nil) throws -> PluginManager {
        let config = try config ?? pluginConfig()
        let manager: PluginManager
        if store == ":memory:" || privateData {
            manager = try PluginManager(engine: engine, directories: pluginSearchPath, config: config, privateDataDirectory: ())
        } else {
            // Beside the store's file; for a PostgreSQL store, in this node's working folder
            // (plugin data stays on each node, SPEC §16).
            let dataDirectory =
                PostgresLocation.isURL(store)
                ? ".shareflow/plugin-data"
                : (PathName.folder(of: store) as NSString).appendingPathComponent("plugin-data")
            manager = PluginManager(engine: engine, directories: pluginSearchPath, config: config, dataDirectory: dataDirectory)
        }
        try manager.loadEnabled()
        return manager
    }

    /// Opens the store; a PostgreSQL store takes the config file's `postgres = { … }` (SPEC §16).
    func openStore() throws -> Store { try openStore(at: store) }

    /// Opens the store at `location` (a file or a PostgreSQL URL) with the config's settings.
    func openStore(at location: String) throws -> Store { try openStore(at: location, config: pluginConfig()) }

    /// As `openStore(at:)`, with the config file as the caller read it.
    func openStore(at location: String, config: PluginConfig) throws -> Store {
        var settings = PostgresSettings()
        if PostgresLocation.isURL(location) {
            let postgres = config.postgres
            if let n = postgres["poolSize"] { settings.poolSize = Int(n) }
            if let n = postgres["statementTimeoutMs"] { settings.statementTimeoutMs = Int(n) }
            settings.passwordFile = config.postgresPasswordFile
        }
        let busyTimeout = config.storeBusyTimeoutMs.map { $0 / 1000 } ?? Store.defaultBusyTimeout
        return try Store.open(location, busyTimeout: busyTimeout, postgres: settings)
    }

    /// Opens the store and the engine, with logs on standard error.
    func makeEngine() throws -> Engine { try makeEngine(config: pluginConfig()) }

    /// As `makeEngine()`, with the config file as the caller read it: `run` reads it once for
    /// the store, the engine and the plugins, where each read it again (three Lua states, each
    /// running the file: a tenth of a cold start, issue 48).
    func makeEngine(config: PluginConfig) throws -> Engine {
        var logger = Logger(label: "shareflow") { StandardErrorLog(label: $0) }
        logger.logLevel = (LogLevel(argument: logLevel) ?? .info).level
        let store: Store
        do {
            store = try openStore(at: self.store, config: config)
        } catch let error as StoreError {
            throw CLIFailure(message: error.description)
        } catch let error as ShareFlowError {
            throw CLIFailure(message: "cannot open store \(self.store): \(error.message)")
        }
        var options = Engine.Options()
        options.maxRequesters = config.maxRequesters
        if let n = config.assetMaxBytes { options.assetMaxBytes = n }
        if let n = config.assetURLSeconds { options.assetURLSeconds = n }
        if let n = config.assetMaxPendingBytes { options.assetMaxPendingBytes = n }
        if let n = config.assetGraceSeconds { options.assetGraceSeconds = n }
        // SPEC §20: the engine's side of `notifications` (the server's: ServeCommand).
        let n = config.notifications
        if let v = n["queueMax"] { options.notifications.queueMax = Int(v) }
        if let v = n["maxSubscriptionsPerUser"] { options.notifications.maxSubscriptionsPerUser = Int(v) }
        if let v = n["maxZonelessPerUser"] { options.notifications.maxZonelessPerUser = Int(v) }
        if let v = n["maxSubscriptionsPerZone"] { options.notifications.maxSubscriptionsPerZone = Int(v) }
        if let v = n["maxTokensPerUser"] { options.notifications.maxTokensPerUser = Int(v) }
        if let v = n["tokenIdleDays"] { options.notifications.tokenIdleDays = v }
        if let v = n["takeoverSeconds"] { options.notifications.takeoverSeconds = v }
        if let v = n["evaluationsPerJob"] { options.notifications.evaluationsPerJob = Int(v) }
        if let v = n["maxCostPerZone"] { options.notifications.maxCostPerZone = Int(v) }
        if let v = n["maxZonelessCostPerUser"] { options.notifications.maxZonelessCostPerUser = Int(v) }
        let engine = Engine(store: store, options: options, logger: logger)
        // SPEC §18 P3: what the decision log keeps, and what it erases from each input.
        engine.policies.mask = config.policyMask
        store.decisionLog?.kept = config.keepDecisions
        return engine
    }
}

/// A failure reported as one line on standard error (or, with --json, as an object on
/// standard output), with a non-zero exit.
struct CLIFailure: Error, CustomStringConvertible {
    let message: String
    var code: Int32 = 1
    /// The error's name: a ShareFlow code (`serverRecordChanged`…), `scriptError` or `syntaxError`.
    var name = "error"
    var traceback = ""
    var description: String { traceback.isEmpty ? message : message + "\n" + traceback }

    init(message: String, code: Int32 = 1) {
        self.message = message
        self.code = code
    }

    /// A script's error: an error value raised by the API keeps its code.
    init(lua error: LuaError) {
        message = error.message
        traceback = error.traceback
        let codes = ShareFlowError.Code.allCases.map(\.rawValue)
        if let word = error.message.split(separator: " ").first, codes.contains(String(word)) {
            name = String(word)
        } else {
            name = error.kind == .syntax ? "syntaxError" : "scriptError"
        }
    }

    var json: [String: Any] { ["code": name, "message": message, "traceback": traceback] }
}

/// One JSON object on standard output, as every --json command prints: sorted keys, `/` as is.
func printJSON(_ object: [String: Any]) {
    guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
        return print("{\"ok\":false}")
    }
    print(String(decoding: data, as: UTF8.self))
}
