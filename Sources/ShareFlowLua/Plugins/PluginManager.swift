import CLua
import Foundation
import ShareFlow

/// Finds, checks, loads, unloads and reloads plugins: folders `<dir>/<name>/init.lua`. Each
/// loaded plugin has its own sandboxed Lua state with its own memory cap, and every call into
/// it runs under a CPU budget. Its observers and policies are registered under its name, so
/// unloading removes exactly them; the engine's state is untouched by a reload.
///
/// ```swift
/// let plugins = PluginManager(engine: engine, directories: ["Plugins"], config: try PluginConfig(file: "shareflow.config.lua"))
/// try plugins.loadEnabled()
/// for plugin in plugins.info() { print(plugin.name, plugin.version ?? "?", plugin.loaded) }
/// try plugins.load("audit-log")   // a reload: the loaded version stays if the new one fails
/// ```
public final class PluginManager {
    /// The engine the plugins observe and decide for.
    public let engine: Engine
    /// Where plugin folders are looked for, in order: the first holding a name wins.
    public var directories: [String]
    /// Which plugins are on, their settings, and the limits of their states (read at each load).
    public var config: PluginConfig
    /// Where `ctx.appendFile` writes: `<dataDirectory>/<plugin>/…`.
    public var dataDirectory: String
    private(set) var loaded: [String: ScriptHost] = [:]
    /// Unloaded plugins whose state is still in a call (unloaded from an observer of the event
    /// it is handling): kept until that call returns and the state closes.
    private var retiring: [ScriptHost] = []
    private var loadOrder: [String] = []
    /// Candidate versions asked beside the live ones (`policies.shadow`, SPEC §18 P6): their
    /// policies go to the engine's candidate set and never decide; nothing else registers.
    public var isShadow = false
    /// The policy set this manager's plugins register into.
    private var policies: PolicySet { isShadow ? engine.policies.candidates : engine.policies }
    /// Whether `config.faults` were armed (once per manager, not per `loadEnabled`).
    private var configFaultsArmed = false

    /// A plugin folder as `shareflow plugins` lists it.
    public struct Info {
        /// The plugin's name: its folder's.
        public let name: String
        /// The folder's path.
        public let folder: String
        /// `version` of the table its `init.lua` returns, or nil (none, or `init.lua` fails).
        public let version: String?
        /// `description` of the table its `init.lua` returns, or nil as for `version`.
        public let description: String?
        /// Whether the config turns it on.
        public let enabled: Bool
        /// Whether this manager has it loaded.
        public let loaded: Bool
    }

    /// A data directory made for this manager alone (`privateDataDirectory()`), removed with it.
    private var ownsDataDirectory = false

    /// A manager of the plugins in `directories`; it loads none until `loadEnabled()` or
    /// `load(_:settings:)`.
    ///
    /// - Parameter dataDirectory: where `ctx.appendFile` writes, a folder per plugin.
    public init(
        engine: Engine,
        directories: [String],
        config: PluginConfig = PluginConfig(),
        dataDirectory: String = ".shareflow/plugin-data"
    ) {
        self.engine = engine
        self.directories = directories
        self.config = config
        self.dataDirectory = dataDirectory
    }

    /// A manager whose plugins write into a folder private to this process, removed when the
    /// manager goes (a `:memory:` store: nothing is shared between runs or users).
    public convenience init(
        engine: Engine,
        directories: [String],
        config: PluginConfig = PluginConfig(),
        privateDataDirectory: Void
    ) throws {
        self.init(
            engine: engine,
            directories: directories,
            config: config,
            dataDirectory: try PluginDataFolder.makePrivate(prefix: "shareflow-plugin-data")
        )
        ownsDataDirectory = true
    }

    deinit {
        unloadAll()
        removeOwnedDataFolder()
    }

    /// For a process about to exit without releasing the manager (`shareflow run`): removes
    /// what the manager made outside the process — the private data folder of a `:memory:`
    /// store's plugins — and leaves the plugins' states to the operating system (they hold no
    /// `__gc` of a plugin's, SPEC §8, so closing them would run nothing).
    public func prepareForExit() {
        removeOwnedDataFolder()
    }

