import CLua
import Foundation
import ShareFlow

/// `sf.as` and `sf.container`: acting as an account.
extension ShareFlowModule {
    static func sessionFunctions(_ host: ScriptHost, _ b: Bindings) -> [ModuleFunction] {
        [
            (
                "as",
                { [unowned b] call in
                    let session: Session
                    if let a = call.state.object(at: 1, typeName: b.accountClass.typeName, as: AccountHandle.self) {
                        session = b.engine.session(for: try a.account)
                    } else {
                        let who = try call.string(1)
                        session = try b.raising { try b.engine.session(for: who) }
                    }
                    b.push(session: session)
                    return 1
                }
            ),
            (
                "container",
                { [unowned b, unowned host] call in
                    let id = try call.string(1)
                    let environment = try b.containerOptions(call, 2)
                    guard let who = host.defaultSession else {
                        throw LuaRaise.message("shareflow.container: no acting user; pass --as WHO or use shareflow.as(who):container(id)")
                    }
                    let session = try b.raising { try b.engine.session(for: who) }
                    b.push(container: try b.raising { try session.container(id, environment: environment) })
                    return 1
                }
            ),
        ]
    }
}
