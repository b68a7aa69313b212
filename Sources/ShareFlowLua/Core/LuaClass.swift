import CLua
import CShareFlowSupport

/// Binds a Swift class into Lua as userdata: methods, properties and `__tostring`,
/// declared in a few lines.
///
/// ```swift
/// let shareClass = LuaClass<Share>("Share", callerOwned: true)
///     .property(
///         "title",
///         get: { lua, share in try lua.push(share.title.map { .string($0) } ?? .nil) },
///         set: { call, share, index in share.title = try call.optionalString(index) }
///     )
///     .method("removeParticipant", mutating: true) { call, share in
///         let participant = try call.object(2, Participant.self, typeName: "Participant")
///         share.removeParticipant(participant)
///         return 0
///     }
///     .describe { $0.description }
/// shareClass.register(in: lua)
/// shareClass.push(share, in: lua)
/// ```
///
/// Reading an unknown field raises `Share has no field 'x'`, as the SPEC asks for programming
/// mistakes.
public final class LuaClass<Object: AnyObject> {
    /// Pushes a property's value for the object: exactly one value.
    public typealias Getter = (LuaState, Object) throws -> Void
    /// Sets a property from the value at the given stack index (the call's argument 3).
    public typealias Setter = (LuaCall, Object, Int32) throws -> Void
    /// A method's body: the object is argument 1 (`obj:m(...)`); pushes its results and
    /// returns how many.
    public typealias Method = (LuaCall, Object) throws -> Int32

    /// The metatable's name in the registry and its `__name`: what `tostring`, argument errors
    /// and `getmetatable` show.
    public let typeName: String
    private var methods: [(String, Method)] = []
    /// Methods that change the object (guarded like setters in a plugin's state).
    private var mutating: Set<String> = []
    private var getters: [String: Getter] = [:]
    private var setters: [String: Setter] = [:]
    private var describer: ((Object) -> String)?
    private var extraMeta: [(String, (LuaCall) throws -> Int32)] = []

    /// Objects of this class can belong to a caller (records, shares, participants): in a state
    /// that `guardsWrites`, setters and mutating methods work only on objects it made.
    public let callerOwned: Bool

    /// A class named `typeName` without members: declare them, then `register(in:)` it in
    /// each state that pushes its objects.
    public init(_ typeName: String, callerOwned: Bool = false) {
        self.typeName = typeName
        self.callerOwned = callerOwned
    }

    /// - Parameter mutating: the method changes the object, so a plugin may call it only on
    ///   objects it made itself (`LuaState.guardsWrites`).
    @discardableResult
    public func method(_ name: String, mutating: Bool = false, _ body: @escaping Method) -> Self {
        methods.append((name, body))
        if mutating { self.mutating.insert(name) }
        return self
    }

    /// Adds a field: `get` pushes its value; with `set` it may be assigned (`obj.key = v`), and
    /// without it assigning it raises `field is read-only`.
    @discardableResult
    public func property(_ name: String, get: @escaping Getter, set: Setter? = nil) -> Self {
        getters[name] = get
        if let set { setters[name] = set }
        return self
    }

    /// What `tostring(object)` gives.
    @discardableResult
    public func describe(_ body: @escaping (Object) -> String) -> Self {
        describer = body
        return self
    }

    /// Adds a metamethod (`__pairs`, `__len`, `__eq`, …).
    @discardableResult
    public func metamethod(_ name: String, _ body: @escaping (LuaCall) throws -> Int32) -> Self {
        extraMeta.append((name, body))
        return self
    }

    /// Member declarations not made yet (`declareLater`): made when the class is first
    /// registered, or its members first listed.
    /// Plain closures, not `(LuaClass) -> Void`: an array of those is a new generic type for
    /// each bound class, its metadata made at run time in every process that starts.
    private var declarations: [() -> Void] = []
    /// Whether the metatable exists in the state this class serves (one `LuaClass` per state).
    /// Unchecked: read on every push (the event path), by the state's one executor; the dynamic
    /// exclusivity check cost 60 instructions an event.
    @exclusivity(unchecked) public private(set) var isRegistered = false

    /// Declares members later: when the class is first registered (`register(in:)`, which the
    /// first `push` of one of its objects does) or its members first listed (`memberNames`).
    /// A state pays for a class's metatable, its functions and their Swift closures only once
    /// it holds one of its objects: most plugins hold few of the bound types, and every class
    /// made up front was most of a state's start (issue 48). `body` must not hold the object
    /// that owns this class strongly (it would never be freed): capture it `unowned`.
    @discardableResult
    public func declareLater(_ body: @escaping () -> Void) -> Self {
        declarations.append(body)
        return self
    }

    private func declarePending() {
        while !declarations.isEmpty {
            let pending = declarations
            declarations = []
            for body in pending { body() }
        }
    }

    /// Every field and method name, for completion in the console.
    public var memberNames: (fields: [String], methods: [String]) {
        declarePending()
        return (getters.keys.sorted(), methods.map(\.0).sorted())
    }

