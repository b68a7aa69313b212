import Foundation
import ShareFlowTestKit
import XCTest

/// SPEC §14: a process killed (SIGKILL) while it writes leaves the change log whole — every
/// token it handed out still reads, none is ahead of the store, and following the feed from any
/// of them gives exactly what was committed after it, in the owner's feed and a viewer's.
final class SyncCrashTests: XCTestCase {
    func testKilledWriterLeavesEveryTokenItGaveReadable() throws {
        let dir = try CLI.temporaryDirectory()
        let fixtures = CLI.root.appendingPathComponent("Tests/EndToEndTests/Fixtures")
        let store = dir.appendingPathComponent("sync-crash.sqlite").path
        let setup = try CLI.run(["run", "--store", store, fixtures.appendingPathComponent("crash_sync_setup.lua").path])
        XCTAssertEqual(setup.status, 0, setup.stderr)

        for round in 1...3 {
            let outURL = dir.appendingPathComponent("write\(round).out")
            _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
            let out = try FileHandle(forWritingTo: outURL)
            let errURL = dir.appendingPathComponent("write\(round).err")
            _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
            let err = try FileHandle(forWritingTo: errURL)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CLI.binary)
            process.arguments = ["run", "--store", store, fixtures.appendingPathComponent("crash_sync_write.lua").path]
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            process.currentDirectoryURL = CLI.root
            try process.run()
            // Killed at a different point each round: after some tens of commits.
            let wanted = 20 * round + Int.random(in: 0..<15)
            let deadline = Date().addingTimeInterval(120)
            var seen = 0
            while process.isRunning && Date() < deadline {
                seen = (try? String(contentsOf: outURL, encoding: .utf8))?.split(separator: "\n").count ?? 0
                if seen >= wanted { break }
                usleep(500)
            }
            XCTAssertTrue(
                process.isRunning,
                "the writer must still be running when killed (saw \(seen) lines): \((try? String(contentsOf: errURL, encoding: .utf8)) ?? "")"
            )
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try out.close()
            try err.close()
            XCTAssertEqual(process.terminationReason, .uncaughtSignal)

            let verify = try CLI.run(["run", "--store", store, fixtures.appendingPathComponent("crash_sync_verify.lua").path, outURL.path])
            XCTAssertEqual(verify.status, 0, verify.stderr)
            XCTAssertTrue(verify.stdout.contains("broken=0"), "round \(round): \(verify.stdout)\n\(verify.stderr.prefix(2_000))")
            let checked = verify.stdout.split(separator: " ").first { $0.hasPrefix("checked=") }.flatMap { Int($0.dropFirst(8)) } ?? 0
            XCTAssertGreaterThanOrEqual(checked, 2 * wanted, "round \(round): every printed token of both users was checked")
        }
    }
}
