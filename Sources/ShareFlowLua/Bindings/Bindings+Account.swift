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

/// `Account`: an account of the directory (`sf.accounts`), its addresses, name and contacts.
extension Bindings {
    func defineAccount() {
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
                        let value =
                            try call.stringField(-1, "emailAddress") ?? call.stringField(-1, "email")
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
}
