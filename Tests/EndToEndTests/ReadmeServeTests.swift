import Foundation
import ShareFlowTestKit
import XCTest

/// The README's serving walk-through (its ```bash block) runs as written — `shareflow` on the
/// PATH, in a fresh folder holding the repository's Scripts — and prints what the README says
/// it prints (the block after "It prints:", `…` standing for the variable part).
final class ReadmeServeTests: XCTestCase {
    func testTheServingWalkThroughRunsAsWritten() throws {
        let readme = try String(contentsOf: CLI.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        func block(after opening: (Int, String) -> Bool) -> (Int, String)? {
            guard let start = lines.indices.first(where: { opening($0, lines[$0]) }) else { return nil }
            guard let end = lines[(start + 1)...].firstIndex(where: { $0.hasPrefix("```") }) else { return nil }
            return (end, lines[(start + 1)..<end].joined(separator: "\n"))
        }
        let (end, script) = try XCTUnwrap(block { _, line in line == "```bash" }, "the README has a ```bash walk-through")
        let (_, expected) = try XCTUnwrap(
            block { i, line in i > end && line == "```" && lines[i - 2] == "It prints:" },
            "the README says what the walk-through prints"
        )

        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bin = try CLI.readmeFolder(dir)
        let file = dir.appendingPathComponent("walkthrough.sh")
        try CLI.write("set -euo pipefail\n" + script + "\n", to: file)

        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/bash")
        shell.arguments = [file.path]
        shell.currentDirectoryURL = dir
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = bin.path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        shell.environment = environment
        let out = dir.appendingPathComponent("out")
        let err = dir.appendingPathComponent("err")
        XCTAssertTrue(FileManager.default.createFile(atPath: out.path, contents: nil))
        XCTAssertTrue(FileManager.default.createFile(atPath: err.path, contents: nil))
        shell.standardOutput = try FileHandle(forWritingTo: out)
        shell.standardError = try FileHandle(forWritingTo: err)
        try shell.run()
        let deadline = Date().addingTimeInterval(120)
        while shell.isRunning && Date() < deadline { usleep(50_000) }
        if shell.isRunning { shell.terminate() }
        shell.waitUntilExit()
        let printed = try String(contentsOf: out, encoding: .utf8)
        let errors = try String(contentsOf: err, encoding: .utf8)
        XCTAssertEqual(shell.terminationStatus, 0, "the walk-through failed:\n\(printed)\n\(errors)")

        let got = printed.split(separator: "\n").map(String.init)
        let want = expected.split(separator: "\n").map(String.init)
        XCTAssertEqual(got.count, want.count, "printed:\n\(printed)")
        for (line, pattern) in zip(got, want) {
            let fixed = pattern.components(separatedBy: "…")
            XCTAssertTrue(
                line.hasPrefix(fixed[0]) && line.hasSuffix(fixed.count > 1 ? fixed[fixed.count - 1] : ""),
                "printed '\(line)', the README says '\(pattern)'"
            )
        }
        // The server it started drained and exited 0 (`wait` passed its status on), and logged.
        XCTAssertTrue(errors.contains("POST /database/1/iCloud.com.example.trips/development/public/records/accept 200"), errors)
    }
}
