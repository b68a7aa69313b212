import CLua
import Foundation
import ShareFlow

/// The configuration file (Lua): which plugins are on, their settings, and the limits.
///
/// ```lua
/// return {
///   limits = { cpuMillis = 50, memoryMiB = 64 },
///   server = { rateLimit = { requests = 600, perSeconds = 60 }, maxBodyMiB = 16 },
///   sync = { retentionDays = 30 },
///   faults = { { operation = "records/modify", fault = "requestRateLimited", probability = 0.1, seed = 7 } },
///   plugins = {
///     ["domain-allowlist"] = { domains = { "example.com" } },
///     ["audit-log"] = { path = "audit.jsonl" },
///     ["expiring-invitations"] = { enabled = false },
///   },
/// }
/// ```
public struct PluginConfig {
    /// Plugin name → its settings table; a plugin is on when listed and not `enabled = false`.
    public var plugins: [String: LuaTable] = [:]
    /// Order in which the file lists the plugins (tables have none: sorted by name).
    public var order: [String] { plugins.keys.sorted() }
    /// CPU budget of each call into a plugin, in milliseconds (`limits.cpuMillis`, SPEC §8).
    public var cpuMillis: Double = 50
    /// Memory cap of each plugin's Lua state, in MiB (`limits.memoryMiB`, SPEC §8).
    public var memoryMiB: Double = 64
    /// Disk each plugin's data folder may hold (`ctx.appendFile`).
    public var diskMiB: Double = 64
    /// KiB of log one plugin call may write (SPEC §8).
    public var logKiB: Double = 64
    /// `shareflow serve`: requests per user token (or API token, without one) in a window of
    /// `perSeconds`; nil: no limit (SPEC §13).
    public var rateLimit: (requests: Int, perSeconds: Double)?
    /// `shareflow serve`: the largest request body, in MiB (bigger: QUOTA_EXCEEDED).
    public var maxBodyMiB: Double = 16
    /// `shareflow serve`, SPEC §13 wave 3: the most MiB of records one response carries, the
    /// connections open at once, the seconds a connection may take to send a request head
    /// (`headerSeconds`), a body (`bodySeconds`), its next request (`idleSeconds`), and the
    /// seconds SIGTERM waits for requests in flight (`shutdownSeconds`), and the seconds one
    /// query may read records on one of the engine's threads (`querySeconds`). Set only when the
    /// file names them (the server has its defaults).
    public var server: [String: Double] = [:]
    /// The numeric `server` keys and their bounds (outside them a typo, not a setting).
    public static let serverRanges: [String: ClosedRange<Double>] = [
        "maxResponseMiB": 0.001...4096, "maxConnections": 1...1_000_000, "headerSeconds": 0.1...3600,
        "bodySeconds": 0.1...86_400, "idleSeconds": 0.1...86_400, "shutdownSeconds": 0...3600, "querySeconds": 0.001...3600,
    ]

    /// SPEC §16: how a node uses a PostgreSQL store (`postgres = { poolSize = N,
    /// statementTimeoutMs = N }`), set only when the file names them.
    public var postgres: [String: Double] = [:]
    /// `postgres.passwordFile`: a file whose first line is the store's password, for a URL
    /// without one (a password in the URL shows in `ps`).
    public var postgresPasswordFile: String?
    /// The `postgres` keys and their bounds.
    public static let postgresRanges: [String: ClosedRange<Double>] = ["poolSize": 1...1000, "statementTimeoutMs": 100...600_000]

    /// SPEC §16 M5: how long a write waits for another process's write lock
    /// (`store = { busyTimeoutMs = N }`), nil unless the file names it (5,000 ms).
    public var storeBusyTimeoutMs: Double?

