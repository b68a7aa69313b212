import CLua
import CShareFlowSupport
import Foundation
import ShareFlow

/// What an observer or policy closure needs to call its Lua function, as plain values and an
/// unretained reference: the engine calls it on every event.
///
/// The whole call — the argument table built, the function called, a verdict read — is one
/// protected call made by C (`sf_call_hook`): nothing Swift does on the state can raise
/// through Swift frames, and nothing the plugin returns is read with a metamethod.
struct HookCall {
    let limits: UnsafeMutablePointer<sf_limits>
    let ref: Int32
    let bindings: Unmanaged<Bindings>
    let requests: Unmanaged<RequestTable>
    /// Keeps the function pinned in the registry while the registration lives, and tells
    /// whether the state is still open (a plugin unloaded during a delivery under way).
    let function: LuaReference

    init(_ b: Bindings, _ function: LuaReference) {
        limits = b.lua.limits
        ref = function.ref
        bindings = .passUnretained(b)
        requests = .passUnretained(b.requests)
        self.function = function
    }

    /// Delivers `event` to the observer, under the state's CPU budget.
    func deliver(_ event: Event) throws {
        // By address: copying the event would retain each of its objects.
        _ = try withUnsafePointer(to: event) { event in
            var argument = EventArgument(bindings: bindings, event: event)
            return try withUnsafeMutablePointer(to: &argument) { try call(policy: false, build: buildEvent, $0) }
        }
    }

    /// Asks the policy about `request`, under the state's CPU budget.
    func decide(_ request: PolicyRequest) throws -> PolicyVerdict {
        try withUnsafePointer(to: request) { request in
            var argument = RequestArgument(bindings: bindings, requests: requests, request: request)
            return try withUnsafeMutablePointer(to: &argument) { try call(policy: true, build: buildRequest, $0) }
        }
    }

    private func call(
        policy: Bool,
        build: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32,
        _ argument: UnsafeMutableRawPointer
    ) throws -> PolicyVerdict {
        // A registration whose state was closed since the delivery began: it is gone.
        guard function.lifetime.L != nil else { return .allow }
        // The thread the state serves now: an event raised by a call from one of the plugin's
        // coroutines is delivered on that coroutine's stack, where the builders push.
        let L = bindings._withUnsafeGuaranteedRef { $0.lua.L }
        let base = lua_gettop(L)
        defer {
            lua_settop(L, base)
            if limits.pointee.log_dropped != 0 { bindings._withUnsafeGuaranteedRef { $0.host.reportDroppedLog() } }
            if limits.pointee.close_when_idle != 0 {
                bindings._withUnsafeGuaranteedRef { $0.lua.closeIfIdle() }
            }
        }
        // A store outage the hook met (and perhaps caught, then failed) fails the call with
        // that outage: a policy that could not read the store has not decided (the request is
        // retried, not denied).
        try bindings._withUnsafeGuaranteedRef { b in
            try b.runningHook {
                var h = sf_hook_call(function: ref, build: build, ctx: argument, policy: policy ? 1 : 0, limits: limits)
                let status = sf_call_hook(L, limits, &h)
                guard status == LUA_OK else { throw LuaState.owner(of: L).callError(status) }
            }
        }
        guard policy else { return .allow }
        // sf.approve{} (SPEC §17): 2 and "permission role", words the C side checked.
        if lua_type(L, -2) == LUA_TNUMBER, let words = LuaState.owner(of: L).string(at: -1)?.split(separator: " "), words.count == 2,
            let permission = ParticipantPermission(rawValue: String(words[0])), let role = ParticipantRole(rawValue: String(words[1]))
        {
            noteLocation(L)
            return .approve(permission: permission, role: role)
        }
        if lua_toboolean(L, -2) != 0 { return .allow }
        noteLocation(L)
        return .deny(LuaState.owner(of: L).string(at: -1) ?? "denied")
    }