    /// Creates the metatable once per state. Called on the first push of one of its objects
    /// (`push`), inside whatever protected call pushes it: only raw operations and pushes after
    /// `lua_checkstack`, and growth is never refused while Swift runs (`sf_alloc`), so nothing
    /// here raises; the memory it takes is charged when the host call returns, like any other.
    public func register(in lua: LuaState) {
        guard !isRegistered else { return }
        let L = lua.L
        // The metatable, the method table, the getters' table or a function being made, and
        // the function's box with its metatable: 8 is room to spare.
        guard lua_checkstack(L, 8) != 0 else { return }
        declarePending()
        isRegistered = true
        guard luaL_newmetatable(L, typeName) != 0 else {
            lua.pop()
            return
        }
        sf_set_gc(L)
        lua.push(string: typeName)
        lua_setfield(L, -2, "__name")
        // Out of Lua's reach: getmetatable gives the name. A script that could edit the real
        // metatable could swap its C __gc for a Lua loop that no hook stops.
        lua.push(string: typeName)
        lua_setfield(L, -2, "__metatable")

        // Methods live in a plain table, looked up raw by __index before the getters.
        lua_createtable(L, 0, Int32(methods.count))
        let guarded = lua.guardsWrites && callerOwned
        for (name, body) in methods {
            let typeName = self.typeName
            let checksWrites = guarded && mutating.contains(name)
            lua.push(function: name) { call in
                guard let object = call.state.object(at: 1, typeName: typeName, as: Object.self) else {
                    throw call.argumentError(1, "\(typeName) expected, got \(call.typeName(1)); call it with ':'")
                }
                if checksWrites && !call.state.isWritable(at: 1) {
                    throw call.argumentError(1, "\(typeName) is read-only in a plugin: it belongs to the caller")
                }
                return try body(call, object)
            }
            lua_setfield(L, -2, name)
        }
        let getters = self.getters
        let setters = self.setters
        let typeName = self.typeName
        // The method table stays on the stack for the C __index below.
        let methodsIndex = lua_gettop(L)
        // Getters by position, found through a Lua table of name → position: the key stays a
        // Lua string (no Swift string made and hashed per property read).
        let getterList = Array(getters.values)
        lua_createtable(L, 0, Int32(getters.count))
        for (i, name) in getters.keys.enumerated() {
            lua_pushinteger(L, lua_Integer(i))
            lua_setfield(L, -2, name)
        }
        let gettersRef = luaL_ref(L, clua_registryindex())
        lua_pushvalue(L, methodsIndex)
        // Properties: the part of __index that is Swift (methods never get here).
        lua.push(function: "__index") { call in
            guard let object = call.state.object(at: 1, typeName: typeName, as: Object.self) else { return 0 }
            let L = call.L
            lua_settop(L, 2)
            lua_rawgeti(L, clua_registryindex(), lua_Integer(gettersRef))
            lua_pushvalue(L, 2)
            let found = lua_rawget(L, -2) == LUA_TNUMBER
            let index = Int(lua_tointegerx(L, -1, nil))
            lua_settop(L, 2)
            guard found else {
                throw LuaRaise.message("\(typeName) has no field '\(call.state.string(at: 2) ?? call.typeName(2))'")
            }
            try getterList[index](call.state, object)
            return 1
        }
        sf_push_class_index(L)
        lua_setfield(L, -3, "__index")
        lua.pop()  // the method table

        lua.push(function: "__newindex") { call in
            guard let object = call.state.object(at: 1, typeName: typeName, as: Object.self) else { return 0 }
            guard let key = call.state.string(at: 2) else {
                throw LuaRaise.message("\(typeName) fields are named by strings")
            }
            guard let set = setters[key] else {
                let reason = getters[key] == nil ? "has no field" : "field is read-only:"
                throw LuaRaise.message(call.position + "\(typeName) \(reason) '\(key)'")
            }
            if guarded && !call.state.isWritable(at: 1) {
                throw LuaRaise.message(call.position + "\(typeName) is read-only in a plugin: it belongs to the caller (field '\(key)')")
            }
            try set(call, object, 3)
            return 0
        }
        lua_setfield(L, -2, "__newindex")

        if let describer {
            lua.push(function: "__tostring") { call in
                guard let object = call.state.object(at: 1, typeName: typeName, as: Object.self) else { return 0 }
                call.state.push(string: describer(object))
                return 1
            }
            lua_setfield(L, -2, "__tostring")
        }
        for (name, body) in extraMeta {
            lua.push(function: name, body)
            lua_setfield(L, -2, name)
        }
        lua.pop()
    }

    /// Pushes `object` with this class's metatable (made now if this is the state's first).
    public func push(_ object: Object, in lua: LuaState) {
        guard registered(in: lua) else { return lua_pushnil(lua.L) }
        if lua.push(unretained: .passUnretained(object), typeName: typeName), let cost = hostCost {
            charge(object, cost, lua)
        }
    }

    /// As `push(_:in:)`, for the event path: the caller's value keeps `object` alive, and
    /// passing it unmanaged spares a retain and a release around the call.
    func push(unretained object: Unmanaged<Object>, in lua: LuaState) {
        guard registered(in: lua) else { return lua_pushnil(lua.L) }
        if lua.push(unretained: .fromOpaque(object.toOpaque()), typeName: typeName), let cost = hostCost {
            charge(object.takeUnretainedValue(), cost, lua)
        }
    }

    /// Whether the metatable exists, making it first if not. False only when the stack has no
    /// room to make it (a state within 8 slots of Lua's stack limit): the caller then pushes
    /// nil, never userdata without its metatable (no `__gc` would release the object).
    @inline(__always)
    private func registered(in lua: LuaState) -> Bool {
        if _fastPath(isRegistered) { return true }
        register(in: lua)
        return isRegistered
    }

    /// What an object of this class holds in Swift memory (records: their fields), charged
    /// against a capped state's memory while Lua keeps the object (SPEC §8). Nil: small.
    var hostCost: ((Object) -> Int)?

    private func charge(_ object: Object, _ cost: (Object) -> Int, _ lua: LuaState) {
        guard lua.memoryLimit != 0 else { return }
        sf_charge_object(lua.L, -1, cost(object))
    }
}
