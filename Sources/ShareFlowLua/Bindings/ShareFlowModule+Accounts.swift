import CLua
import Foundation
import ShareFlow

/// `sf.accounts`: the directory of accounts (create, find, get, list, count).
extension ShareFlowModule {
    static func accountFunctions(_ b: Bindings) -> [ModuleFunction] {
        [
            (
                "create",
                { [unowned b] call in
                    try call.table(1)
                    try call.checkKeys(1, allowed: ["email", "emails", "phone", "phones", "name", "discoverable"])
                    var emails = try call.stringField(1, "email").map { [$0] } ?? []
                    var phones = try call.stringField(1, "phone").map { [$0] } ?? []
                    if call.field(1, "emails") != LUA_TNIL { emails += try b.stringList(call, -1) }
                    call.state.pop()
                    if call.field(1, "phones") != LUA_TNIL { phones += try b.stringList(call, -1) }
                    call.state.pop()
                    var name = NameComponents()
                    switch call.field(1, "name") {
                    case LUA_TNIL: break
                    case LUA_TTABLE: name = try b.nameComponents(call, -1, position: 1)
                    default:
                        let got = call.typeName(-1)
                        call.state.pop()
                        throw call.argumentError(1, "field 'name' must be a table of name components ({ given = …, family = … }), got \(got)")
                    }
                    call.state.pop()
                    let discoverable = try call.booleanField(1, "discoverable") ?? false
                    let account = try b.raising {
                        try b.engine.accounts.create(emails: emails, phones: phones, name: name, discoverable: discoverable)
                    }
                    b.push(account: account)
                    return 1
                }
            ),
            (
                "find",
                { [unowned b] call in
                    let account: Account?
                    if let who = call.state.string(at: 1) {
                        account = try? b.engine.accounts.find(who)
                    } else {
                        let request = try b.lookupRequest(call, 1, position: 1)
                        account = try request.info.flatMap { try b.engine.accounts.find($0) }
                    }
                    if let account { b.push(account: account) } else { lua_pushnil(call.L) }
                    return 1
                }
            ),
            (
                "get",
                { [unowned b] call in
                    let id = try call.string(1)
                    if let account = try b.engine.accounts.get(userRecordID: id) { b.push(account: account) } else { lua_pushnil(call.L) }
                    return 1
                }
            ),
            (
                "list",
                { [unowned b] _ in
                    let all = try b.engine.accounts.list()
                    b.pushList(all) { b.push(account: $0) }
                    return 1
                }
            ),
            (
                "count",
                { [unowned b] call in
                    lua_pushinteger(call.L, lua_Integer(try b.engine.accounts.count()))
                    return 1
                }
            ),
        ]
    }
}
