import Foundation
import ShareFlowTestKit
import XCTest

/// Fuzzes the Lua API (Tests/fuzz, SPEC §5–§8): random values — NaN, ±inf, extreme integers,
/// NUL bytes and invalid UTF-8, 1 MB strings, tables nested 10,000 deep, cyclic tables,
/// metatables that raise (or, in plugins, loop), functions, coroutines, objects of the wrong
/// class — at every module function, method, getter, setter and metamethod of `shareflow`,
/// from a trusted script and from a sandboxed plugin. Errors are fine; the process must not
/// die (signal, Swift trap, "unprotected Lua error") nor hang.
///
/// Each mode runs as a child process for `budget` seconds under a hard timeout. The seed is
/// fixed (SHAREFLOW_FUZZ_SEED overrides it for local runs); nothing is skipped here
/// (SHAREFLOW_FUZZ_SKIP is for exploring past a known crash by hand, see Tests/fuzz/README.md).
final class FuzzTests: XCTestCase {
    static let seed = ProcessInfo.processInfo.environment["SHAREFLOW_FUZZ_SEED"] ?? "12345"
    static let budget = "25"
    static let hardTimeout: TimeInterval = 90

    func testTrustedScriptSurvivesFuzzing() throws {
        try fuzz(
            mode: "script",
            [
                "run", "--store", ":memory:", "--log-level", "critical",
                "Tests/fuzz/fuzz.lua", Self.budget, Self.seed,
            ]
        )
    }

    func testPluginSurvivesFuzzing() throws {
        try fuzz(
            mode: "plugin",
            [
                "run", "--store", ":memory:", "--log-level", "critical",
                "--plugins", "Tests/fuzz/plugin", "--config", "Tests/fuzz/plugin.config.lua",
                "Tests/fuzz/drive_plugin.lua", Self.budget, Self.seed,
            ]
        )
    }

    private func fuzz(mode: String, _ arguments: [String]) throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let breadcrumbs = dir.appendingPathComponent("breadcrumbs").path
        let start = Date()
        let r = try CLI.run(
            arguments,
            environment: [
                "SHAREFLOW_FUZZ_BREADCRUMB": breadcrumbs,
                "SHAREFLOW_FUZZ_SKIP": "",  // CI explores everything
            ],
            timeout: Self.hardTimeout
        )
        let elapsed = Date().timeIntervalSince(start)
        let hung = elapsed >= Self.hardTimeout

        let ok =
            !hung && r.status == 0 && r.stdout.contains("fuzz ok")
            && !r.stderr.contains("Fatal error") && !r.stderr.contains("unprotected Lua error")
        guard !ok else { return }

        // Where it happened: the last calls made before the crash or the hang.
        var report = "\(mode) fuzzing (seed \(Self.seed)) "
        report += hung ? "hung: killed after \(Int(Self.hardTimeout)) s\n" : "failed: exit status \(r.status)\n"
        report += "last calls of the \(mode == "plugin" ? "driver" : "script"):\n" + Self.tail(breadcrumbs, lines: 8)
        if mode == "plugin", let line = r.stdout.split(separator: "\n").first(where: { $0.hasPrefix("fuzz: plugin breadcrumbs in ") }) {
            let path = String(line.dropFirst("fuzz: plugin breadcrumbs in ".count))
            report += "\nlast calls inside the plugin (\(path)):\n" + Self.tail(path, lines: 8)
        }
        report += "\nstdout (end):\n" + String(r.stdout.suffix(1500))
        report += "\nstderr (what the crash said, and the first ShareFlow frames):\n" + Self.crashLines(r.stderr)
        report += "\nreproduce: SHAREFLOW_FUZZ_SEED=\(Self.seed) .build/debug/shareflow \(arguments.joined(separator: " "))"
        XCTFail(report)
    }

    /// The lines of a crash report worth reading: the runtime's message and the symbolicated
    /// frames in ShareFlow's own code (the backtracer prints registers and images too).
    static func crashLines(_ stderr: String) -> String {
        let lines = stderr.split(separator: "\n", omittingEmptySubsequences: true)
        let said = lines.filter { line in
            ["Fatal error", "unprotected Lua error", "Program crashed", "malloc", "corrupted", "double free"]
                .contains { line.contains($0) }
        }
        let frames = lines.filter { $0.contains(" in shareflow at ") }.prefix(12)
        let picked = (said + frames).map { "  " + String($0.prefix(300)) }
        return picked.isEmpty ? String(stderr.prefix(2000)) : picked.joined(separator: "\n")
    }

    /// The last `lines` lines of a (possibly large) text file.
    static func tail(_ path: String, lines: Int) -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { return "  (no breadcrumbs at \(path))" }
        defer { try? handle.close() }
        let size = (try? handle.seekToEnd()) ?? 0
        try? handle.seek(toOffset: size > 16_384 ? size - 16_384 : 0)
        let data = (try? handle.readToEnd()) ?? Data()
        let text = String(decoding: data, as: UTF8.self)
        return text.split(separator: "\n").suffix(lines).map { "  " + $0 }.joined(separator: "\n")
    }
}
