import Foundation
import ShareFlow
import ShareFlowTestKit
import XCTest

@testable import ShareFlowLua

/// The API reference and the LuaLS definitions name every field and method the bindings have.
final class DocsTests: XCTestCase {
    func testEveryBoundNameIsDocumentedAndTyped() throws {
        let host = try ScriptHost(engine: Engine(store: Store(path: ":memory:")))
        let docs = try String(contentsOf: packageRoot.appendingPathComponent("docs/LUA_API.md"), encoding: .utf8)
        let types = try String(contentsOf: packageRoot.appendingPathComponent("types/shareflow.lua"), encoding: .utf8)
        var checked = 0
        for (type, names) in host.apiSurface {
            for name in names {
                XCTAssertTrue(
                    docs.contains("`\(name)") || docs.contains(":\(name)(") || docs.contains("`:\(name)"),
                    "docs/LUA_API.md does not document \(type).\(name)"
                )
                XCTAssertTrue(
                    types.contains("@field \(name)") || types.contains(":\(name)("),
                    "types/shareflow.lua does not type \(type).\(name)"
                )
                checked += 1
            }
        }
        XCTAssertGreaterThan(checked, 100)
        // Module functions.
        let module = try host.run("local t = {} for k in pairs(shareflow) do t[#t + 1] = k end return t")
        guard case .table(let t) = module[0] else { return XCTFail("no module table") }
        for case .string(let name) in t.array {
            XCTAssertTrue(docs.contains("sf.\(name)") || docs.contains("`\(name)`"), "docs/LUA_API.md does not document sf.\(name)")
            XCTAssertTrue(types.contains("shareflow.\(name)") || types.contains("@field \(name)"), "types do not declare shareflow.\(name)")
        }
    }
}