    /// SPEC §14 S5: days the change log keeps tombstones (`shareflow store compact`).
    public var retentionDays: Double = 30
    /// SPEC §17 R42: most open access requests per share (`sharing = { maxRequesters = N }`).
    public var maxRequesters = 100
    /// SPEC §19: `assets = { maxBytes, urlSeconds, graceSeconds }`, each nil unless the file
    /// names it (the engine's defaults: 15 MiB, 3,600 s, 3,600 s).
    public var assetMaxBytes: Int64?
    /// SPEC §19 A3: seconds a download URL stays good.
    public var assetURLSeconds: Double?
    /// SPEC §19 A3: bytes one account may have uploaded and not yet saved.
    public var assetMaxPendingBytes: Int64?
    /// SPEC §19 A3: seconds an unreferenced blob (and an unredeemed receipt) is kept.
    public var assetGraceSeconds: Double?
    /// SPEC §20: `notifications = { pollSeconds, queueMax, … }`, each as the file names it
    /// (`notificationRanges` lists the keys and what each may be).
    public var notifications: [String: Double] = [:]
    /// The keys of `notifications` and the range each is checked against: whole numbers but
    /// for the seconds and days.
    public static let notificationRanges: [(key: String, range: ClosedRange<Double>, whole: Bool)] = [
        ("pollSeconds", 1...300, false), ("queueMax", 1...100_000, true), ("maxSubscriptionsPerUser", 1...100_000, true),
        ("maxZonelessPerUser", 0...10_000, true), ("maxSubscriptionsPerZone", 1...1_000_000, true), ("maxTokensPerUser", 1...10_000, true),
        ("tokenIdleDays", 1...3650, false), ("maxHeldPolls", 1...1_000_000, true), ("takeoverSeconds", 0.1...3600, false),
        ("evaluationsPerJob", 100...100_000_000, true), ("maxCostPerZone", 1...100_000_000, true), ("maxZonelessCostPerUser", 1...100_000_000, true),
    ]
    /// `d` as a range's end is written in an error: `300`, `0.1`.
    static func plain(_ d: Double) -> String { d == d.rounded() ? String(Int64(d)) : String(d) }
    /// SPEC §18 P3: dotted paths erased from each logged decision's input (`policies = { mask = {…} }`).
    public var policyMask: [String] = []
    /// SPEC §18 P3: decisions the store's log keeps (`policies = { keepDecisions = N }`).
    public var keepDecisions = 10_000
    /// SPEC §18 P6: a plugins folder of candidate versions `serve` asks beside the live ones
    /// (`policies = { shadow = "DIR" }`), relative to the config file's folder.
    public var shadowPlugins: String?
    /// SPEC §17 R42: `store compact` closes access requests older than this many days; 0 keeps them.
    public var requestTTLDays: Double = 30
    /// SPEC §15: fault rules armed for every command (`faults = { {…}, … }`); `sf.faults.clear()`
    /// and the admin route leave them.
    public var faults: [FaultRule] = []

    /// The defaults: no plugins, the limits of SPEC §8, no fault rules.
    public init() {}

    /// Whether plugin `name` is on: listed, and not `enabled = false`.
    public func isEnabled(_ name: String) -> Bool {
        guard let t = plugins[name] else { return false }
        return t["enabled"] != .boolean(false)
    }

