import Foundation
import ShareFlowTestKit
import XCTest

/// Scripts, plugins and Lua tests pass luacheck (`make lint`), with .luacheckrc's settings.
final class LintTests: XCTestCase {
    func testLuacheckIsClean() throws {
        guard let luacheck = ["/usr/bin/luacheck", "/usr/local/bin/luacheck"].first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else {
            throw XCTSkip("luacheck is not installed (make deps installs lua-check)")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: luacheck)
        let folders = [
            "Scripts", "Plugins", "Tests/lua", "Tests/EndToEndTests/Fixtures", "Tests/fuzz",
            "Sources/ShareFlowLua/Lua", "Sources/ShareFlowConsole/Lua", "Sources/shareflow/Lua",
        ]
        p.arguments = ["--no-color", "-q"] + folders.filter { FileManager.default.fileExists(atPath: CLI.root.appendingPathComponent($0).path) }
        p.currentDirectoryURL = CLI.root
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, text)
        XCTAssertTrue(text.contains("0 warnings / 0 errors"), text)
    }
}
