import Foundation
import ShareFlowTestKit
import XCTest

/// O6: kill the process in the middle of a 3,000-share accept; every share is either accepted
/// with its records visible or untouched, and the database is sound.
final class CrashTests: XCTestCase {
    func testKilledAcceptLeavesEveryItemWholeOrUntouched() throws {
        let dir = try CLI.temporaryDirectory()
        let fixtures = CLI.root.appendingPathComponent("Tests/EndToEndTests/Fixtures")
        let store = dir.appendingPathComponent("crash.sqlite").path
        let urls = dir.appendingPathComponent("urls.txt").path
        let total = 3000

        let setup = try CLI.run(["run", "--store", store, fixtures.appendingPathComponent("crash_setup.lua").path, String(total), urls])
        XCTAssertEqual(setup.status, 0, setup.stderr)

        // Start the accept with its output in a file we can watch.
        let outURL = dir.appendingPathComponent("accept.out")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.binary)
        process.arguments = [
            "run", "--store", store, "--as", "bob@example.com",
            fixtures.appendingPathComponent("crash_accept.lua").path, urls,
        ]
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(120)
        var seen = 0
        while process.isRunning && Date() < deadline {
            seen = (try? String(contentsOf: outURL, encoding: .utf8))?.split(separator: "\n").count ?? 0
            if seen >= 300 { break }
            usleep(1_000)
        }
        XCTAssertTrue(process.isRunning, "the accept must still be running when killed (saw \(seen) lines)")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try out.close()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal)
        let printed = (try String(contentsOf: outURL, encoding: .utf8)).split(separator: "\n")
        XCTAssertFalse(printed.contains("finished"))

        let verify = try CLI.run([
            "run", "--store", store, "--as", "bob@example.com",
            fixtures.appendingPathComponent("crash_verify.lua").path, urls,
        ])
        XCTAssertEqual(verify.status, 0, verify.stderr)
        let counts = Dictionary(
            uniqueKeysWithValues: verify.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                .split(separator: " ").map { part -> (String, Int) in
                    let kv = part.split(separator: "=")
                    return (String(kv[0]), Int(kv[1])!)
                }
        )
        XCTAssertEqual(counts["broken"], 0, verify.stdout)
        XCTAssertEqual((counts["accepted"] ?? 0) + (counts["pending"] ?? 0), total)
        XCTAssertGreaterThanOrEqual(counts["accepted"] ?? 0, printed.count, "every reported accept was committed")
        XCTAssertGreaterThan(counts["pending"] ?? 0, 0, "the kill came before the end")

        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        check.arguments = [
            "python3", "-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])", store,
        ]
        let pipe = Pipe()
        check.standardOutput = pipe
        try check.run()
        check.waitUntilExit()
        XCTAssertEqual(String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self), "ok\n")
    }
}