    /// Reads and checks a configuration file; errors name the file and the key.
    public init(file path: String) throws {
        let data: Data
        do { data = try BoundedFile.read(path, maxBytes: 16 << 20) } catch { throw PluginError("config file: \(error)") }
        let lua = try LuaState(libraries: .sandbox)
        // The operator's own file: a long list of settings (thousands of allowed domains) is
        // one long function, which a plugin may not have (lua-bugs.md) but the operator may.
        lua.checksFunctionSize = false
        try Sandbox.apply(to: lua, folder: PathName.folder(of: path)) { _ in }
        let results: [LuaValue]
        do {
            results = try lua.run(String(decoding: data, as: UTF8.self), chunkName: "@" + path)
        } catch let e as LuaError {
            throw PluginError("config file \(e.message)")
        }
        guard case .table(let root) = results.first ?? .nil else {
            throw PluginError("config file \(path) must return a table, got \(results.first?.description ?? "nothing")")
        }
        for key in root.hash.keys {
            guard case .string(let k) = key,
                ["plugins", "limits", "server", "sync", "faults", "postgres", "store", "sharing", "policies", "assets", "notifications"].contains(k)
            else {
                throw PluginError(
                    "config file \(path): unknown key '\(key)' (expected plugins, limits, server, sync, faults, postgres, store, sharing, policies, assets, notifications)"
                )
            }
        }
        if let table = root["notifications"] {
            guard case .table(let t) = table, t.array.isEmpty else {
                throw PluginError("config file \(path): 'notifications' must be a table of settings")
            }
            for (key, value) in t.hash {
                guard case .string(let name) = key, let known = Self.notificationRanges.first(where: { $0.key == name }) else {
                    throw PluginError(
                        "config file \(path): unknown key notifications.\(key) (expected \(Self.notificationRanges.map(\.key).joined(separator: ", ")))"
                    )
                }
                let n = ConfigField.number(value) ?? .nan
                guard n.isFinite, known.range.contains(n), !known.whole || n == n.rounded() else {
                    throw PluginError(
                        "config file \(path): notifications.\(name) must be \(known.whole ? "a whole number" : "a number") from \(Self.plain(known.range.lowerBound)) to \(Self.plain(known.range.upperBound)), got \(ConfigField.shown(value))"
                    )
                }
                notifications[name] = n
            }
        }
        if let faults = root["faults"] {
            guard case .table(let list) = faults, list.hash.isEmpty else {
                throw PluginError("config file \(path): 'faults' must be a list of rules { { operation = …, fault = … }, … }")
            }
            guard list.array.count <= FaultInjector.maxRules else {
                throw PluginError("config file \(path): 'faults' has \(list.array.count) rules; at most \(FaultInjector.maxRules) are armed at once")
            }
            for (n, value) in list.array.enumerated() {
                guard case .table(let t) = value, t.array.isEmpty else {
                    throw PluginError("config file \(path): faults[\(n + 1)] must be a table of named fields, got \(value)")
                }
                var fields: [String: FaultRule.Value] = [:]
                for (key, v) in t.hash {
                    guard case .string(let k) = key else {
                        throw PluginError("config file \(path): faults[\(n + 1)] has a \(ConfigField.luaType(key)) key; fields are named")
                    }
                    switch v {
                    case .string(let s): fields[k] = .string(s)
                    case .integer(let i): fields[k] = .number(Double(i))
                    case .number(let d): fields[k] = .number(d)
                    case .boolean(let b): fields[k] = .boolean(b)
                    default: fields[k] = .other(type: ConfigField.luaType(v))
                    }
                }
                do {
                    self.faults.append(try FaultRule(fields, name: "faults[\(n + 1)]"))
                } catch let e as ShareFlowError {
                    throw PluginError("config file \(path): \(e.message)")
                }
            }
        }
        if let postgres = root["postgres"] {
            guard case .table(let t) = postgres, t.array.isEmpty else {
                throw PluginError("config file \(path): 'postgres' must be a table { poolSize = N, statementTimeoutMs = N }")
            }
            for (key, value) in t.hash {
                if case .string("passwordFile") = key {
                    guard case .string(let file) = value, !file.isEmpty, !file.utf8.contains(0) else {
                        throw PluginError("config file \(path): postgres.passwordFile must be a file's path, got \(value)")
                    }
                    postgresPasswordFile =
                        file.hasPrefix("/") ? file : PathName.folder(of: path).isEmpty ? file : PathName.folder(of: path) + "/" + file
                    continue
                }
                guard case .string(let k) = key, let range = PluginConfig.postgresRanges[k] else {
                    throw PluginError("config file \(path): unknown key postgres.\(key) (expected poolSize, statementTimeoutMs, passwordFile)")
                }
                guard let n = ConfigField.number(value), n.isFinite, n.rounded() == n, range.contains(n) else {
                    throw PluginError(
                        "config file \(path): postgres.\(k) must be a whole number from \(Int(range.lowerBound)) to \(Int(range.upperBound)), got \(value)"
                    )
                }
                self.postgres[k] = n
            }
        }
        if let store = root["store"] {
            guard case .table(let t) = store, t.array.isEmpty else {
                throw PluginError("config file \(path): 'store' must be a table { busyTimeoutMs = N }")
            }
            for (key, value) in t.hash {
                guard key == .string("busyTimeoutMs") else {
                    throw PluginError("config file \(path): unknown key store.\(key) (expected busyTimeoutMs)")
                }
                guard let n = ConfigField.number(value), n.isFinite, n.rounded() == n, (0...600_000).contains(n) else {
                    throw PluginError(
                        "config file \(path): store.busyTimeoutMs must be a whole number from 0 to 600000, got \(ConfigField.shown(value))"
                    )
                }
                storeBusyTimeoutMs = n
            }
        }
        if let sync = root["sync"] {
            guard case .table(let t) = sync else { throw PluginError("config file \(path): 'sync' must be a table") }
            for (key, value) in t.hash {
                guard key == .string("retentionDays") else {
                    throw PluginError("config file \(path): unknown key sync.\(key) (expected retentionDays)")
                }
                guard let n = ConfigField.number(value), n.isFinite, (0...36_500).contains(n) else {
                    throw PluginError(
                        "config file \(path): sync.retentionDays must be a number of days from 0 to 36500, got \(ConfigField.shown(value))"
                    )
                }
                retentionDays = n
            }
        }
        if let policies = root["policies"] {
            guard case .table(let t) = policies, t.array.isEmpty else {
                throw PluginError("config file \(path): 'policies' must be a table of settings")
            }
            for (key, value) in t.hash {
                switch key {
                case .string("mask"):
                    guard case .table(let list) = value, list.hash.isEmpty, list.array.count <= 100 else {
                        throw PluginError("config file \(path): policies.mask must be a list of at most 100 dotted paths, like { \"caller.email\" }")
                    }
                    policyMask = try list.array.enumerated().map { i, item in
                        guard case .string(let path) = item, !path.isEmpty, path.utf8.count <= 200,
                            path.split(separator: ".", omittingEmptySubsequences: false).allSatisfy({ !$0.isEmpty })
                        else {
                            throw PluginError(
                                "config file \(path): policies.mask[\(i + 1)] must be a dotted path like \"caller.email\", got \(ConfigField.shown(item))"
                            )
                        }
                        return path
                    }
                case .string("keepDecisions"):
                    let n = ConfigField.number(value) ?? .nan
                    guard n.isFinite, n == n.rounded(), (1...10_000_000).contains(n) else {
                        throw PluginError(
                            "config file \(path): policies.keepDecisions must be a whole number from 1 to 10000000, got \(ConfigField.shown(value))"
                        )
                    }
                    keepDecisions = Int(n)
                case .string("shadow"):
                    guard case .string(let dir) = value, !dir.isEmpty else {
                        throw PluginError(
                            "config file \(path): policies.shadow must be the path of a plugins folder, got \(ConfigField.shown(value))"
                        )
                    }
                    shadowPlugins = dir.hasPrefix("/") ? dir : (PathName.folder(of: path) as NSString).appendingPathComponent(dir)
                default:
                    throw PluginError("config file \(path): unknown key policies.\(key) (expected mask, keepDecisions, shadow)")
                }
            }
        }
        if let assets = root["assets"] {
            guard case .table(let t) = assets, t.array.isEmpty else {
                throw PluginError("config file \(path): 'assets' must be a table of settings")
            }
            for (key, value) in t.hash {
                let n = ConfigField.number(value) ?? .nan
                switch key {
                case .string("maxBytes"):
                    guard n.isFinite, n == n.rounded(), (1...1_073_741_824.0).contains(n) else {
                        throw PluginError(
                            "config file \(path): assets.maxBytes must be a whole number from 1 to 1073741824, got \(ConfigField.shown(value))"
                        )
                    }
                    assetMaxBytes = Int64(n)
                case .string("maxPendingBytes"):
                    guard n.isFinite, n == n.rounded(), (1...1_099_511_627_776.0).contains(n) else {
                        throw PluginError(
                            "config file \(path): assets.maxPendingBytes must be a whole number from 1 to 1099511627776, got \(ConfigField.shown(value))"
                        )
                    }
                    assetMaxPendingBytes = Int64(n)
                case .string("urlSeconds"):
                    guard n.isFinite, (1...604_800).contains(n) else {
                        throw PluginError(
                            "config file \(path): assets.urlSeconds must be a number of seconds from 1 to 604800, got \(ConfigField.shown(value))"
                        )
                    }
                    assetURLSeconds = n
                case .string("graceSeconds"):
                    guard n.isFinite, (60...31_536_000).contains(n) else {
                        throw PluginError(
                            "config file \(path): assets.graceSeconds must be a number of seconds from 60 to 31536000, got \(ConfigField.shown(value))"
                        )
                    }
                    assetGraceSeconds = n
                default:
                    throw PluginError("config file \(path): unknown key assets.\(key) (expected maxBytes, maxPendingBytes, urlSeconds, graceSeconds)")
                }
            }
        }
        if let sharing = root["sharing"] {
            guard case .table(let t) = sharing, t.array.isEmpty else {
                throw PluginError("config file \(path): 'sharing' must be a table of settings")
            }
            for (key, value) in t.hash {
                let n = ConfigField.number(value) ?? .nan
                switch key {
                case .string("maxRequesters"):
                    guard n.isFinite, n == n.rounded(), (1...100_000).contains(n) else {
                        throw PluginError(
                            "config file \(path): sharing.maxRequesters must be a whole number from 1 to 100000, got \(ConfigField.shown(value))"
                        )
                    }
                    maxRequesters = Int(n)
                case .string("requestTTLDays"):
                    guard n.isFinite, (0...36_500).contains(n) else {
                        throw PluginError(
                            "config file \(path): sharing.requestTTLDays must be a number of days from 0 to 36500, got \(ConfigField.shown(value))"
                        )
                    }
                    requestTTLDays = n
                default:
                    throw PluginError("config file \(path): unknown key sharing.\(key) (expected maxRequesters, requestTTLDays)")
                }
            }
        }
        if let server = root["server"] {
            guard case .table(let t) = server else { throw PluginError("config file \(path): 'server' must be a table") }
            for (key, value) in t.hash {
                switch key {
                case .string("maxBodyMiB"):
                    guard let n = ConfigField.number(value), n.isFinite, (0.001...1024).contains(n) else {
                        throw PluginError("config file \(path): server.maxBodyMiB must be a number from 0.001 to 1024, got \(value)")
                    }
                    maxBodyMiB = n
                case .string("rateLimit"):
                    guard case .table(let r) = value else {
                        throw PluginError("config file \(path): server.rateLimit must be a table { requests =, perSeconds = }")
                    }
                    for k in r.hash.keys where k != .string("requests") && k != .string("perSeconds") {
                        throw PluginError("config file \(path): unknown key server.rateLimit.\(k) (expected requests, perSeconds)")
                    }
                    guard let n = ConfigField.number(r["requests"] ?? .nil), n.isFinite, n == n.rounded(), (1...1_000_000).contains(n) else {
                        throw PluginError(
                            "config file \(path): server.rateLimit.requests must be an integer from 1 to 1000000, got \(r["requests"] ?? .nil)"
                        )
                    }
                    let seconds = ConfigField.number(r["perSeconds"] ?? .number(1)) ?? .nan
                    guard seconds.isFinite, (0.001...86_400).contains(seconds) else {
                        throw PluginError(
                            "config file \(path): server.rateLimit.perSeconds must be a number from 0.001 to 86400, got \(r["perSeconds"] ?? .nil)"
                        )
                    }
                    rateLimit = (Int(n), seconds)
                case .string(let name) where PluginConfig.serverRanges[name] != nil:
                    let range = PluginConfig.serverRanges[name]!
                    guard let n = ConfigField.number(value), n.isFinite, range.contains(n), name != "maxConnections" || n == n.rounded() else {
                        throw PluginError(
                            "config file \(path): server.\(name) must be a\(name == "maxConnections" ? "n integer" : " number") from \(ConfigField.format(range.lowerBound)) to \(ConfigField.format(range.upperBound)), got \(value)"
                        )
                    }
                    self.server[name] = n
                default:
                    throw PluginError(
                        "config file \(path): unknown key server.\(key) (expected rateLimit, maxBodyMiB, \(PluginConfig.serverRanges.keys.sorted().joined(separator: ", ")))"
                    )
                }
            }
        }
        if let limits = root["limits"] {
            guard case .table(let t) = limits else { throw PluginError("config file \(path): 'limits' must be a table") }
            // Bounds a deployment can want; outside them a typo, not a setting.
            let ranges: [String: ClosedRange<Double>] = [
                "cpuMillis": 1...60_000, "memoryMiB": 1...16_384, "diskMiB": 0...1_048_576, "logKiB": 1...1_048_576,
            ]
            for (key, value) in t.hash {
                guard case .string(let name) = key, let range = ranges[name] else {
                    throw PluginError("config file \(path): unknown key limits.\(key) (expected cpuMillis, memoryMiB, diskMiB, logKiB)")
                }
                guard let n = ConfigField.number(value), n.isFinite, range.contains(n) else {
                    throw PluginError(
                        "config file \(path): limits.\(name) must be a number from \(ConfigField.format(range.lowerBound)) to \(ConfigField.format(range.upperBound)), got \(value)"
                    )
                }
                switch name {
                case "cpuMillis": cpuMillis = n
                case "memoryMiB": memoryMiB = n
                case "logKiB": logKiB = n
                default: diskMiB = n
                }
            }
        }
        if let plugins = root["plugins"] {
            guard case .table(let t) = plugins else { throw PluginError("config file \(path): 'plugins' must be a table") }
            for (key, value) in t.hash {
                guard case .string(let name) = key else { throw PluginError("config file \(path): plugins are named by strings") }
                switch value {
                case .table(let settings): self.plugins[name] = settings
                case .boolean(true): self.plugins[name] = LuaTable()
                case .boolean(false): self.plugins[name] = LuaTable(hash: [.string("enabled"): .boolean(false)])
                default: throw PluginError("config file \(path): plugins[\"\(name)\"] must be a table or a boolean, got \(value)")
                }
            }
            for item in t.array {
                guard case .string(let name) = item else { throw PluginError("config file \(path): plugin list entries must be names") }
                self.plugins[name] = self.plugins[name] ?? LuaTable()
            }
        }
    }
}

