import CLua
import Foundation
import ShareFlow

/// An account as Lua holds it: re-read from the store on each access, so it always shows
/// what is stored.
final class AccountHandle {
    let engine: Engine
    let id: Int64
    let userRecordID: String
    private var cached: Account
    private var generation: Int

    init(engine: Engine, account: Account) {
        self.engine = engine
        self.id = account.id
        self.userRecordID = account.userRecordID
        self.cached = account
        self.generation = engine.accountsGeneration
    }

    /// The account as stored: the snapshot unless the directory changed since.
    var account: Account {
        get throws {
            if generation != engine.accountsGeneration {
                guard let a = try engine.accounts.get(userRecordID: userRecordID) else {
                    throw ShareFlowError(.unknownItem, "account \(userRecordID) no longer exists")
                }
                cached = a
                generation = engine.accountsGeneration
            }
            return cached
        }
    }
}

/// The fields of a record, as a read/write table view.
final class RecordFields {
    let record: Record
    init(record: Record) { self.record = record }
}

/// Every ShareFlow type's Lua class, for one script host, and the helpers that push and read
/// them. The bindings wrap the Swift API; they enforce no rule of their own.
package final class Bindings {
    unowned let host: ScriptHost
    // Stored, not read through `host`: these are on every event's path.
    let lua: LuaState
    let engine: Engine

    let accountClass = LuaClass<AccountHandle>("Account")
    let sessionClass = LuaClass<Session>("Session")
    let containerClass = LuaClass<Container>("Container")
    let databaseClass = LuaClass<CloudDatabase>("Database")
    let recordClass = LuaClass<Record>("Record", callerOwned: true)
    let shareClass = LuaClass<Share>("Share", callerOwned: true)
    let fieldsClass = LuaClass<RecordFields>("RecordFields", callerOwned: true)
    let participantClass = LuaClass<Participant>("Participant", callerOwned: true)
    let metadataClass = LuaClass<ShareMetadata>("ShareMetadata")
    let cursorClass = LuaClass<QueryCursor>("QueryCursor")
    var operationClasses: [String: LuaClass<LuaOperation>] = [:]
    /// Registry refs of the value tables' metatables (LookupInfo, RecordID, …).
    @exclusivity(unchecked) var valueMetatables: [Int32] = []
    var operationMakers: [String: () -> CloudOperation] = [:]
    /// The operations in the order `defineOperations` lists them.
    var operationNames: [String] = []
    /// Policy requests as tables (kept here: a table can outlive the policy that got it).
    private(set) lazy var requests = RequestTable(self)

    init(host: ScriptHost) {
        self.host = host
        self.lua = host.lua
        self.engine = host.engine
        // Records hold their fields in Swift: charged to a capped state that keeps them.
        recordClass.hostCost = { $0.hostBytes }
        shareClass.hostCost = { $0.hostBytes }
        fieldsClass.hostCost = { $0.record.hostBytes }
    }

    func register() {
        registerValueMetatables()
        defineAccount()
        defineSession()
        defineContainer()
        defineDatabase()
        defineRecord(recordClass)
        defineRecord(shareClass)
        defineShare()
        defineFields()
        defineParticipant()
        defineMetadata()
        defineCursor()
        defineQueryMethod()
        for c in [accountClass, sessionClass, containerClass, databaseClass, fieldsClass] as [AnyLuaClass] { c.registerAny(in: lua) }
        recordClass.register(in: lua)
        shareClass.register(in: lua)
        participantClass.register(in: lua)
        metadataClass.register(in: lua)
        cursorClass.register(in: lua)
        defineOperations()
    }

    // MARK: Push and read

    /// One handle per account, so an account is the same Lua value wherever it appears.
    @exclusivity(unchecked) private var accountHandles: [Int64: AccountHandle] = [:]

    /// The last account pushed and its userdata, pinned in the registry: an event's caller is
    /// usually the previous event's too, and this skips hashing and the identity cache. The
    /// pin keeps nothing alive that would otherwise go: `accountHandles` holds the handle.
    @exclusivity(unchecked) private var lastAccount: (id: Int64, ref: Int32) = (0, LUA_NOREF)

    package func push(account: Account) {
        if account.id == lastAccount.id, lastAccount.ref != LUA_NOREF {
            lua_rawgeti(lua.L, clua_registryindex(), lua_Integer(lastAccount.ref))
            return
        }
        let handle = accountHandles[account.id] ?? {
            let h = AccountHandle(engine: engine, account: account)
            accountHandles[account.id] = h
            return h
        }()
        accountClass.push(handle, in: lua)
        lastAccount = (account.id, pinTop(replacing: lastAccount.ref))
    }

    /// Pins the value on top of the stack in the registry (leaving it there) in place of the
    /// value pinned at `old`; returns the new ref.
    private func pinTop(replacing old: Int32) -> Int32 {
        luaL_unref(lua.L, clua_registryindex(), old)
        lua_pushvalue(lua.L, -1)
        return luaL_ref(lua.L, clua_registryindex())
    }

    /// Sets the `caller` and `container` fields of the table on top of the stack (events and
    /// policy requests both carry them).
    func setCallerAndContainer(_ caller: Account?, _ container: String?) {
        if let c = caller { push(account: c); lua_setfield(lua.L, -2, "caller") }
        if let c = container { push(container: c); lua_setfield(lua.L, -2, "container") }
    }
    /// A container identifier. Events of one container repeat it, so the last one's Lua
    /// string is kept: comparing Swift strings that share storage is one word, where pushing
    /// would hash and intern it again.
    func push(container identifier: String) {
        if identifier == lastContainer.identifier, lastContainer.ref != LUA_NOREF {
            lua_rawgeti(lua.L, clua_registryindex(), lua_Integer(lastContainer.ref))
            return
        }
        lua.push(string: identifier)
        lastContainer = (identifier, pinTop(replacing: lastContainer.ref))
    }
    @exclusivity(unchecked) private var lastContainer: (identifier: String, ref: Int32) = ("", LUA_NOREF)

    func push(session: Session) { sessionClass.push(session, in: lua) }
    func push(container: Container) { containerClass.push(container, in: lua) }
    func push(database: CloudDatabase) { databaseClass.push(database, in: lua) }
    package func push(participant: Participant?) {
        guard let participant else { return lua_pushnil(lua.L) }
        participantClass.push(participant, in: lua)
    }
    func push(metadata: ShareMetadata?) {
        guard let metadata else { return lua_pushnil(lua.L) }
        metadataClass.push(metadata, in: lua)
    }
    package func push(record: Record?) {
        guard let record else { return lua_pushnil(lua.L) }
        if let share = record as? Share { shareClass.push(share, in: lua) } else { recordClass.push(record, in: lua) }
    }

    func record(at i: Int32) -> Record? {
        lua.object(at: i, typeName: shareClass.typeName, as: Share.self)
            ?? lua.object(at: i, typeName: recordClass.typeName, as: Record.self)
    }

    /// Pushes `value, nil` on success or `nil, err` on a data failure (Lua's convention).
    func pushResult(_ body: () throws -> Void) throws -> Int32 {
        do {
            try body()
            lua_pushnil(lua.L)
            return 2
        } catch let e as ShareFlowError {
            lua_pushnil(lua.L)
            push(e)
            return 2
        }
    }

    /// Runs `body`; a ShareFlow error is raised as an error value (for calls whose failure is
    /// a programming or administration mistake).
    func raising<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as ShareFlowError { throw raise(e) }
    }

    // MARK: Account

    private func defineAccount() {
        accountClass
            .property("userRecordID") { lua, a in lua.push(string: a.userRecordID) }
            .property("email") { lua, a in try lua.push(try a.account.email.map { .string($0) } ?? .nil) }
            .property("emails") { lua, a in lua.push(strings: try a.account.emails) }
            .property("phone") { lua, a in try lua.push(try a.account.phones.first.map { .string($0) } ?? .nil) }
            .property("phones") { lua, a in lua.push(strings: try a.account.phones) }
            .property("name") { [unowned self] _, a in push(try a.account.name) }
            .property("discoverable") { lua, a in try lua.push(.boolean(try a.account.isDiscoverable)) }
            .property("discoverability") { lua, a in lua.push(string: try a.account.discoverability.rawValue) }
            .property("contacts") { [unowned self] lua, a in
                let contacts = try a.account.contacts
                lua_createtable(lua.L, Int32(contacts.count), 0)
                for (n, c) in contacts.enumerated() {
                    push(c.lookupInfo)
                    lua.push(string: c.contactIdentifier)
                    lua_setfield(lua.L, -2, "contactIdentifier")
                    lua_rawseti(lua.L, -2, lua_Integer(n + 1))
                }
            }
            .method("addEmail") { [unowned self] call, a in
                let email = try call.string(2)
                _ = try raising { try engine.accounts.addEmail(email, to: try a.account) }
                lua_settop(call.L, 1)
                return 1
            }
            .method("addPhone") { [unowned self] call, a in
                let phone = try call.string(2)
                _ = try raising { try engine.accounts.addPhone(phone, to: try a.account) }
                lua_settop(call.L, 1)
                return 1
            }
            .method("setDiscoverable") { [unowned self] call, a in
                let on = try call.boolean(2)
                _ = try raising { try engine.accounts.setDiscoverability(on ? .granted : .denied, of: try a.account) }
                lua_settop(call.L, 1)
                return 1
            }
            .method("setName") { [unowned self] call, a in
                try call.table(2)
                let name = try nameComponents(call, 2, position: 2)
                _ = try raising { try engine.accounts.setName(name, of: try a.account) }
                lua_settop(call.L, 1)
                return 1
            }
            .method("addContacts") { [unowned self] call, a in
                try call.table(2)
                var contacts: [(value: String, identifier: String?)] = []
                for n in 0..<call.length(2) {
                    let t = try call.element(2, n + 1)
                    defer { call.state.pop() }
                    if t == LUA_TSTRING {
                        contacts.append((call.state.string(at: -1)!, nil))
                    } else if t == LUA_TTABLE {
                        let value = try call.stringField(-1, "emailAddress") ?? call.stringField(-1, "email")
                            ?? call.stringField(-1, "phoneNumber") ?? call.stringField(-1, "phone")
                        guard let value else { throw call.argumentError(2, "contact #\(n + 1) needs an email or phone") }
                        contacts.append((value, try call.stringField(-1, "contactIdentifier")))
                    } else {
                        throw call.argumentError(2, "contact #\(n + 1) must be a string or table, got \(call.typeName(-1))")
                    }
                }
                _ = try raising { try engine.accounts.addContacts(contacts, to: try a.account) }
                lua_settop(call.L, 1)
                return 1
            }
            .describe { a in (try? a.account.description) ?? "Account(\(a.userRecordID), deleted)" }
            .metamethod("__eq") { call in
                let a = call.state.object(at: 1, typeName: "Account", as: AccountHandle.self)
                let b = call.state.object(at: 2, typeName: "Account", as: AccountHandle.self)
                lua_pushboolean(call.L, a != nil && a?.userRecordID == b?.userRecordID ? 1 : 0)
                return 1
            }
    }

    // MARK: Session, container, database

    private func defineSession() {
        sessionClass
            .property("account") { [unowned self] _, s in push(account: try s.account) }
            .method("container") { [unowned self] call, s in
                let id = try call.string(2)
                let environment = try containerOptions(call, 3)
                push(container: try raising { try s.container(id, environment: environment) })
                return 1
            }
            .describe { s in "Session(\((try? s.account.email) ?? nil ?? "?"))" }
    }

    /// The options table of `container(id, { environment = … })` at `i` (absent: development, R32).
    func containerOptions(_ call: LuaCall, _ i: Int32) throws -> CloudEnvironment {
        guard !call.isNil(i) else { return .default }
        try call.table(i)
        try call.checkKeys(i, allowed: ["environment"])
        guard let name = try call.stringField(i, "environment") else { return .default }
        return try raising { try CloudEnvironment(named: name) }
    }

    private func defineContainer() {
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
                pushList(results.compactMap { try? $0.1.get() }) { push(participant: $0); lua.markWritable(at: -1) }
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
                        push(metadata: m)
                        lua_setfield(call.L, -2, url)
                    }
                }
                push(error)
                return 2
            }
            .method("acceptShares") { [unowned self] call, c in
                let metadatas = try metadataList(call, 2)
                let (results, error) = c.acceptShareResults(metadatas)
                pushList(results.compactMap { try? $0.1.get() }) { push(record: $0); lua.markWritable(at: -1) }
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
                let (found, error) = c.discoverAllUserIdentityResults(progress: progress.map { ref in
                    { [unowned self] done, total in
                        callback(ref, "progress") { lua_pushinteger(self.lua.L, lua_Integer(done)); lua_pushinteger(self.lua.L, lua_Integer(total)); return 2 }
                    }
                } ?? host.defaultDiscoveryProgress)
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
            .describe { c in "Container(\(c.containerIdentifier)\(c.environment == .default ? "" : " \(c.environment)"), as \((try? c.session.account.email) ?? nil ?? "?"))" }
    }

    private func defineDatabase() {
        databaseClass
            .property("databaseScope") { lua, d in lua.push(string: d.databaseScope.rawValue) }
            .property("container") { [unowned self] _, d in push(container: d.container) }
            .method("saveZone") { [unowned self] call, d in
                let name = try call.string(2)
                return try pushResult { push(try d.saveZone(name)) }
            }
            .method("fetchAllRecordZones") { [unowned self] call, d in
                try pushResult {
                    let zones = try d.fetchAllRecordZones()
                    pushList(zones) { push($0) }
                }
            }
            .method("fetchRecord") { [unowned self] call, d in
                let id = try recordID(call, 2, position: 2)
                // A fetched record is a fresh copy: the caller's to change and save (R21).
                return try pushResult { push(record: try d.fetchRecord(id)); lua.markWritable(at: -1) }
            }
            .method("fetchRecords") { [unowned self] call, d in
                try call.table(2)
                let ids = try (0..<call.listLength(2)).map { n -> RecordID in
                    try call.element(2, n + 1)
                    defer { call.state.pop() }
                    return try recordID(call, -1, position: 2)
                }
                let results = d.fetchRecords(ids)
                pushList(results.compactMap { try? $0.1.get() }) { push(record: $0); lua.markWritable(at: -1) }
                let failures = results.compactMap { id, r -> (item: String, error: ShareFlowError)? in
                    if case .failure(let e) = r { return (id.description, e) }
                    return nil
                }
                push(failures.isEmpty ? nil : ShareFlowError(.partialFailure, "\(failures.count) of \(ids.count) records could not be fetched", partialErrors: failures))
                return 2
            }
            .method("modifyRecords") { [unowned self] call, d in
                try call.table(2)
                try call.checkKeys(2, allowed: ["save", "delete", "savePolicy", "atomic"])
                var savePolicy = RecordSavePolicy.ifServerRecordUnchanged
                if call.field(2, "savePolicy") != LUA_TNIL {
                    savePolicy = try enumValue(call, -1, RecordSavePolicy.self, name: "savePolicy")
                }
                call.state.pop()
                var atomic = true
                switch call.field(2, "atomic") {
                case LUA_TNIL: break
                case LUA_TBOOLEAN: atomic = lua_toboolean(call.L, -1) != 0
                default: throw call.argumentError(2, "field 'atomic' must be a boolean, got \(call.typeName(-1))")
                }
                call.state.pop()
                var saving: [Record] = [], deleting: [RecordID] = []
                if call.field(2, "save") != LUA_TNIL {
                    try call.table(-1)
                    saving = try (0..<call.length(-1)).map { n -> Record in
                        try call.element(-1, n + 1)
                        defer { call.state.pop() }
                        guard let r = record(at: -1) else { throw call.argumentError(2, "save[\(n + 1)] must be a record or share, got \(call.typeName(-1))") }
                        // A save stamps what it saves (change tag, URL): not the caller's objects.
                        guard call.state.isWritable(at: -1) else {
                            throw call.argumentError(2, "save[\(n + 1)] is read-only in a plugin: it belongs to the caller")
                        }
                        return r
                    }
                }
                call.state.pop()
                if call.field(2, "delete") != LUA_TNIL {
                    try call.table(-1)
                    deleting = try (0..<call.length(-1)).map { n -> RecordID in
                        try call.element(-1, n + 1)
                        defer { call.state.pop() }
                        return try recordID(call, -1, position: 2)
                    }
                }
                call.state.pop()
                do {
                    let result = try d.modifyRecords(saving: saving, deleting: deleting, savePolicy: savePolicy, atomically: atomic)
                    pushList(result.saved) { push(record: $0); lua.markWritable(at: -1) }
                    push(result.error)
                } catch let e as ShareFlowError {
                    lua_pushnil(call.L)
                    push(e)
                }
                return 2
            }
            .describe { d in "Database(\(d.databaseScope.rawValue), \(d.container.containerIdentifier))" }
    }
}

/// Lets different `LuaClass` types be registered from one list.
protocol AnyLuaClass { func registerAny(in lua: LuaState) }
extension LuaClass: AnyLuaClass { func registerAny(in lua: LuaState) { register(in: lua) } }
