import CLua
import Foundation
import ShareFlow

/// `Session`: an account acting, the way to its containers.
extension Bindings {
    func defineSession() {
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

}
