import CLua
import Foundation
import ShareFlow

/// `DiscoverAllUserIdentitiesOperation`: its fields and blocks (the common ones: `defineCommon`).
extension Bindings {
    func defineDiscoverAll(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> DiscoverAllUserIdentitiesOperation { o.operation as! DiscoverAllUserIdentitiesOperation }
        blockProperty(cls, "userIdentityDiscoveredBlock") { [unowned self] o, ref in
            op(o).userIdentityDiscoveredBlock = ref.map { ref in
                { [unowned self] identity in
                    callback(ref, "userIdentityDiscoveredBlock") {
                        push(identity)
                        return 1
                    }
                }
            }
        }
        blockProperty(cls, "progressBlock") { [unowned self] o, ref in
            op(o).progressBlock = ref.map { ref in
                { [unowned self] done, total in
                    callback(ref, "progressBlock") {
                        lua_pushinteger(lua.L, lua_Integer(done))
                        lua_pushinteger(lua.L, lua_Integer(total))
                        return 2
                    }
                }
            }
        }
        resultBlocks(cls, result: "discoverAllUserIdentitiesResultBlock", completion: "discoverAllUserIdentitiesCompletionBlock") { o, f, isResult in
            if isResult {
                op(o).discoverAllUserIdentitiesResultBlock = f.map { f in { f($0.error) } }
            } else {
                op(o).discoverAllUserIdentitiesCompletionBlock = f
            }
        }
    }
}
