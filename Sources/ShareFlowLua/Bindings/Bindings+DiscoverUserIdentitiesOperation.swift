import CLua
import Foundation
import ShareFlow

/// `DiscoverUserIdentitiesOperation`: its fields and blocks (the common ones: `defineCommon`).
extension Bindings {
    func defineDiscoverUsers(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> DiscoverUserIdentitiesOperation { o.operation as! DiscoverUserIdentitiesOperation }
        itemsProperty(cls, "userIdentityLookupInfos") { [unowned self] call, o, i in
            op(o).userIdentityLookupInfos = call.isNil(i) ? nil : try lookupRequests(call, i)
        }
        blockProperty(cls, "userIdentityDiscoveredBlock") { [unowned self] o, ref in
            op(o).userIdentityDiscoveredBlock = ref.map { ref in
                { [unowned self] identity, request in
                    callback(ref, "userIdentityDiscoveredBlock") {
                        push(identity)
                        push(request.info)
                        return 2
                    }
                }
            }
        }
        resultBlocks(cls, result: "discoverUserIdentitiesResultBlock", completion: "discoverUserIdentitiesCompletionBlock") { o, f, isResult in
            if isResult {
                op(o).discoverUserIdentitiesResultBlock = f.map { f in { f($0.error) } }
            } else {
                op(o).discoverUserIdentitiesCompletionBlock = f
            }
        }
    }
}