    private func removeOwnedDataFolder() {
        guard ownsDataDirectory else { return }
        ownsDataDirectory = false
        PluginDataFolder.removeTree(dataDirectory)
    }

    /// Every plugin folder found, by name (the first directory wins).
    public func available() -> [(name: String, folder: String)] {
        var found: [String: String] = [:]
        for dir in directories {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { continue }
            for name in names.sorted() where found[name] == nil {
                let folder = (dir as NSString).appendingPathComponent(name)
                if FileManager.default.fileExists(atPath: (folder as NSString).appendingPathComponent("init.lua")) {
                    found[name] = folder
                }
            }
        }
        return found.keys.sorted().map { ($0, found[$0]!) }
    }

    /// The loaded plugins' names, in the order they were first loaded.
    public var loadedNames: [String] { loadOrder }

    /// The folder of plugin `name` (the first of `directories` that has it). Throws `PluginError`
    /// when none does, suggesting a close name.
    public func folder(of name: String) throws -> String {
        // A name that can only be one folder's entry is looked for directly, in each directory
        // in turn (the first wins, as in `available()`), without listing them (cold start).
        if !name.isEmpty, name != ".", name != "..", !name.utf8.contains(UInt8(ascii: "/")), !name.utf8.contains(0) {
            for dir in directories {
                let folder = (dir as NSString).appendingPathComponent(name)
                if FileManager.default.fileExists(atPath: (folder as NSString).appendingPathComponent("init.lua")) {
                    return folder
                }
            }
        }
        let found = available()
        guard let f = found.first(where: { $0.name == name })?.folder else {
            let hint = PluginManager.closest(to: name, among: found.map(\.name)).map { "; did you mean '\($0)'?" } ?? ""
            throw PluginError("no plugin '\(name)' in \(directories.joined(separator: ", "))\(hint)")
        }
        return f
    }

    /// The names the config file turns on or configures that no plugin folder has, each with
    /// the closest name found (a misspelled name would leave that plugin off).
    public func unknownConfigNames() -> [(name: String, suggestion: String?)] {
        let found = available().map(\.name)
        return config.order.filter { !found.contains($0) }.map { ($0, PluginManager.closest(to: $0, among: found)) }
    }

    /// The candidate within a small edit distance of `name` (a third of its length, at least 2).
    static func closest(to name: String, among candidates: [String]) -> String? {
        func distance(_ a: [Character], _ b: [Character]) -> Int {
            var row = Array(0...b.count)
            for i in 1...max(a.count, 1) where !a.isEmpty {
                var previous = row[0]
                row[0] = i
                for j in stride(from: 1, through: b.count, by: 1) {
                    let current = row[j]
                    row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                    previous = current
                }
            }
            return a.isEmpty ? b.count : row[b.count]
        }
        let limit = max(2, name.count / 3)
        return candidates.map { ($0, distance(Array(name.lowercased()), Array($0.lowercased()))) }
            .filter { $0.1 <= limit }.min { $0.1 < $1.1 }?.0
    }

    /// Loads every plugin the config turns on; a plugin named in the config but not found is
    /// an error.
    public func loadEnabled() throws {
        // The config file's fault rules (SPEC §15) apply to every command that loads plugins.
        if !configFaultsArmed, !isShadow {
            for rule in config.faults { try engine.faults.add(rule, owner: .config) }
            configFaultsArmed = true
        }
        for name in config.order where config.isEnabled(name) {
            try load(name)
        }
    }

    /// Loads (or reloads) one plugin with its config from the config file, or `settings`.
    ///
    /// A reload never leaves the plugin's decisions to nobody (SPEC §18 P1): the loaded
    /// version's observers, policies and fault rules are parked while the new version loads,
    /// and put back, its state untouched, when the new one fails anywhere (not found, does not
    /// compile, a bad config, a failing setup). The error says the previous version stays.
    public func load(_ name: String, settings: LuaTable? = nil) throws {
        let previous = loaded[name]
        let parked = park(name)
        let host: ScriptHost
        do {
            let folder = try folder(of: name)
            host = try makeHost(name: name, folder: folder)
            do {
                let plugin = try evaluate(host, name: name, folder: folder)
                let values = try validatedConfig(plugin, name: name, settings: settings ?? config.plugins[name] ?? LuaTable())
                try runSetup(host, name: name, config: values)
            } catch {
                removeHooks(name)
                host.lua.close()
                throw error
            }
        } catch {
            guard previous != nil else { throw error }
            restore(parked)
            throw PluginError("\(error); the loaded version of '\(name)' stays in place")
        }
        if let previous { retire(previous) }
        if loaded.updateValue(host, forKey: name) == nil { loadOrder.append(name) }
    }