/// A plugin problem, reported as one clear line.
public struct PluginError: Error, CustomStringConvertible {
    /// The problem, in one line.
    public let description: String
    /// A plugin problem saying `message`.
    public init(_ message: String) { description = message }
}

/// One key of a plugin's config schema: `{ type = "number", default = 5, min = 0, max = 10 }`.
struct ConfigField {
    let name: String
    let type: String
    let items: String?
    let defaultValue: LuaValue
    let min: Double?
    let max: Double?

    static let types: Set<String> = ["string", "number", "integer", "boolean", "list"]

    init(name: String, spec: LuaValue, plugin: String) throws {
        self.name = name
        guard case .table(let t) = spec else {
            throw PluginError("plugin '\(plugin)': config schema entry '\(name)' must be a table like { type = \"string\", default = … }")
        }
        guard case .string(let type) = t["type"] ?? .nil, ConfigField.types.contains(type) else {
            throw PluginError(
                "plugin '\(plugin)': config schema entry '\(name)' needs type = one of \(ConfigField.types.sorted().joined(separator: ", "))"
            )
        }
        self.type = type
        items = t["items"]?.stringValue
        defaultValue = t["default"] ?? .nil
        min = ConfigField.number(t["min"])
        max = ConfigField.number(t["max"])
        for (bound, v) in [("min", min), ("max", max)] where v.map({ !$0.isFinite }) ?? false {
            throw PluginError("plugin '\(plugin)': config schema entry '\(name)' has a \(bound) that is not a finite number")
        }
        if defaultValue != .nil { _ = try validate(defaultValue, plugin: plugin, what: "default") }
    }