    /// Tells the policy set where the verdict was made (SPEC §18 P3): the `file:line` of the
    /// `sf.deny`/`sf.approve` call, which C kept. Only after a denial or an approval: an allow
    /// costs nothing more.
    private func noteLocation(_ L: OpaquePointer) {
        guard lua_checkstack(L, 1) != 0 else { return }
        defer { lua_settop(L, -2) }
        var location: String?
        if sf_push_verdict_location(L) == LUA_TSTRING, let text = LuaState.owner(of: L).string(at: -1) {
            location = text.hasSuffix(": ") ? String(text.dropLast(2)) : text
        }
        bindings._withUnsafeGuaranteedRef { b in
            if b.host.isShadow { b.engine.policies.candidates.verdictLocation = location } else { b.engine.policies.verdictLocation = location }
        }
    }

    /// `file:line` where the function at `index` begins, for the decision log.
    static func definedAt(_ L: OpaquePointer, _ index: Int32) -> String? {
        guard lua_checkstack(L, 1) != 0 else { return nil }
        var ar = lua_Debug()
        lua_pushvalue(L, index)
        guard lua_getinfo(L, ">S", &ar) != 0, ar.linedefined > 0 else { return nil }
        let source = withUnsafeBytes(of: &ar.short_src) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return "\(source):\(ar.linedefined)"
    }
}

/// The argument builders `sf_call_hook` calls back, inside its protected call: the event or
/// request travels by address, the bindings unretained.
private struct EventArgument {
    let bindings: Unmanaged<Bindings>
    let event: UnsafePointer<Event>
}

private struct RequestArgument {
    let bindings: Unmanaged<Bindings>
    let requests: Unmanaged<RequestTable>
    let request: UnsafePointer<PolicyRequest>
}

private let buildEvent: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { _, context in
    // The event is borrowed in place: a copy would retain each of its objects and strings.
    let argument = context!.assumingMemoryBound(to: EventArgument.self)
    // Guaranteed, not taken: takeUnretainedValue() retained and released the bindings around
    // the call, two atomic operations per event.
    argument.pointee.bindings._withUnsafeGuaranteedRef { Hooks.pushEvent(argument.pointee.event, $0) }
    return 1
}

private let buildRequest: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { _, context in
    let argument = context!.assumingMemoryBound(to: RequestArgument.self)
    argument.pointee.bindings._withUnsafeGuaranteedRef { b in
        argument.pointee.requests._withUnsafeGuaranteedRef { $0.push(argument.pointee.request, b) }
    }
    return 1
}

/// `sf.on`, `sf.policy`, `sf.allow`, `sf.deny`, `sf.decisions` (SPEC §6): Lua functions as
/// the engine's observers and policies.
enum Hooks {
    /// A registration Lua can remove.
    final class Handle {
        let remove: () -> Void
        var removed = false
        let label: String
        init(label: String, remove: @escaping () -> Void) {
            self.label = label
            self.remove = remove
        }
    }