    /// The hooks of a plugin's loaded version, taken out while a new version loads.
    private struct Parked {
        let observers: EventBus.Detached
        let policies: PolicySet.Detached
        let faults: FaultInjector.Detached
    }

    private func park(_ name: String) -> Parked {
        Parked(
            observers: engine.events.detach(labelPrefix: PluginManager.prefix(name)),
            policies: policies.detach(namePrefix: PluginManager.prefix(name)),
            faults: engine.faults.detach { $0 == .plugin(name) }
        )
    }

    private func restore(_ parked: Parked) {
        engine.events.reattach(parked.observers)
        policies.reattach(parked.policies)
        engine.faults.reattach(parked.faults)
    }

    /// Closes a replaced version's state, or keeps it until the call it is in returns.
    private func retire(_ host: ScriptHost) {
        retiring.removeAll { $0.lua.isClosed }
        host.lua.close()
        if !host.lua.isClosed { retiring.append(host) }
    }

    /// Removes a plugin's observers and policies and closes its state.
    public func unload(_ name: String) {
        removeHooks(name)
        retiring.removeAll { $0.lua.isClosed }
        if let host = loaded.removeValue(forKey: name) {
            host.lua.close()
            if !host.lua.isClosed { retiring.append(host) }
        }
        loadOrder.removeAll { $0 == name }
    }

    /// Closes every plugin's state (at exit: finalizers run, nothing is left to leak).
    public func unloadAll() {
        for name in loadOrder.reversed() { unload(name) }
    }

    /// Reloads one plugin, or every loaded plugin, from disk; the engine keeps its state.
    @discardableResult
    public func reload(_ name: String? = nil) throws -> [String] {
        let names = name.map { [$0] } ?? loadOrder
        for n in names { try load(n) }
        return names
    }

    /// Reloads every plugin `config` turns on, with `config`, or none (SPEC §18 P1): each is
    /// first checked on a scratch engine, and only when all pass does any change; one that
    /// then fails still leaves its previous version running (`load`). Plugins the new config
    /// turns off are unloaded. Returns the plugins reloaded; throws naming every problem,
    /// with nothing changed.
    public func reloadAll(with config: PluginConfig) throws -> [String] {
        let checker = PluginManager(engine: engine, directories: directories, config: config, dataDirectory: dataDirectory)
        let enabled = config.order.filter { config.isEnabled($0) }
        let problems = enabled.flatMap { name in checker.check(name).map { "\(name): \($0)" } }
        guard problems.isEmpty else {
            throw PluginError("reload refused, every plugin keeps its running version: " + problems.joined(separator: "; "))
        }
        let previous = self.config
        self.config = config
        var failures: [String] = []
        for name in enabled {
            do { try load(name) } catch { failures.append("\(name): \(error)") }
        }
        for name in loadOrder where !enabled.contains(name) { unload(name) }
        if !failures.isEmpty {
            self.config = previous
            throw PluginError("reload: " + failures.joined(separator: "; "))
        }
        return enabled
    }

    /// Everything wrong with a plugin: syntax, structure, config schema and values, setup — on
    /// a scratch in-memory engine, so checking changes nothing.
    public func check(_ name: String) -> [String] {
        do {
            let scratch = Engine(store: try Store(path: ":memory:"))
            scratch.logger.logLevel = .critical
            let manager = try PluginManager(engine: scratch, directories: directories, config: config, privateDataDirectory: ())
            try manager.load(name)
            manager.unload(name)
            return []
        } catch {
            return ["\(error)"]
        }
    }

