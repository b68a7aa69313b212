import Foundation
import XCTest

/// A real `shareflow serve` over `store` on a loopback port (0: a free one), started and
/// waited for until it says where it listens. Its output and log are files in `dir`.
public final class ServeProcess {
    public let process: Process
    /// `http://127.0.0.1:N` (`https://` with `--tls-cert`), empty if the server never said where it listens (a failure is
    /// recorded then).
    public private(set) var base = ""
    /// Its standard error: the access log and any failure.
    public let log: URL

    public init(
        store: String,
        in dir: URL,
        arguments extra: [String] = [],
        port: Int = 0,
        file: StaticString = #filePath,
        line: UInt = #line
    ) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.binary)
        process.arguments = ["serve", "--store", store, "--port", String(port)] + extra
        let out = dir.appendingPathComponent("serve-\(UUID().uuidString).out")
        log = dir.appendingPathComponent("serve-\(UUID().uuidString).err")
        XCTAssertTrue(FileManager.default.createFile(atPath: out.path, contents: nil), file: file, line: line)
        XCTAssertTrue(FileManager.default.createFile(atPath: log.path, contents: nil), file: file, line: line)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && process.isRunning {
            let text = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
            if let said = text.split(separator: "\n").first(where: {
                $0.hasPrefix("listening on http://127.0.0.1:") || $0.hasPrefix("listening on https://127.0.0.1:")
            }) {
                base = String(said.dropFirst("listening on ".count))
                break
            }
            usleep(20_000)
        }
        XCTAssertFalse(
            base.isEmpty,
            "the server said where it listens: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")",
            file: file,
            line: line
        )
    }

    public var isRunning: Bool { process.isRunning }

    /// SIGTERM, and waits for it to end.
    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}
