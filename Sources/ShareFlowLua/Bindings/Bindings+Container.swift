import CLua
import Foundation
import ShareFlow

/// `Container`: a container as one account sees it; its databases, operations and
/// convenience calls.
extension Bindings {
    /// The options table of `container(id, { environment = … })` at `i` (absent: development, R32).
    func containerOptions(_ call: LuaCall, _ i: Int32) throws -> CloudEnvironment {
        guard !call.isNil(i) else { return .default }
        try call.table(i)
        try call.checkKeys(i, allowed: ["environment"])
        guard let name = try call.stringField(i, "environment") else { return .default }
        return try raising { try CloudEnvironment(named: name) }
    }

    func defineContainer() {
        containerClass
            .property("containerIdentifier") { lua, c in lua.push(string: c.containerIdentifier) }
            .property("environment") { lua, c in lua.push(string: c.environment.rawValue) }
            .property("privateCloudDatabase") { [unowned self] _, c in push(database: c.privateCloudDatabase) }
            .property("sharedCloudDatabase") { [unowned self] _, c in push(database: c.sharedCloudDatabase) }
            .property("publicCloudDatabase") { [unowned self] _, c in push(database: c.publicCloudDatabase) }
            .property("session") { [unowned self] _, c in push(session: c.session) }
            .method("add") { [unowned self] call, c in
                let op = try operation(call, 2)
                c.add(op.operation)
                return 0
            }
            .method("waitUntilAllOperationsAreFinished") { _, c in
                c.waitUntilAllOperationsAreFinished()
                return 0
            }
            .method("fetchShareParticipants") { [unowned self] call, c in
                let requests = try lookupRequests(call, 2)
                let (results, error) = c.fetchShareParticipantResults(requests)
                // Fresh participants, the caller's own: a plugin may set their permission.
                pushList(results.compactMap { try? $0.1.get() }) {
                    push(participant: $0)
                    lua.markWritable(at: -1)
                }
                push(error)
                return 2
            }
            .method("fetchShareMetadata") { [unowned self] call, c in
                let urls = try stringList(call, 2)
                var fetchRoot = false
                var keys: [String]?
                if !call.isNil(3) {
                    try call.table(3)
                    try call.checkKeys(3, allowed: ["shouldFetchRootRecord", "rootRecordDesiredKeys"])
                    fetchRoot = try call.booleanField(3, "shouldFetchRootRecord") ?? false
                    if call.field(3, "rootRecordDesiredKeys") != LUA_TNIL { keys = try stringList(call, -1) }
                    call.state.pop()
                }
                let (results, error) = c.fetchShareMetadataResults(urls, shouldFetchRootRecord: fetchRoot, rootRecordDesiredKeys: keys)
                lua_createtable(call.L, 0, Int32(results.count))
                for (url, r) in results {
                    if let m = try? r.get() {
                        // The whole URL as the key, NUL bytes and all (lua_setfield would cut it).
                        call.state.push(string: url)
                        push(metadata: m)
                        lua_rawset(call.L, -3)
                    }
                }
                push(error)
                return 2
            }
            .method("requestShareAccess") { [unowned self] call, c in
                // O11: `results[url] = true` for each URL that succeeded, silent ones included.
                let urls = try stringList(call, 2)
                let (results, error) = c.requestShareAccessResults(urls)
                lua_createtable(call.L, 0, Int32(results.count))
                for (url, r) in results where (try? r.get()) != nil {
                    // The whole URL as the key, NUL bytes and all (lua_setfield would cut it).
                    call.state.push(string: url)
                    lua_pushboolean(call.L, 1)
                    lua_rawset(call.L, -3)
                }
                push(error)
                return 2
            }
            .method("acceptShares") { [unowned self] call, c in
                let metadatas = try metadataList(call, 2)
                let (results, error) = c.acceptShareResults(metadatas)
                pushList(results.compactMap { try? $0.1.get() }) {
                    push(record: $0)
                    lua.markWritable(at: -1)
                }
                push(error)
                return 2
            }
            .method("discoverAllUserIdentities") { [unowned self] call, c in
                var progress: LuaReference?
                if !call.isNil(2) {
                    try call.table(2)
                    if call.field(2, "progress") == LUA_TFUNCTION { progress = call.state.reference(at: -1) }
                    call.state.pop()
                }
                let (found, error) = c.discoverAllUserIdentityResults(
                    progress: progress.map { ref in
                        { [unowned self] done, total in
                            callback(ref, "progress") {
                                lua_pushinteger(self.lua.L, lua_Integer(done))
                                lua_pushinteger(self.lua.L, lua_Integer(total))
                                return 2
                            }
                        }
                    } ?? host.defaultDiscoveryProgress
                )
                pushList(found) { push($0) }
                push(error)
                return 2
            }
            .method("discoverUserIdentities") { [unowned self] call, c in
                let requests = try lookupRequests(call, 2)
                let (found, error) = c.discoverUserIdentityResults(requests)
                pushList(found) { push($0) }
                push(error)
                return 2
            }
            .describe { c in
                "Container(\(c.containerIdentifier)\(c.environment == .default ? "" : " \(c.environment)"), as \((try? c.session.account.email) ?? nil ?? "?"))"
            }
    }
}
