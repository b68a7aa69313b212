import CLua
import Foundation
import ShareFlow

/// `ShareRequestAccessOperation` (O11): its fields and blocks (the common ones: `defineCommon`).
extension Bindings {
    func defineShareRequestAccess(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> ShareRequestAccessOperation { o.operation as! ShareRequestAccessOperation }
        itemsProperty(cls, "shareURLs") { [unowned self] call, o, i in
            op(o).shareURLs = call.isNil(i) ? nil : try stringList(call, i)
        }
        blockProperty(cls, "perShareAccessRequestResultBlock") { [unowned self] o, ref in
            op(o).perShareAccessRequestResultBlock = ref.map { ref in
                { [unowned self] url, result in
                    callback(ref, "perShareAccessRequestResultBlock") {
                        lua.push(string: url)
                        push(result) { lua_pushboolean(lua.L, 1) }
                        return 3
                    }
                }
            }
        }
        blockProperty(cls, "perShareAccessRequestCompletionBlock") { [unowned self] o, ref in
            op(o).perShareAccessRequestCompletionBlock = ref.map { ref in
                { [unowned self] url, e in
                    callback(ref, "perShareAccessRequestCompletionBlock") {
                        lua.push(string: url)
                        push(e)
                        return 2
                    }
                }
            }
        }
        resultBlocks(cls, result: "shareAccessRequestResultBlock", completion: "shareRequestAccessCompletionBlock") { o, f, isResult in
            if isResult {
                op(o).shareAccessRequestResultBlock = f.map { f in { f($0.error) } }
            } else {
                op(o).shareRequestAccessCompletionBlock = f
            }
        }
    }
}
