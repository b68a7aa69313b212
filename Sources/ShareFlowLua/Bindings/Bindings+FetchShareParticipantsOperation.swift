import CLua
import Foundation
import ShareFlow

/// `FetchShareParticipantsOperation`: its fields and blocks (the common ones: `defineCommon`).
extension Bindings {
    func defineFetchShareParticipants(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> FetchShareParticipantsOperation { o.operation as! FetchShareParticipantsOperation }
        itemsProperty(cls, "userIdentityLookupInfos") { [unowned self] call, o, i in
            op(o).userIdentityLookupInfos = call.isNil(i) ? nil : try lookupRequests(call, i)
        }
        blockProperty(cls, "perShareParticipantResultBlock") { [unowned self] o, ref in
            // Weak: the block is stored on the operation `o` holds; a strong `o` would be a cycle.
            op(o).perShareParticipantResultBlock = ref.map { ref in
                { [unowned self, weak o] request, result in
                    callback(ref, "perShareParticipantResultBlock") {
                        // The LookupInfo the script gave, as Apple's block gets it: a table
                        // given is given back (the same table), a string as the LookupInfo it
                        // names, so `info.emailAddress` reads either way.
                        if let o { pushInput(o) { push(request) } } else { push(request) }
                        if lua_type(lua.L, -1) != LUA_TTABLE {
                            lua.pop()
                            push(request)
                        }
                        push(result) { push(participant: $0) }
                        return 3
                    }
                }
            }
            if ref == nil { op(o).perShareParticipantResultBlock = nil }
        }
        blockProperty(cls, "shareParticipantFetchedBlock") { [unowned self] o, ref in
            op(o).shareParticipantFetchedBlock = ref.map { ref in
                { [unowned self] p in
                    callback(ref, "shareParticipantFetchedBlock") {
                        push(participant: p)
                        return 1
                    }
                }
            }
        }
        resultBlocks(cls, result: "fetchShareParticipantsResultBlock", completion: "fetchShareParticipantsCompletionBlock") { o, f, isResult in
            if isResult {
                op(o).fetchShareParticipantsResultBlock = f.map { f in { f($0.error) } }
            } else {
                op(o).fetchShareParticipantsCompletionBlock = f
            }
        }
    }
}
