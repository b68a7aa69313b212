import CLua
import CShareFlowBench
import CShareFlowSupport
import Foundation
import GRDBSQLite
import ShareFlow
import ShareFlowLua

/// The SPEC §12 figures, each measured beside its baseline in the same process and moment:
/// medians of several repetitions after a warm-up.
public struct Benchmarks {
    public struct Sizes: Sendable {
        public var accounts = 1_000_000
        public var lookups = 100_000
        public var accepts = 10_000
        public var hookCalls = 200_000
        public var shares = 1_000
        public var participantsPerShare = 100
        public var coldStarts = 10
        public var repetitions = 5
        /// `serve`: HTTP connections (one user each), shares they resolve, seconds per figure.
        public var connections = 64
        public var serveShares = 200
        public var serveSeconds = 5.0
        /// `records`: the parent chain's length (the measured saves are at its last 100 levels,
        /// 300–400 at full size) and the big query zone (the small one is a hundredth of it).
        public var chainDepth = 400
        public var queryZone = 100_000
        /// `sync`: records in the shared zone a participant syncs first (SPEC §14).
        public var syncZone = 100_000
        /// `log`: records a batch saves, and one-record saves, edits and accepts, per round.
        public var logBatch = 400
        public var logOnes = 50
        /// `notify`: subscriptions on the watched zone, and writes timed to a held poll.
        public var notifySubscriptions = 1000
        public var notifyDelays = 200

        public init() {}

        /// Small sizes for the test suite: every figure produced, quickly.
        public static var smoke: Sizes {
            var s = Sizes()
            s.accounts = 3_000
            s.lookups = 500
            s.accepts = 100
            s.hookCalls = 2_000
            s.shares = 10
            s.participantsPerShare = 10
            s.coldStarts = 2
            s.repetitions = 2
            s.connections = 8
            s.serveShares = 10
            s.serveSeconds = 0.5
            s.chainDepth = 120
            s.queryZone = 2_000
            s.syncZone = 2_000
            s.logBatch = 40
            s.logOnes = 5
            s.notifySubscriptions = 20
            s.notifyDelays = 10
            return s
        }
    }

    /// The figure groups a run can be limited to (`shareflow bench --only hooks`), for profiling.
    public static let groups = ["memory", "hooks", "fetch", "reads", "accept", "records", "sync", "log", "cold", "serve", "assets", "notify"]

    public var sizes: Sizes
    /// Groups to run; empty runs all.
    public var only: Set<String> = []
    public var pluginDirectories: [String]
    /// A PostgreSQL database (`postgres://…`) `serve` may copy its store into (a scratch
    /// database made from it, dropped after), for the PostgreSQL rows; nil: SQLite only.
    public var postgres: String?
    /// The shareflow binary, for the cold start.
    public var binary: String
    public var progress: (String) -> Void

    public init(sizes: Sizes, pluginDirectories: [String], binary: String, progress: @escaping (String) -> Void = { _ in }) {
        self.sizes = sizes
        self.pluginDirectories = pluginDirectories
        self.binary = binary
        self.progress = progress
    }

