import Foundation
import XCTest

/// A real terminal for the console: a private tmux server, keys sent with send-keys, the
/// screen read with capture-pane.
public final class Tmux {
    public let socket = "shareflow-test-\(UUID().uuidString.prefix(8))"
    public let session = "console"

    public init(command: String, width: Int = 140, height: Int = 50) throws {
        // The server this starts must not inherit a pipe we read to its end.
        try run(["new-session", "-d", "-s", session, "-x", "\(width)", "-y", "\(height)", command + "; sleep 60"], capture: false)
    }

    deinit { _ = try? run(["kill-server"], capture: false) }

    /// Runs tmux through /bin/sh with posix_spawn and waitpid: tmux's server forks away from
    /// its client, which Foundation's Process does not always reap.
    @discardableResult
    public func run(_ args: [String], capture: Bool = true) throws -> String {
        let quoted = (["tmux", "-L", socket] + args).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("tmux-\(UUID().uuidString)").path
        let command = quoted.joined(separator: " ") + " </dev/null 2>/dev/null >" + (capture ? output : "/dev/null")
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(command), nil]
        defer { for argument in argv { free(argument) } }
        guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { throw CocoaError(.executableLoad) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard capture else { return "" }
        defer { try? FileManager.default.removeItem(atPath: output) }
        return (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    }

    /// Types text literally (no key names).
    public func type(_ text: String) throws { try run(["send-keys", "-t", session, "-l", text], capture: false) }
    /// Presses keys by name: Enter, Tab, Left, Home, C-c, …
    public func press(_ keys: String...) throws { try run(["send-keys", "-t", session] + keys, capture: false) }
    public func line(_ text: String) throws {
        try type(text)
        try press("Enter")
    }

    public func screen() throws -> String { try run(["capture-pane", "-t", session, "-p", "-J", "-S", "-200"]) }

    /// Waits until the screen contains `text` (at least `count` times).
    @discardableResult
    public func waitFor(
        _ text: String,
        count: Int = 1,
        timeout: TimeInterval = 15,
        file: StaticString = #filePath,
        line: UInt = #line
    ) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var screen = ""
        while Date() < deadline {
            screen = try self.screen()
            if screen.components(separatedBy: text).count - 1 >= count { return screen }
            usleep(50_000)
        }
        XCTFail("screen never showed \(text.debugDescription) ×\(count):\n\(screen)", file: file, line: line)
        return screen
    }
}