    static func install(_ lua: LuaState, host: ScriptHost, bindings b: Bindings) {
        let L = lua.L
        let handleClass = LuaClass<Handle>("HookHandle")
        handleClass
            .property("name") { lua, h in lua.push(string: h.label) }
            .method("remove") { _, h in
                if !h.removed {
                    h.remove()
                    h.removed = true
                }
                return 0
            }
            .describe { "Hook(\($0.label)\($0.removed ? ", removed" : ""))" }
        // Its metatable is made by the first push (`LuaClass.register`), when a hook is first
        // registered.

        lua.setFunctions([
            (
                "on",
                { [unowned host, unowned b] call in
                    let eventName = try call.string(1)
                    let fn = try call.function(2)
                    let (priority, name) = try options(call, 3, default: "observer")
                    guard let event = EventKind(name: eventName) else {
                        throw call.argumentError(1, "unknown event '\(eventName)' (expected one of: \(Event.names.joined(separator: ", ")))")
                    }
                    let label = host.labelPrefix + name
                    // The closure holds plain values and an unretained reference, so an event costs no
                    // reference counting here. Safe because the host removes its registrations before
                    // it goes (ScriptHost.deinit).
                    let hook = HookCall(b, fn)
                    // A candidate (shadow mode) decides nothing and does nothing: no observer.
                    if host.isShadow {
                        handleClass.push(Handle(label: name) {}, in: call.state)
                        return 1
                    }
                    let handle = b.engine.events.observe(event, priority: priority, label: label) { ev in
                        try hook.deliver(ev)
                    }
                    host.registrations.append { handle.remove() }
                    handleClass.push(Handle(label: name) { handle.remove() }, in: call.state)
                    return 1
                }
            ),

            (
                "policy",
                { [unowned host, unowned b] call in
                    let pointName = try call.string(1)
                    let fn = try call.function(2)
                    let (priority, name) = try options(call, 3, default: "policy")
                    guard let point = DecisionPoint(name: pointName) else {
                        throw call.argumentError(
                            1,
                            "unknown decision point '\(pointName)' (expected one of: \(PolicySet.points.joined(separator: ", ")))"
                        )
                    }
                    let label = host.labelPrefix + name
                    // As for observers: no reference counting per decision; the host removes its
                    // policies before it goes.
                    let hook = HookCall(b, fn)
                    // A candidate's policies go to the candidate set (shadow mode, SPEC §18 P6).
                    let policies = host.isShadow ? b.engine.policies.candidates : b.engine.policies
                    let id = policies.add(point, name: label, priority: priority, location: HookCall.definedAt(call.L, 2)) { request in
                        try hook.decide(request)
                    }
                    host.registrations.append { policies.remove(id: id) }
                    handleClass.push(Handle(label: name) { policies.remove(id: id) }, in: call.state)
                    return 1
                }
            ),

            (
                "authenticate",
                { [unowned host, unowned b] call in
                    let fn = try call.function(1)
                    let (priority, name) = try options(call, 2, default: "authenticator")
                    if host.isShadow {
                        handleClass.push(Handle(label: name) {}, in: call.state)
                        return 1
                    }
                    // As for policies: the host removes its authenticators before it goes.
                    let bindings = Unmanaged.passUnretained(b)
                    let set = b.engine.authenticators
                    let id = set.add(name: host.labelPrefix + name, priority: priority) { request in
                        try Hooks.authenticate(request, function: fn, bindings: bindings)
                    }
                    host.registrations.append { set.remove(id: id) }
                    handleClass.push(Handle(label: name) { set.remove(id: id) }, in: call.state)
                    return 1
                }
            ),
        ])

        // Made in C: a policy's verdict is read there, raw, and only these three are recognised.
        lua_pushcclosure(L, sf_verdict_allow, 0)
        lua_setfield(L, -2, "allow")
        lua_pushcclosure(L, sf_verdict_deny, 0)
        lua_setfield(L, -2, "deny")
        lua_pushcclosure(L, sf_verdict_approve, 0)
        lua_setfield(L, -2, "approve")

        lua.setFunctions([
            (
                "decisions",
                { [unowned b] call in
                    var filter = DecisionFilter()
                    if !call.isNil(1) {
                        try call.table(1)
                        try call.checkKeys(1, allowed: ["limit", "point", "denied", "since", "caller", "shadowFlips"])
                        filter.limit = try call.integerField(1, "limit", in: 1...DecisionFilter.maxLimit) ?? 20
                        if let point = try call.stringField(1, "point") {
                            guard DecisionPoint(name: point) != nil else {
                                throw call.argumentError(
                                    1,
                                    "unknown decision point '\(Naming.printable(point))' (expected one of: \(PolicySet.points.joined(separator: ", ")))"
                                )
                            }
                            filter.point = point
                        }
                        filter.denied = try call.booleanField(1, "denied") ?? false
                        filter.shadowFlips = try call.booleanField(1, "shadowFlips") ?? false
                        filter.caller = try call.stringField(1, "caller")
                        if let since = try call.stringField(1, "since") {
                            guard let time = DecisionFilter.time(since) else {
                                throw call.argumentError(
                                    1,
                                    "since must be an ISO 8601 time or an age (90s, 10m, 2h, 3d), got '\(Naming.printable(since))'"
                                )
                            }
                            filter.since = time
                        }
                    }
                    let decisions = b.engine.policies.decisions(filter)
                    b.pushList(decisions) { d in Hooks.push(decision: d, b) }
                    return 1
                }
            )
        ])

        // sf.policies.evaluate(point, req) (SPEC §18 P4): a decision asked by hand, nothing
        // changed and nothing logged; `req` in the shape of a logged decision's input.
        lua_createtable(L, 0, 1)
        lua.setFunctions([
            (
                "evaluate",
                { [unowned b] call in
                    let pointName = try call.string(1)
                    guard DecisionPoint(name: pointName) != nil else {
                        throw call.argumentError(
                            1,
                            "unknown decision point '\(Naming.printable(pointName))' (expected one of: \(PolicySet.points.joined(separator: ", ")))"
                        )
                    }
                    var text: [UInt8] = Array("{}".utf8)
                    if lua_type(call.L, 2) == LUA_TSTRING {
                        // A logged decision's `input`, as it is.
                        text = Array(try call.string(2).utf8)
                    } else if !call.isNil(2) {
                        try call.table(2)
                        text = []
                        var seen = Set<UnsafeRawPointer>()
                        var budget = ShareFlowModule.maxJSONValues
                        try ShareFlowModule.encodeJSON(call, 2, into: &text, depth: 0, seen: &seen, budget: &budget)
                    }
                    let request: PolicyRequest
                    do {
                        request = try b.engine.policyRequest(input: text, pointName: pointName)
                    } catch let error as PolicyInputError {
                        throw call.argumentError(2, error.message)
                    }
                    let decision = b.engine.evaluate(request)
                    Hooks.push(decision: decision, b)
                    return 1
                }
            )
        ])
        lua_setfield(L, -2, "policies")
    }