    /// Every figure by its key (SPEC §12 / issue names).
    public func run() throws -> [String: Any] {
        var r: [String: Any] = [:]
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("shareflow-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }

        func wanted(_ group: String) -> Bool { only.isEmpty || only.contains(group) }

        // First: later phases leave freed memory that would hide this one's growth.
        if wanted("memory") {
            progress("resident memory: \(sizes.shares) shares × \(sizes.participantsPerShare) participants")
            let (rss, rssDelta) = try residentMemory(in: scratch)
            r["rss_mib_1000x100"] = rss
            r["rss_delta_mib_1000x100"] = rssDelta
        }
        if wanted("hooks") {
            progress("hook dispatch and policy decision")
            let (hook, hookC, policy, policyC) = try hooksAndPolicies()
            r["hook_dispatch_ns"] = median(hook)
            r["hook_dispatch_c_ns"] = median(hookC)
            r["hook_dispatch_ratio"] = pairedRatio(hook, hookC)
            r["policy_decision_ns"] = median(policy)
            r["policy_decision_c_ns"] = median(policyC)
            r["policy_decision_ratio"] = pairedRatio(policy, policyC)
            // SPEC §12 wave 4, §18 P3: on a store whose decision log every process shares, each
            // decision's input captured; the log's JSON and its write after the timed decisions.
            progress("policy decision with the store's decision log capturing its input")
            let (_, _, logged, loggedC) = try hooksAndPolicies(store: scratch.appendingPathComponent("decisions.sqlite").path)
            r["policy_decision_logged_ns"] = median(logged)
            r["policy_decision_logged_c_ns"] = median(loggedC)
            r["policy_decision_logged_ratio"] = pairedRatio(logged, loggedC)
        }
        if wanted("fetch") {
            progress("fetch participants: \(sizes.lookups) lookups against \(sizes.accounts) accounts")
            let (fetch, sqlite) = try fetchParticipants(in: scratch)
            r["fetch_participants_per_s"] = median(fetch)
            r["sqlite_lookups_per_s"] = median(sqlite)
            r["fetch_participants_vs_sqlite"] = pairedRatio(fetch, sqlite)
        }
        if wanted("reads") {
            progress("reads: db:fetchRecord and FetchShareMetadata (64 participants) beside the raw SQLite reads of their rows")
            let (record, recordRaw) = try fetchRecordVersusSQLite(in: scratch)
            r["fetch_record_per_s"] = median(record)
            r["fetch_record_sqlite_per_s"] = median(recordRaw)
            r["fetch_record_vs_sqlite"] = pairedRatio(record, recordRaw)
            let (metadata, metadataRaw) = try shareMetadataVersusSQLite(in: scratch)
            r["share_metadata_64_per_s"] = median(metadata)
            r["share_metadata_64_sqlite_per_s"] = median(metadataRaw)
            r["share_metadata_64_vs_sqlite"] = pairedRatio(metadata, metadataRaw)
            let silent = try accessRequestSilentCases(in: scratch)
            r["request_access_unknown_p50_us"] = silent.unknown
            r["request_access_closed_p50_us"] = silent.closed
            r["request_access_blocked_p50_us"] = silent.blocked
            // SPEC §17 R39: ≤ 1.2.
            let p50s = [silent.unknown, silent.closed, silent.blocked]
            r["request_access_silent_spread"] = p50s.max()! / p50s.min()!
        }
        if wanted("accept") {
            progress("accept: \(sizes.accepts) accepts without and with the allow-list policy")
            let (plain, withPolicy, ratio) = try accepts(in: scratch)
            r["accept_per_s"] = plain
            r["accept_with_policy_per_s"] = withPolicy
            r["accept_with_policy_vs_without"] = ratio
        }
        if wanted("records") {
            progress("records: saves at depth \(sizes.chainDepth - 100)–\(sizes.chainDepth) of one chain; a query page in \(sizes.queryZone) records")
            let (deep, shallow) = try deepChainSaves(in: scratch)
            r["deep_chain_save_ms"] = median(deep)
            r["shallow_save_ms"] = median(shallow)
            r["deep_chain_save_ratio"] = pairedRatio(deep, shallow)
            let (big, small) = try queryPages(in: scratch)
            r["query_page_big_ms"] = median(big)
            r["query_page_small_ms"] = median(small)
            r["query_page_100k_vs_1k"] = pairedRatio(big, small)
        }
        if wanted("sync") {
            progress("sync: a participant's first sync of a \(sizes.syncZone)-record shared zone, and the delta after edits and deletes")
            let f = try sync(in: scratch)
            r["sync_first_s"] = median(f.firstSeconds)
            r["sync_first_sqlite_s"] = median(f.rawSeconds)
            // Time of the raw scan over ours: ≥ 0.5 means the first sync costs at most twice the scan.
            r["sync_first_vs_sqlite"] = pairedRatio(f.rawSeconds, f.firstSeconds)
            r["sync_first_reading_fields_s"] = median(f.firstReadingSeconds)
            r["sync_first_reading_fields_vs_sqlite"] = pairedRatio(f.rawBesideReadingSeconds, f.firstReadingSeconds)
            r["sync_delta_s"] = median(f.deltaSeconds)
            r["sync_delta_vs_first"] = median(f.deltaSeconds) / median(f.firstSeconds)
            r["sync_records"] = Double(f.records)
            r["sync_save_records_per_s"] = Double(f.records) / f.saveSeconds
        }
        if wanted("log") {
            progress("log: saves and accepts on a store that logs changes and on one that does not")
            for figure in try changeLogCost(in: scratch) {
                r["log_\(figure.key)_us"] = median(figure.logged)
                r["log_\(figure.key)_unlogged_us"] = median(figure.unlogged)
                r["log_\(figure.key)_vs_unlogged"] = pairedRatio(figure.logged, figure.unlogged)
            }
        }
        if wanted("assets"), let f = try assets(in: scratch) {
            r["asset_10mib_https_mib_per_s"] = f.shareflow
            r["asset_10mib_bare_tls_mib_per_s"] = f.bare
            r["asset_10mib_https_vs_bare_tls"] = f.shareflow / f.bare
        }
        if wanted("notify") {
            progress("notifications: saves under \(sizes.notifySubscriptions) subscriptions vs none; writes to a held poll")
            let f = try notifications(in: scratch)
            r["notify_write_1000_us"] = median(f.watched)
            r["notify_write_none_us"] = median(f.unwatched)
            r["notify_1000_subscriptions_write_ratio"] = pairedRatio(f.watched, f.unwatched)
            r["notify_fanout_1000_us"] = median(f.fanout)
            r["notify_delay_p50_ms"] = percentile(f.delays, 0.5)
            r["notify_delay_p99_ms"] = percentile(f.delays, 0.99)
            if !f.delaysPG.isEmpty {
                r["notify_delay_pg2_p50_ms"] = percentile(f.delaysPG, 0.5)
                r["notify_delay_pg2_p99_ms"] = percentile(f.delaysPG, 0.99)
            }
        }
        if wanted("serve") {
            let f = try serve(in: scratch)
            r["serve_resolve_per_s"] = f.resolveHTTP
            r["serve_resolve_in_process_per_s"] = f.resolveInProcess
            r["serve_resolve_vs_in_process"] = f.resolveHTTP / f.resolveInProcess
            r["serve_resolve_p50_ms"] = f.resolveP50
            r["serve_resolve_p99_ms"] = f.resolveP99
            // The framework's floor (SPEC §12 wave 4): a bare Hummingbird route answering the
            // same bytes under the same load, in alternating rounds. The ratio is resolve/bare,
            // so higher is better and "within 2× of the bare route" is ≥ 0.5.
            if !f.bareRounds.isEmpty {
                r["serve_bare_route_per_s"] = median(f.bareRounds)
                r["serve_resolve_beside_bare_route_per_s"] = median(f.resolveRounds)
                r["serve_resolve_vs_bare_route"] = pairedRatio(f.resolveRounds, f.bareRounds)
            }
            r["serve_accept_per_s"] = f.acceptHTTP
            r["serve_accept_in_process_per_s"] = f.acceptInProcess
            r["serve_accept_vs_in_process"] = f.acceptHTTP / f.acceptInProcess
            r["serve_accept_p50_ms"] = f.acceptP50
            r["serve_accept_p99_ms"] = f.acceptP99
            if let locked = f.resolveWhileLocked {
                r["serve_resolve_locked_per_s"] = locked.0
                r["serve_resolve_locked_p99_ms"] = locked.2
                // SPEC §16 M5: ≤ 2 (before, the whole busy timeout).
                r["serve_resolve_locked_p99_vs_alone"] = locked.2 / f.resolveP99
            }
            if let mixed = f.resolveBesideAccepts {
                r["serve_resolve_half_per_s"] = mixed.alone.0
                r["serve_resolve_half_p99_ms"] = mixed.alone.1
                r["serve_resolve_beside_accepts_per_s"] = mixed.beside.0
                r["serve_resolve_beside_accepts_p99_ms"] = mixed.beside.1
                r["serve_accepts_beside_resolves_per_s"] = mixed.accepts
                // SPEC §12 wave 4: ≥ 0.7.
                r["serve_resolve_beside_accepts_vs_alone"] = mixed.beside.0 / mixed.alone.0
            }
            if let one = f.resolveBesideAcceptsOneThread {
                r["serve_one_thread_resolve_half_per_s"] = one.alone.0
                r["serve_one_thread_resolve_beside_accepts_per_s"] = one.beside.0
                r["serve_one_thread_resolve_beside_accepts_p99_ms"] = one.beside.1
                r["serve_one_thread_accepts_beside_resolves_per_s"] = one.accepts
                r["serve_one_thread_resolve_beside_accepts_vs_alone"] = one.beside.0 / one.alone.0
            }
            r["serve_errors"] = f.errors
            r["serve_connections"] = sizes.connections
            for (name, perCPU) in f.perCPUSecond { r["serve_\(name)_per_cpu_s"] = perCPU }
            for (count, pg) in f.postgres {
                let key = "serve_pg\(count)"
                r[key + "_resolve_per_s"] = pg.resolve.0
                r[key + "_resolve_p50_ms"] = pg.resolve.1
                r[key + "_resolve_p99_ms"] = pg.resolve.2
                r[key + "_accept_per_s"] = pg.accept.0
                r[key + "_accept_p50_ms"] = pg.accept.1
                r[key + "_accept_p99_ms"] = pg.accept.2
                r[key + "_resolve_vs_sqlite"] = pg.resolve.0 / f.resolveHTTP
                r[key + "_accept_vs_sqlite"] = pg.accept.0 / f.acceptHTTP
                // Where the cores are the limit (PostgreSQL, the node and the load client on
                // the same cores), what a request costs: per CPU second, against SQLite's.
                for (name, perCPU) in pg.perCPUSecond {
                    r[key + "_\(name)_per_cpu_s"] = perCPU
                    if let sqlite = f.perCPUSecond[name] { r[key + "_\(name)_per_cpu_vs_sqlite"] = perCPU / sqlite }
                }
            }
        }
        if wanted("cold") {
            progress("cold start")
            let (cold, luaCold) = try coldStart(in: scratch)
            r["cold_start_ms"] = cold
            r["lua_cold_start_ms"] = luaCold ?? NSNull()
        }

        r["sizes"] = [
            "accounts": sizes.accounts, "lookups": sizes.lookups, "accepts": sizes.accepts,
            "hook_calls": sizes.hookCalls, "shares": sizes.shares, "participants_per_share": sizes.participantsPerShare,
            "repetitions": sizes.repetitions, "chain_depth": sizes.chainDepth, "query_zone": sizes.queryZone,
            "sync_zone": sizes.syncZone, "log_batch": sizes.logBatch, "log_ones": sizes.logOnes,
            "notify_subscriptions": sizes.notifySubscriptions, "notify_delays": sizes.notifyDelays,
        ]
        r["machine"] = Benchmarks.machine()
        r["date"] = ISO8601DateFormatter().string(from: Date())
        return r
    }

    // MARK: Figures

    func median(_ values: [Double]) -> Double {
        let s = values.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    /// The median of the ratios of repetitions measured back to back: a pause on a noisy
    /// machine moves one pair, not the ratio.
    func pairedRatio(_ ours: [Double], _ baseline: [Double]) -> Double {
        median(zip(ours, baseline).map { $0 / $1 })
    }

    /// Nanoseconds per call of each repetition: (event, its C baseline, policy, its C baseline).
    /// `store`: a file gives the engine the store's shared decision log (SPEC §18 P3).
    func hooksAndPolicies(store: String = ":memory:") throws -> ([Double], [Double], [Double], [Double]) {
        let engine = Engine(store: try Store(path: store))
        defer { engine.store.close() }
        engine.logger.logLevel = .critical
        let alice = try engine.accounts.create(emails: ["alice@example.com"])
        _ = try engine.accounts.create(emails: ["bob@example.com"])
        let host = try ScriptHost(engine: engine)
        try host.run(
            """
            calls = 0
            function bench_observer(ev) calls = calls + 1 end
            function bench_policy(req) if req.caller == nil then return false, "no caller" end end
            shareflow.on("participant.fetched", bench_observer)
            shareflow.policy("share.accept", bench_policy)
            """
        )
        let container = "iCloud.com.example.bench"
        let lookup = LookupInfo.emailAddress("bob@example.com")
        let participant = try engine.fetchShareParticipant(lookup, caller: alice, container: container)
        var event = Event(.participantFetched, caller: alice, container: container)
        event.lookupInfo = lookup
        event.participant = participant
        let zone = RecordZoneID(zoneName: "Z", ownerName: alice.userRecordID)
        let share = Share(rootRecord: Record(recordType: "T", recordID: RecordID(recordName: "r", zoneID: zone)))
        let request = PolicyRequest(point: .shareAccept, caller: alice, container: container, share: share, participant: participant)

        // The baseline's arguments: the same Lua function and the same objects, made once.
        let L = host.lua.L
        host.bindings.push(account: alice)
        let callerRef = luaL_ref(L, clua_registryindex())
        host.bindings.push(participant: participant)
        let participantRef = luaL_ref(L, clua_registryindex())
        host.bindings.push(record: share)
        let shareRef = luaL_ref(L, clua_registryindex())
        // The LookupInfo metatable the host gives an event's lookupInfo, for the baseline's.
        try host.run("bench_lookup = shareflow.LookupInfo{emailAddress = 'bob@example.com'}")
        host.lua.getGlobal("bench_lookup")
        guard lua_getmetatable(L, -1) != 0 else { throw PluginError("LookupInfo has no metatable") }
        let lookupMetaRef = luaL_ref(L, clua_registryindex())
        lua_settop(L, -2)
        host.lua.getGlobal("bench_observer")
        let observerRef = luaL_ref(L, clua_registryindex())
        host.lua.getGlobal("bench_policy")
        let policyRef = luaL_ref(L, clua_registryindex())

        let n = sizes.hookCalls
        func timed(_ body: () throws -> Void) rethrows -> Double {
            let start = sf_now_ns()
            try body()
            return Double(sf_now_ns() - start) / Double(n)
        }
        var hook: [Double] = []
        var hookC: [Double] = []
        var policy: [Double] = []
        var policyC: [Double] = []
        for rep in 0...sizes.repetitions {
            let h = timed { for _ in 0..<n { engine.publish(event) } }
            let hc = Double(sf_bench_event_baseline(L, observerRef, callerRef, participantRef, lookupMetaRef, Int32(n))) / Double(n)
            let p = try timed { for _ in 0..<n { try engine.decide(request, item: "bench") } }
            // The log's share of the work, after the decisions (SPEC §12: outside the timed one).
            engine.publishDecisions()
            let pc = Double(sf_bench_policy_baseline(L, policyRef, callerRef, shareRef, participantRef, Int32(n))) / Double(n)
            guard hc > 0, pc > 0 else { throw PluginError("the C baseline failed") }
            if rep == 0 { continue }  // warm-up
            hook.append(h)
            hookC.append(hc)
            policy.append(p)
            policyC.append(pc)
        }
        return (hook, hookC, policy, policyC)
    }

    /// Look-ups per second of each repetition: (FetchShareParticipants, raw SQLite).
    func fetchParticipants(in scratch: URL) throws -> ([Double], [Double]) {
        let path = scratch.appendingPathComponent("fetch.sqlite").path
        let engine = Engine(store: try Store(path: path))
        engine.logger.logLevel = .critical
        let owner = try engine.accounts.create(emails: ["owner@bench.example"])
        try bulkAccounts(engine, count: sizes.accounts)
        // Deterministic, so runs look up the same emails.
        var generator = SplitMix64(seed: 42)
        let emails = (0..<sizes.lookups).map { _ in "user\(Int(generator.next() % UInt64(sizes.accounts)))@bench.example" }
        let container = try engine.session(for: owner).container("iCloud.com.example.bench")

        var raw: OpaquePointer?
        guard sqlite3_open_v2(path, &raw, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { throw PluginError("cannot open \(path)") }
        defer { sqlite3_close(raw) }
        var statement: OpaquePointer?
        // The same statement the engine runs, straight through SQLite's C API.
        sqlite3_prepare_v2(raw, StoreTransaction.identityByEmailSQL, -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

        func rawRate() -> Double {
            let start = sf_now_ns()
            var found = 0
            for email in emails {
                sqlite3_reset(statement)
                sqlite3_bind_text(statement, 1, email, -1, transient)
                if sqlite3_step(statement) == SQLITE_ROW {
                    _ = sqlite3_column_text(statement, 0)
                    _ = sqlite3_column_text(statement, 1)
                    _ = sqlite3_column_text(statement, 2)
                    found += 1
                }
            }
            precondition(found == emails.count, "every bench email exists")
            return Double(emails.count) / (Double(sf_now_ns() - start) / 1e9)
        }
        func engineRate() throws -> Double {
            let requests = emails.map { LookupRequest(emailAddress: $0) }
            let start = sf_now_ns()
            let (results, error) = container.fetchShareParticipantResults(requests)
            let seconds = Double(sf_now_ns() - start) / 1e9
            if let error { throw error }
            precondition(results.count == emails.count)
            return Double(emails.count) / seconds
        }
        return try pairedRuns(ours: engineRate, baseline: rawRate)
    }

    /// Each repetition measures the baseline, then ours, back to back; the first pair is a
    /// warm-up. Returns (ours, baseline).
    func pairedRuns(ours: () throws -> Double, baseline: () throws -> Double) rethrows -> ([Double], [Double]) {
        var measured: [Double] = []
        var baselines: [Double] = []
        for rep in 0...sizes.repetitions {
            let b = try baseline()
            let o = try ours()
            if rep == 0 { continue }
            baselines.append(b)
            measured.append(o)
        }
        return (measured, baselines)
    }

    /// Accounts `user<i>@bench.example`, inserted in bulk (setup, not measured).
    func bulkAccounts(_ engine: Engine, count: Int) throws {
        _ = try engine.store.seedAccounts(
            count: count,
            email: { "user\($0)@bench.example" },
            name: { NameComponents(givenName: "User \($0)") },
            discoverable: { $0 % 2 == 0 }
        )
    }

    /// `count` shares owned by owner@example.com, each with `guests` pending participants,
    /// inserted in bulk (setup, not measured). Returns the URLs.
    func bulkShares(_ engine: Engine, count: Int, guests: [(id: Int64, email: String)]) throws -> [String] {
        let owner = try engine.accounts.create(emails: ["owner@example.com"])
        let c = try engine.session(for: owner).container("iCloud.com.example.bench")
        _ = try c.privateCloudDatabase.saveZone("Bench")
        return try engine.store.seedShares(
            owner: owner,
            container: c.containerID,
            zoneName: "Bench",
            count: count,
            guests: guests
        ).map(engine.shareURL(token:))
    }

    /// Accepts per second without and with the allow-list policy, and the median ratio of
    /// adjacent rounds.
    func accepts(in scratch: URL) throws -> (Double, Double, Double) {
        let engine = Engine(store: try Store(path: scratch.appendingPathComponent("accept.sqlite").path))
        engine.logger.logLevel = .critical
        let bob = try engine.accounts.create(emails: ["bob@example.com"])
        // Many short alternating rounds: a WAL checkpoint landing in one round moves only that
        // round's pair, and the median of the pairs' ratios ignores it.
        let rounds = 10
        let perRound = max(sizes.accepts / rounds, 1)
        let urls = try bulkShares(engine, count: 2 * rounds * perRound, guests: [(bob.id, "bob@example.com")])
        let container = try engine.session(for: bob).container("iCloud.com.example.bench")
        let (metas, error) = container.fetchShareMetadataResults(urls)
        if let error { throw error }
        let metadatas = try metas.map { try $0.1.get() }
        var config = PluginConfig()
        config.plugins["domain-allowlist"] = LuaTable(hash: [.string("domains"): .table(LuaTable(array: [.string("example.com")]))])
        let plugins = PluginManager(
            engine: engine,
            directories: pluginDirectories,
            config: config,
            dataDirectory: scratch.appendingPathComponent("plugin-data").path
        )
        func rate(_ slice: ArraySlice<ShareMetadata>) throws -> Double {
            let start = sf_now_ns()
            let (results, error) = container.acceptShareResults(Array(slice))
            let seconds = Double(sf_now_ns() - start) / 1e9
            if let error { throw error }
            precondition(results.count == slice.count)
            return Double(slice.count) / seconds
        }
        // Alternate without/with, so neither gets the warmer cache.
        var plain: [Double] = []
        var policy: [Double] = []
        var next = 0
        for _ in 0..<rounds {
            plugins.unload("domain-allowlist")
            plain.append(try rate(metadatas[next..<next + perRound]))
            next += perRound
            try plugins.load("domain-allowlist")
            policy.append(try rate(metadatas[next..<next + perRound]))
            next += perRound
            progress(String(format: "  accepts/s without %.0f, with the policy %.0f", plain.last!, policy.last!))
        }
        let accepted = try engine.store.acceptedParticipantCount()
        precondition(accepted == next, "every accept was committed")
        return (median(plain), median(policy), pairedRatio(policy, plain))
    }

    func coldStart(in scratch: URL) throws -> (Double, Double?) {
        let empty = scratch.appendingPathComponent("empty.lua")
        try "".write(to: empty, atomically: true, encoding: .utf8)
        let config = scratch.appendingPathComponent("cold.config.lua")
        try """
        return { plugins = { ["domain-allowlist"] = true, ["audit-log"] = true, ["expiring-invitations"] = true } }
        """.write(to: config, atomically: true, encoding: .utf8)
        var args = ["run", "--store", ":memory:", "--config", config.path]
        for d in pluginDirectories { args += ["--plugins", d] }
        args.append(empty.path)
        let ours = try (0...sizes.coldStarts).map { _ in try timeProcess(binary, args) }.dropFirst()
        let lua = ["/usr/bin/lua5.4", "/usr/local/bin/lua5.4"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let theirs = try lua.map { path in try (0...sizes.coldStarts).map { _ in try timeProcess(path, [empty.path]) }.dropFirst() }
        return (median(Array(ours)), theirs.map { median(Array($0)) })
    }

    /// Wall time of one run of a process, spawned directly (posix_spawn, waitpid).
    func timeProcess(_ path: String, _ args: [String]) throws -> Double {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + args).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let start = sf_now_ns()
        guard posix_spawn(&pid, path, &actions, nil, argv, environ) == 0 else { throw PluginError("cannot start \(path)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let ms = Double(sf_now_ns() - start) / 1e6
        guard status == 0 else { throw PluginError("\(path) \(args.joined(separator: " ")) failed (status \(status))") }
        return ms
    }

    /// Milliseconds to save 100 records one call each at depth `chainDepth - 100`… of one parent
    /// chain under a shared root, and 100 children of that root, per repetition (SPEC §12: ≤ 3×).
    func deepChainSaves(in scratch: URL) throws -> ([Double], [Double]) {
        let engine = Engine(store: try Store(path: scratch.appendingPathComponent("chain.sqlite").path))
        engine.logger.logLevel = .critical
        let owner = try engine.accounts.create(emails: ["owner@example.com"])
        _ = try engine.accounts.create(emails: ["guest@example.com"])
        let db = try engine.session(for: owner).container("iCloud.com.example.bench").privateCloudDatabase
        let zone = try db.saveZone("Chain").zoneID
        // The chain, 100 records a call (each call's records are saved parents first).
        var chain: [Record] = []
        for i in 0..<sizes.chainDepth {
            chain.append(
                Record(
                    recordType: "Node",
                    recordID: RecordID(recordName: "n\(i)", zoneID: zone),
                    fields: ["title": .string("Node \(i)"), "body": .string(String(repeating: "x", count: 200))],
                    parent: i == 0 ? nil : chain[i - 1].recordID
                )
            )
        }
        let share = Share(rootRecord: chain[0])
        let participant = try db.container.fetchShareParticipantResults([LookupRequest(emailAddress: "guest@example.com")]).0[0].1.get()
        share.addParticipant(participant)
        for start in stride(from: 0, to: chain.count, by: 100) {
            let batch = Array(chain[start..<min(start + 100, chain.count)]) + (start == 0 ? [share] : [])
            if let e = try db.modifyRecords(saving: batch).error { throw e }
        }
        let deepParents = chain.suffix(100).map(\.recordID)
        var deep: [Double] = []
        var shallow: [Double] = []
        for rep in 0...sizes.repetitions {
            func timed(_ parent: (Int) -> RecordID, _ tag: String) throws -> Double {
                let start = DispatchTime.now().uptimeNanoseconds
                for i in 0..<100 {
                    let r = Record(
                        recordType: "Leaf",
                        recordID: RecordID(recordName: "\(tag)\(rep)-\(i)", zoneID: zone),
                        fields: ["title": .string("Leaf \(i)")],
                        parent: parent(i)
                    )
                    if let e = try db.modifyRecords(saving: [r]).error { throw e }
                }
                return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
            }
            let d = try timed({ deepParents[$0 % deepParents.count] }, "deep")
            let s = try timed({ _ in chain[0].recordID }, "shallow")
            if rep > 0 {
                deep.append(d)
                shallow.append(s)
            }  // repetition 0 warms up
        }
        return (deep, shallow)
    }

    /// Milliseconds for the first page of 50, sorted by modificationDate (newest first), in a
    /// zone of `queryZone` records and in one of a hundredth of it (SPEC §12: ≤ 3×).
    func queryPages(in scratch: URL) throws -> ([Double], [Double]) {
        let engine = Engine(store: try Store(path: scratch.appendingPathComponent("query.sqlite").path))
        engine.logger.logLevel = .critical
        let owner = try engine.accounts.create(emails: ["owner@example.com"])
        let db = try engine.session(for: owner).container("iCloud.com.example.bench").privateCloudDatabase
        let big = try db.saveZone("Big").zoneID
        let small = try db.saveZone("Small").zoneID
        try engine.store.seedRecords(owner: owner, container: db.container.containerID, zoneName: "Big", count: sizes.queryZone)
        try engine.store.seedRecords(owner: owner, container: db.container.containerID, zoneName: "Small", count: max(1, sizes.queryZone / 100))
        let query = Query(recordType: "Item", sortDescriptors: [SortDescriptor(key: "modificationDate", ascending: false)])
        var bigTimes: [Double] = []
        var smallTimes: [Double] = []
        for rep in 0...sizes.repetitions {
            func timed(_ zone: RecordZoneID) throws -> Double {
                let start = DispatchTime.now().uptimeNanoseconds
                for _ in 0..<10 {
                    let page = try db.records(matching: query, inZoneWith: zone, resultsLimit: 50)
                    precondition(page.records.count == min(50, zone == big ? sizes.queryZone : max(1, sizes.queryZone / 100)))
                }
                return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e7
            }
            let b = try timed(big)
            let s = try timed(small)
            if rep > 0 {
                bigTimes.append(b)
                smallTimes.append(s)
            }
        }
        return (bigTimes, smallTimes)
    }

    func residentMemory(in scratch: URL) throws -> (Double, Double) {
        let engine = Engine(store: try Store(path: scratch.appendingPathComponent("rss.sqlite").path))
        engine.logger.logLevel = .critical
        let emails = (0..<(sizes.participantsPerShare - 1)).map { "guest\($0)@example.com" }
        let guests = try engine.store.seedAccounts(count: emails.count, email: { emails[$0] })
        _ = try bulkShares(engine, count: sizes.shares, guests: Array(zip(guests, emails)).map { (id: $0.0, email: $0.1) })
        let owner = try engine.accounts.find(LookupInfo.emailAddress("owner@example.com"))!
        let db = try engine.session(for: owner).container("iCloud.com.example.bench").privateCloudDatabase
        let zone = RecordZoneID(zoneName: "Bench", ownerName: owner.userRecordID)
        let before = Benchmarks.residentMiB()
        var loaded: [Share] = []
        for i in 0..<sizes.shares {
            loaded.append(try db.fetchRecord(RecordID(recordName: "share\(i)", zoneID: zone)) as! Share)
        }
        let participants = loaded.reduce(0) { $0 + $1.participants.count }
        precondition(participants == sizes.shares * sizes.participantsPerShare, "all participants loaded")
        let after = Benchmarks.residentMiB()
        withExtendedLifetime(loaded) {}
        return (after, after - before)
    }

    // MARK: Machine

    public static func residentMiB() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let pages = Double(text.split(separator: " ")[1])
        else { return 0 }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }

    static func machine() -> [String: Any] {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { String($0.split(separator: ":", maxSplits: 1)[1]).trimmingCharacters(in: .whitespaces) } ?? "unknown"
        return ["cores": ProcessInfo.processInfo.activeProcessorCount, "cpu": model]
    }
}