    /// Every plugin found, with its version and description and whether it is on and loaded.
    ///
    /// Reads each `init.lua` by running it in a new sandboxed state under the plugin limits (its
    /// `setup` is not run), so a disabled plugin's file runs too.
    public func info() -> [Info] {
        available().map { entry in
            var version: String?
            var description: String?
            if let host = try? makeHost(name: entry.name, folder: entry.folder),
                case .table(let t)? = try? evaluateValue(host, folder: entry.folder)
            {
                version = t["version"]?.stringValue
                description = t["description"]?.stringValue
                host.lua.close()
            }
            return Info(
                name: entry.name,
                folder: entry.folder,
                version: version,
                description: description,
                enabled: config.isEnabled(entry.name),
                loaded: loaded[entry.name] != nil
            )
        }
    }

    // MARK: Loading

    private var budget: UInt64 { UInt64(config.cpuMillis * 1_000_000) }

    private func makeHost(name: String, folder: String) throws -> ScriptHost {
        let host = try ScriptHost(
            engine: engine,
            memoryLimit: Int(config.memoryMiB * 1024 * 1024),
            labelPrefix: PluginManager.prefix(name),
            sandboxFolder: folder,
            shadow: isShadow
        )
        host.lua.cpuBudget = budget
        host.lua.onBudgetOverrun = { [name] budget in Counted.budgetOverrun(plugin: name, budget: budget) }
        host.logLimit = Int(config.logKiB * 1024)
        host.budgetReason = "plugin '\(name)': CPU budget of \(ConfigField.format(config.cpuMillis)) ms exceeded"
        host.plugins = nil
        return host
    }

    static func prefix(_ name: String) -> String { name + "/" }

    private func removeHooks(_ name: String) {
        engine.events.removeAll(labelPrefix: PluginManager.prefix(name))
        policies.removeAll(namePrefix: PluginManager.prefix(name))
        // Its fault rules (SPEC §15) end with it, as its observers do.
        engine.faults.removeAll { $0 == .plugin(name) }
    }

    /// Runs the plugin's `init.lua` (under its budget) and copies the table it returns; the
    /// table itself stays pinned in the registry for `setup` (no global a plugin could touch).
    private func evaluateValue(_ host: ScriptHost, folder: String) throws -> LuaValue {
        let path = (folder as NSString).appendingPathComponent("init.lua")
        // Parsing runs in C, before any budget can apply: as `load` in the sandbox, 1 MiB at most
        // (read no further: a link to a device that never ends is no init.lua).
        let data: Data
        do { data = try BoundedFile.read(path, maxBytes: ModuleFile.maxBytes) } catch { throw PluginError("\(error)") }
        let lua = host.lua
        let base = lua.top
        defer {
            lua.top = base
            host.reportDroppedLog()
        }
        try lua.load(String(decoding: data, as: UTF8.self), chunkName: "@" + path)
        try lua.guardedCall(arguments: 0, results: 1)
        var value = LuaValue.nil
        try lua.protected(arguments: 1) { lua in
            value = try lua.value(at: 1, function: "init.lua's table")
            if lua_type(lua.L, 1) == LUA_TTABLE {
                lua_pushvalue(lua.L, 1)
                host.pluginTable = luaL_ref(lua.L, clua_registryindex())
            }
            return 0
        }
        return value
    }

    private func evaluate(_ host: ScriptHost, name: String, folder: String) throws -> LuaTable {
        let value: LuaValue
        do { value = try evaluateValue(host, folder: folder) } catch let e as LuaError {
            throw PluginError("plugin '\(name)': \(e.message)")
        }
        guard case .table(let t) = value else {
            throw PluginError("plugin '\(name)': init.lua must return a table, got \(ConfigField.describe(value))")
        }
        for field in ["name", "version", "description"] {
            guard case .string = t[field] ?? .nil else {
                throw PluginError("plugin '\(name)': init.lua's table needs a string '\(field)'")
            }
        }
        guard t["name"]?.stringValue == name else {
            throw PluginError("plugin '\(name)': its table names itself '\(t["name"]!.stringValue!)'; the folder and the name must match")
        }
        guard case .reference(let setup) = t["setup"] ?? .nil, setup.typeName == "function" else {
            throw PluginError("plugin '\(name)': init.lua's table needs a function 'setup(ctx)'")
        }
        return t
    }