    static func number(_ v: LuaValue?) -> Double? {
        switch v {
        case .integer(let i)?: return Double(i)
        case .number(let d)?: return d
        default: return nil
        }
    }

    /// The value, checked; errors name the plugin, the key and the expected type.
    func validate(_ value: LuaValue, plugin: String, what: String = "config key") throws -> LuaValue {
        func fail(_ expected: String) -> PluginError {
            PluginError("plugin '\(plugin)': \(what) '\(name)' must be \(expected), got \(ConfigField.describe(value))")
        }
        switch (type, value) {
        case ("string", .string): return value
        case ("boolean", .boolean): return value
        case ("number", .number(let d)) where !d.isFinite:
            throw fail("a finite number")
        case ("integer", .integer), ("number", .integer), ("number", .number):
            let n = ConfigField.number(value)!
            if let min, n < min { throw fail("at least \(ConfigField.format(min))") }
            if let max, n > max { throw fail("at most \(ConfigField.format(max))") }
            return value
        case ("list", .table(let t)) where t.hash.isEmpty:
            if let items {
                for item in t.array where ConfigField.luaType(item) != items {
                    throw fail("a list of \(items)s")
                }
            }
            return value
        default:
            throw fail(type == "list" ? "a list\(items.map { " of \($0)s" } ?? "")" : "a\(type == "integer" ? "n" : "") \(type)")
        }
    }

    /// A bad value as an error shows it: a number as written, a string quoted (the first 40
    /// characters) and said to be one, anything else by its type.
    static func shown(_ value: LuaValue) -> String {
        switch value {
        case .integer, .number: return "\(value)"
        case .string(let s): return "\"\(s.count > 40 ? s.prefix(40) + "…" : Substring(s))\" (a string)"
        default: return "a \(luaType(value))"
        }
    }

    static func luaType(_ v: LuaValue) -> String {
        switch v {
        case .nil: return "nil"
        case .boolean: return "boolean"
        case .integer, .number: return "number"
        case .string, .bytes: return "string"
        case .table: return "table"
        case .reference(let r): return r.typeName
        }
    }

    static func describe(_ v: LuaValue) -> String {
        switch v {
        case .string(let s): return "string \"\(s)\""
        case .table: return "a table"
        default: return "\(luaType(v)) \(v)"
        }
    }

    /// A bound or value as the user wrote it: whole numbers without ".0" (any size, NaN or inf
    /// included: this formats, it never converts).
    static func format(_ d: Double) -> String {
        d.isFinite && d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
    }
}