    /// A decision as Lua reads it: `sf.decisions{}`'s items and `sf.policies.evaluate`'s
    /// answer (`allow`, `reason`, `policy`, `trace` besides the log's fields).
    static func push(decision d: PolicyDecision, _ b: Bindings) {
        let L = b.lua.L
        lua_createtable(L, 0, 16)
        lua_pushinteger(L, lua_Integer(d.id))
        lua_setfield(L, -2, "id")
        b.lua.push(string: d.point)
        lua_setfield(L, -2, "point")
        b.lua.push(strings: d.policies)
        lua_setfield(L, -2, "policies")
        lua_pushboolean(L, d.allow ? 1 : 0)
        lua_setfield(L, -2, "allow")
        b.lua.push(strings: d.reasons)
        lua_setfield(L, -2, "reasons")
        lua_pushnumber(L, d.duration)
        lua_setfield(L, -2, "duration")
        lua_pushnumber(L, d.time.timeIntervalSince1970)
        lua_setfield(L, -2, "time")
        let deciding = d.consulted.last { $0.verdict != "allow" }
        b.lua.setField("policy", string: deciding?.policy)
        b.lua.setField("reason", string: deciding?.reason)
        b.lua.setField("location", string: deciding?.location)
        b.lua.setField("caller", string: d.caller)
        b.lua.setField("container", string: d.container)
        b.lua.setField("environment", string: d.environment)
        b.lua.setField("node", string: d.node)
        // A plugin reads who was decided about and why, never the inputs themselves: other
        // people's requests, as large as their callers made them (SPEC §8, §18 P3).
        if !b.withholdsOperatorDetail { b.lua.setField("input", string: d.input) }
        if let share = d.share {
            lua_createtable(L, 0, 3)
            b.lua.setField("recordName", string: share.recordName)
            b.lua.setField("zoneName", string: share.zoneName)
            b.lua.setField("ownerName", string: share.ownerName)
            lua_setfield(L, -2, "share")
        }
        b.pushList(d.consulted) { c in
            lua_createtable(L, 0, 4)
            b.lua.setField("policy", string: c.policy)
            b.lua.setField("verdict", string: c.verdict)
            b.lua.setField("reason", string: c.reason)
            b.lua.setField("location", string: c.location)
        }
        lua_pushvalue(L, -1)
        lua_setfield(L, -3, "trace")
        lua_setfield(L, -2, "consulted")
        if let shadow = d.shadow {
            lua_createtable(L, 0, 3)
            lua_pushboolean(L, shadow.allow ? 1 : 0)
            lua_setfield(L, -2, "allow")
            b.lua.setField("policy", string: shadow.policy)
            b.lua.setField("reason", string: shadow.reason)
            lua_setfield(L, -2, "shadow")
        }
    }

