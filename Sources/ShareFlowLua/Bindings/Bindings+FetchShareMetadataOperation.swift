import CLua
import Foundation
import ShareFlow

/// `FetchShareMetadataOperation`: its fields and blocks (the common ones: `defineCommon`).
extension Bindings {
    func defineFetchShareMetadata(_ cls: OpClass) {
        func op(_ o: LuaOperation) -> FetchShareMetadataOperation { o.operation as! FetchShareMetadataOperation }
        itemsProperty(cls, "shareURLs") { [unowned self] call, o, i in
            op(o).shareURLs = call.isNil(i) ? nil : try stringList(call, i)
        }
        cls.property(
            "shouldFetchRootRecord",
            get: { lua, o in try lua.push(.boolean(op(o).shouldFetchRootRecord)) },
            set: { call, o, i in op(o).shouldFetchRootRecord = try call.boolean(i) }
        )
        cls.property(
            "rootRecordDesiredKeys",
            get: { lua, o in
                try lua.push(op(o).rootRecordDesiredKeys.map { .table(LuaTable(array: $0.map { .string($0) })) } ?? .nil)
            },
            set: { [unowned self] call, o, i in op(o).rootRecordDesiredKeys = call.isNil(i) ? nil : try stringList(call, i) }
        )
        blockProperty(cls, "perShareMetadataResultBlock") { [unowned self] o, ref in
            op(o).perShareMetadataResultBlock = ref.map { ref in
                { [unowned self] url, result in
                    callback(ref, "perShareMetadataResultBlock") {
                        lua.push(string: url)
                        push(result) { push(metadata: $0) }
                        return 3
                    }
                }
            }
        }
        blockProperty(cls, "perShareMetadataBlock") { [unowned self] o, ref in
            op(o).perShareMetadataBlock = ref.map { ref in
                { [unowned self] url, m, e in
                    callback(ref, "perShareMetadataBlock") {
                        lua.push(string: url)
                        push(metadata: m)
                        push(e)
                        return 3
                    }
                }
            }
        }
        resultBlocks(cls, result: "fetchShareMetadataResultBlock", completion: "fetchShareMetadataCompletionBlock") { o, f, isResult in
            if isResult { op(o).fetchShareMetadataResultBlock = f.map { f in { f($0.error) } } } else { op(o).fetchShareMetadataCompletionBlock = f }
        }
    }
}
