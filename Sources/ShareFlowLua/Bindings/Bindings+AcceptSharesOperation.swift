import CLua
import Foundation
import ShareFlow

/// `AcceptSharesOperation`: its fields and blocks (the common ones: `defineCommon`).
extension Bindings {
    func defineAcceptShares(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> AcceptSharesOperation { o.operation as! AcceptSharesOperation }
        itemsProperty(cls, "shareMetadatas") { [unowned self] call, o, i in
            op(o).shareMetadatas = call.isNil(i) ? nil : try metadataList(call, i)
        }
        blockProperty(cls, "perShareResultBlock") { [unowned self] o, ref in
            op(o).perShareResultBlock = ref.map { ref in
                { [unowned self] m, result in
                    callback(ref, "perShareResultBlock") {
                        push(metadata: m)
                        push(result) { push(record: $0) }
                        return 3
                    }
                }
            }
        }
        blockProperty(cls, "perShareCompletionBlock") { [unowned self] o, ref in
            op(o).perShareCompletionBlock = ref.map { ref in
                { [unowned self] m, s, e in
                    callback(ref, "perShareCompletionBlock") {
                        push(metadata: m)
                        push(record: s)
                        push(e)
                        return 3
                    }
                }
            }
        }
        resultBlocks(cls, result: "acceptSharesResultBlock", completion: "acceptSharesCompletionBlock") { o, f, isResult in
            if isResult { op(o).acceptSharesResultBlock = f.map { f in { f($0.error) } } } else { op(o).acceptSharesCompletionBlock = f }
        }
    }
}
