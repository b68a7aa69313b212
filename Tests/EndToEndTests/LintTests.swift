import Foundation
import ShareFlowTestKit
import XCTest

/// Scripts, plugins and Lua tests pass luacheck (`make lint`), with .luacheckrc's settings; the
/// Swift sources pass swift-format with .swift-format's, and every public declaration of the
/// libraries people build on (`ShareFlow`, `ShareFlowLua`) has a doc comment.
final class LintTests: XCTestCase {
    func testLuacheckIsClean() throws {
        guard let luacheck = ["/usr/bin/luacheck", "/usr/local/bin/luacheck"].first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else {
            throw XCTSkip("luacheck is not installed (make deps installs lua-check)")
        }
        let folders = [
            "Scripts", "Plugins", "Tests/lua", "Tests/EndToEndTests/Fixtures", "Tests/fuzz",
            "Sources/ShareFlowLua/Lua", "Sources/ShareFlowConsole/Lua", "Sources/shareflow/Lua",
        ]
        let (status, text) = try Tools.output(
            of: luacheck,
            ["--no-color", "-q"] + folders.filter { FileManager.default.fileExists(atPath: CLI.root.appendingPathComponent($0).path) }
        )
        XCTAssertEqual(status, 0, text)
        XCTAssertTrue(text.contains("0 warnings / 0 errors"), text)
    }

    /// `swift format lint` with `arguments`, run at the package's root: its exit status and
    /// what it printed (its findings go to standard error).
    private func swiftFormat(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try Tools.output(of: "/usr/bin/env", ["swift", "format", "lint"] + arguments)
    }

    func testTheSwiftSourcesAreFormatted() throws {
        let (status, output) = try swiftFormat(["--strict", "--recursive", "--parallel", "Sources", "Tests", "BuildTools", "Package.swift"])
        XCTAssertEqual(status, 0, "swift format -i -r on the files named:\n\(output)")
        XCTAssertEqual(output, "")
    }

    /// Counts the public declarations of ShareFlow and ShareFlowLua without a doc comment
    /// (.swift-format-documentation turns on only that rule): there are none.
    func testEveryPublicDeclarationOfTheLibrariesIsDocumented() throws {
        let (status, output) = try swiftFormat([
            "--configuration", ".swift-format-documentation", "--recursive", "--parallel", "Sources/ShareFlow", "Sources/ShareFlowLua",
        ])
        XCTAssertEqual(status, 0, output)
        let undocumented = output.split(separator: "\n").filter { $0.contains("AllPublicDeclarationsHaveDocumentation") }
        XCTAssertEqual(undocumented.count, 0, "public declarations without a doc comment:\n\(undocumented.joined(separator: "\n"))")
    }
}
