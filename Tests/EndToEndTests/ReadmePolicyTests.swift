import Foundation
import ShareFlowTestKit
import XCTest

/// The README's policy walk-through (its ```sh block under "Policies you can trust and test")
/// runs as written — `shareflow` on the PATH, in a fresh folder holding the repository's
/// Scripts and Plugins — and prints what the README says (`…` for the variable parts).
final class ReadmePolicyTests: XCTestCase {
    func testThePolicyWalkThroughRunsAsWritten() throws {
        let readme = try String(contentsOf: CLI.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let heading = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("### Policies you can trust and test") })
        let open = try XCTUnwrap(lines[heading...].firstIndex { $0 == "```sh" })
        let close = try XCTUnwrap(lines[(open + 1)...].firstIndex { $0 == "```" })
        let said = try XCTUnwrap(lines[close...].firstIndex { $0 == "It prints:" })
        let printsOpen = said + 2
        let printsClose = try XCTUnwrap(lines[(printsOpen + 1)...].firstIndex { $0 == "```" })
        let script = lines[(open + 1)..<close].joined(separator: "\n")
        let want = Array(lines[(printsOpen + 1)..<printsClose])

        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bin = try CLI.readmeFolder(dir)
        try FileManager.default.createSymbolicLink(
            atPath: dir.appendingPathComponent("Plugins").path,
            withDestinationPath: CLI.root.appendingPathComponent("Plugins").path
        )
        try CLI.write("set -uo pipefail\n" + script + "\n", to: dir.appendingPathComponent("walkthrough.sh"))
        let path = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let r = try CLI.runTool("bash", ["-c", "cd '\(dir.path)' && PATH='\(path)' bash walkthrough.sh"])
        XCTAssertEqual(r.status, 0, "the walk-through failed:\n\(r.stdout)\n\(r.stderr)")
        let got = r.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(got.count, want.count, "printed:\n\(r.stdout)\n\(r.stderr)")
        for (line, pattern) in zip(got, want) {
            XCTAssertTrue(Self.matches(line, pattern), "printed '\(line)', the README says '\(pattern)'")
        }
    }

    /// Whether `line` is `pattern` with each `…` standing for any text.
    static func matches(_ line: String, _ pattern: String) -> Bool {
        let parts = pattern.components(separatedBy: "…")
        guard parts.count > 1 else { return line == pattern }
        guard line.hasPrefix(parts[0]), line.hasSuffix(parts[parts.count - 1]) else { return false }
        var rest = Substring(line.dropFirst(parts[0].count))
        for part in parts.dropFirst().dropLast() {
            guard let range = rest.range(of: part) else { return false }
            rest = rest[range.upperBound...]
        }
        return rest.count >= parts[parts.count - 1].count
    }
}