    /// `{ priority = 0, name = "…" }`
    private static func options(_ call: LuaCall, _ i: Int32, default name: String) throws -> (Int, String) {
        guard !call.isNil(i) else { return (0, name) }
        try call.table(i)
        try call.checkKeys(i, allowed: ["priority", "name"])
        let priority = try call.integerField(i, "priority", in: -1_000_000...1_000_000) ?? 0
        return (priority, try call.stringField(i, "name") ?? name)
    }

    /// Calls an authenticator (`ctx.authenticate`) with the request as a table of strings,
    /// under the state's CPU budget, in one protected call. It answers an account, or an
    /// email, phone or userRecordName of one; nothing (not its credential); or nil and a
    /// reason (refused). Anything else refuses: a confused authenticator fails closed.
    static func authenticate(_ r: AuthenticationRequest, function: LuaReference, bindings: Unmanaged<Bindings>) throws -> AuthenticationVerdict {
        guard function.lifetime.L != nil else { return .pass }
        let b = bindings.takeUnretainedValue()
        let lua = b.lua
        var verdict = AuthenticationVerdict.pass
        var who: String?
        let base = lua.top
        defer { lua.top = base }
        // As for policies: an outage met on the way fails the authenticator with it (a 503 the
        // client retries), not a refusal (401, sign-in dropped).
        try b.runningHook {
            try lua.protected { lua in
                let L = lua.L
                lua_rawgeti(L, clua_registryindex(), lua_Integer(function.ref))
                lua_createtable(L, 0, 7)
                for (key, value) in [
                    ("method", r.method), ("path", r.path), ("container", r.container),
                    ("environment", r.environment), ("database", r.database),
                ] {
                    lua.push(string: value)
                    lua_setfield(L, -2, key)
                }
                for (key, table) in [("headers", r.headers), ("query", r.query)] {
                    lua_createtable(L, 0, Int32(min(table.count, 256)))
                    for (name, value) in table {
                        lua.push(string: name)
                        lua.push(string: value)
                        lua_rawset(L, -3)
                    }
                    lua_setfield(L, -2, key)
                }
                try lua.call(arguments: 1, results: 2)
                switch lua_type(L, -2) {
                case LUA_TNIL:
                    if lua_type(L, -1) == LUA_TSTRING { verdict = .refuse(String((lua.string(at: -1) ?? "").prefix(1024))) }
                case LUA_TSTRING:
                    who = lua.string(at: -2)
                case LUA_TUSERDATA:
                    if let handle = lua.object(at: -2, typeName: "Account", as: AccountHandle.self) {
                        verdict = .account(try handle.account)
                    } else {
                        verdict = .refuse("the authenticator returned a userdata that is no Account")
                    }
                default:
                    verdict = .refuse(
                        "the authenticator returned a \(String(cString: lua_typename(L, lua_type(L, -2)))) (expected an account, an email, phone or userRecordName, or nil)"
                    )
                }
                return 0
            }
        }
        guard let who else { return verdict }
        guard who.utf8.count <= 320, let account = try b.engine.accounts.find(who) else {
            return .refuse("no account for '\(who.prefix(320))'")
        }
        return .account(account)
    }