    private func validatedConfig(_ plugin: LuaTable, name: String, settings: LuaTable) throws -> LuaTable {
        var fields: [ConfigField] = []
        if let schema = plugin["config"] {
            guard case .table(let s) = schema else { throw PluginError("plugin '\(name)': 'config' must be a table of fields") }
            for (key, spec) in s.hash {
                guard case .string(let k) = key else { throw PluginError("plugin '\(name)': config fields are named by strings") }
                fields.append(try ConfigField(name: k, spec: spec, plugin: name))
            }
        }
        var values = LuaTable()
        for (key, value) in settings.hash {
            guard case .string(let k) = key else { throw PluginError("plugin '\(name)': config keys are strings") }
            if k == "enabled" { continue }
            guard let field = fields.first(where: { $0.name == k }) else {
                throw PluginError("plugin '\(name)': unknown config key '\(k)' (known: \(fields.map(\.name).sorted().joined(separator: ", ")))")
            }
            values.hash[key] = try field.validate(value, plugin: name)
        }
        for field in fields where values.hash[.string(field.name)] == nil {
            values.hash[.string(field.name)] = field.defaultValue
        }
        return values
    }

    private func runSetup(_ host: ScriptHost, name: String, config values: LuaTable) throws {
        let lua = host.lua
        let base = lua.top
        defer { lua.top = base }
        let dataFolder = (dataDirectory as NSString).appendingPathComponent(name)
        // The log line a flood in setup earned, once setup is over (hooks report theirs).
        defer { host.reportDroppedLog() }
        do {
            try lua.protected { lua in
                let L = lua.L
                lua_rawgeti(L, clua_registryindex(), lua_Integer(host.pluginTable))
                lua.push(static: "setup")
                lua_rawget(L, -2)
                // ctx: the shareflow API scoped to this plugin, its config and its file API.
                lua_createtable(L, 0, 4)
                lua.push(string: name)
                lua_setfield(L, -2, "name")
                try lua.push(.table(values))
                lua_setfield(L, -2, "config")
                let quota = Int(config.diskMiB * 1024 * 1024)
                var folder: PluginDataFolder?
                lua.setFunctions([
                    (
                        "appendFile",
                        { call in
                            let path = try call.string(1)
                            // The bytes as given: a Lua string is bytes, UTF-8 or not.
                            guard lua_type(call.L, 2) == LUA_TSTRING else { throw call.argumentError(2, "string expected, got \(call.typeName(2))") }
                            var length = 0
                            let bytes = lua_tolstring(call.L, 2, &length)
                            do {
                                // Made on the first write: a plugin that never writes leaves no folder.
                                if folder == nil { folder = try PluginDataFolder(path: dataFolder, quotaBytes: quota) }
                                let full = try folder!.append(UnsafeRawBufferPointer(start: bytes, count: length), to: path)
                                call.state.push(string: full)
                            } catch let e as PluginDataFolderError {
                                throw LuaRaise.message(call.position + e.description)
                            }
                            return 1
                        }
                    ),
                    (
                        "rotateFile",
                        { call in
                            let name = try call.string(1)
                            let atLeast = call.isNil(2) ? nil : try call.integer(2)
                            do {
                                if folder == nil { folder = try PluginDataFolder(path: dataFolder, quotaBytes: quota) }
                                lua_pushboolean(call.L, try folder!.rotate(name, atLeast: atLeast) ? 1 : 0)
                            } catch let e as PluginDataFolderError {
                                throw LuaRaise.message(call.position + e.description)
                            }
                            return 1
                        }
                    ),
                ])
                lua_pushinteger(L, lua_Integer(quota))
                lua_setfield(L, -2, "diskQuota")
                lua.push(string: dataFolder)
                lua_setfield(L, -2, "dataFolder")
                lua_createtable(L, 0, 2)
                lua_rawgeti(L, clua_registryindex(), lua_Integer(host.moduleTable))
                lua_setfield(L, -2, "__index")
                lua.push(static: "ctx")
                lua_setfield(L, -2, "__metatable")
                lua_setmetatable(L, -2)
                try lua.push(.table(values))
                try lua.call(arguments: 2, results: 0)
                return 0
            }
        } catch let e as LuaError {
            throw PluginError("plugin '\(name)': setup failed: \(e.message)")
        }
    }
}