    /// The event's table. Read through its address, field by field: `pointee` as a value would
    /// copy the whole event (retaining each of its objects and strings) per delivery.
    static func pushEvent(_ event: UnsafePointer<Event>, _ b: Bindings) {
        let L = b.lua.L
        let ev = event
        lua_createtable(L, 0, 8)
        b.lua.push(static: ev.pointee.kind.staticName)
        lua_setfield(L, -2, "name")
        // In place: stored properties, so the key paths fold to offsets.
        b.setCallerAndContainer(ev.pointee.callerID, ev.pointer(to: \.caller)!, ev.pointer(to: \.container)!)
        lua_pushnumber(L, ev.pointee.time.timeIntervalSince1970)
        lua_setfield(L, -2, "time")
        // Objects leave the event unmanaged: the event keeps them alive, and passing them on
        // as references would retain and release each one around the call.
        if let s = ev.pointee.share.map(Unmanaged.passUnretained) {
            b.shareClass.push(unretained: s, in: b.lua)
            lua_setfield(L, -2, "share")
        }
        if let p = ev.pointee.participant.map(Unmanaged.passUnretained) {
            b.participantClass.push(unretained: p, in: b.lua)
            lua_setfield(L, -2, "participant")
        }
        if let l = ev.pointee.lookupInfo {
            b.push(l)
            lua_setfield(L, -2, "lookupInfo")
        }
        if let m = ev.pointee.metadata.map(Unmanaged.passUnretained) {
            b.metadataClass.push(unretained: m, in: b.lua)
            lua_setfield(L, -2, "metadata")
        }
        if ev.pointee.hasIdentity {
            b.push(ev.pointee.identity!)
            lua_setfield(L, -2, "identity")
        }
        b.lua.setField("url", string: ev.pointee.url)
        b.lua.setField("reason", string: ev.pointee.reason)
        b.lua.setField("from", string: ev.pointee.from)
        b.lua.setField("to", string: ev.pointee.to)
        b.lua.setField("operation", string: ev.pointee.operation)
        if let c = ev.pointee.created {
            lua_pushboolean(L, c ? 1 : 0)
            lua_setfield(L, -2, "created")
        }
        b.lua.setField("items", integer: ev.pointee.items)
        b.lua.setField("failed", integer: ev.pointee.failed)
        if let d = ev.pointee.duration {
            lua_pushnumber(L, d)
            lua_setfield(L, -2, "duration")
        }
        if ev.pointee.oneTimeURL == true {
            lua_pushboolean(L, 1)
            lua_setfield(L, -2, "oneTimeURL")
        }
        if let approved = ev.pointee.approvedRequester {
            lua_pushboolean(L, approved ? 1 : 0)
            lua_setfield(L, -2, "approvedRequester")
        }
        if let access = ev.pointee.access {
            // SPEC §17: one requester for a request, the list for a denial.
            if ev.pointee.kind == .shareAccessRequested || ev.pointee.kind == .shareAccessRequestDropped {
                if let r = access.requesters.first {
                    b.push(requester: r)
                    lua_setfield(L, -2, "requester")
                }
            } else if !access.requesters.isEmpty {
                b.pushList(access.requesters) { b.push(requester: $0) }
                lua_setfield(L, -2, "requesters")
            }
            if !access.identities.isEmpty {
                b.pushList(access.identities) { b.push(blocked: $0) }
                lua_setfield(L, -2, "identities")
            }
            if ev.pointee.kind == .shareRequestersBlocked {
                b.pushList(access.removedParticipants) { b.participantClass.push(unretained: Unmanaged.passUnretained($0), in: b.lua) }
                lua_setfield(L, -2, "removedParticipants")
            }
        }
        switch ev.pointee.kind {
        case .recordSaved, .recordDeleted, .zoneSaved, .zoneDeleted:
            // A read-only view: the event's record is the engine's, not the observer's to change.
            if let r = ev.pointee.record {
                b.push(record: r)
                lua_setfield(L, -2, "record")
            }
            if let id = ev.pointee.recordID {
                b.push(id)
                lua_setfield(L, -2, "recordID")
            }
            b.lua.setField("recordType", string: ev.pointee.recordType)
            if let z = ev.pointee.zoneID {
                b.push(z)
                lua_setfield(L, -2, "zoneID")
            }
            b.lua.setField("database", string: ev.pointee.database)
        case .subscriptionFired:
            // SPEC §20: what fired, whose it is, and what they are told; the changed record's
            // ID and zone as the record events give them.
            if let firing = ev.pointee.firing {
                b.push(subscription: firing.subscription)
                lua_setfield(L, -2, "subscription")
                b.push(account: firing.owner)
                lua_setfield(L, -2, "owner")
                b.push(notification: firing.notification)
                lua_setfield(L, -2, "notification")
            }
            if let id = ev.pointee.recordID {
                b.push(id)
                lua_setfield(L, -2, "recordID")
            }
            if let z = ev.pointee.zoneID {
                b.push(z)
                lua_setfield(L, -2, "zoneID")
            }
            b.lua.setField("database", string: ev.pointee.database)
        case .faultInjected:
            // The history's fields (SPEC §15), `caller` as the history names them (an email
            // or userRecordID), over the account the other events carry.
            guard let injection = ev.pointee.injection else { break }
            ShareFlowModule.setInjectionFields(injection, b.lua)
        default: break
        }
    }
}
