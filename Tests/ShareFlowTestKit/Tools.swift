import Foundation

/// Other programs the tests drive: Python's sqlite3 (as another program writing the store
/// would), curl (an HTTP client independent of the server's stack).
public enum Tools {
    /// Runs `arguments` through /usr/bin/env (found on PATH) and waits; its exit status.
    /// Output goes where the test's goes.
    @discardableResult
    public static func run(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Runs `executable` with `arguments` at the package's root and waits; its exit status and
    /// all it printed, standard output and error through one pipe (as a terminal shows them).
    public static func output(of executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = packageRoot
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    /// Runs `sql` (one statement or several) on the SQLite file at `path` through Python's
    /// sqlite3, committed, as another program would; its exit status.
    @discardableResult
    public static func sqlite(_ path: String, _ sql: String) throws -> Int32 {
        try run([
            "python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit(); c.close()",
            path, sql,
        ])
    }

    /// The rows `query` selects from the SQLite file at `path`, through Python's sqlite3, one
    /// `repr` per line (each value's class and exact value: 1 and 1.0 differ).
    public static func sqliteRows(_ path: String, _ query: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c", "import sqlite3,sys\nfor row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print(repr(row))",
            path, query,
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CocoaError(.fileReadUnknown) }
        return String(decoding: data, as: UTF8.self)
    }

    /// One HTTP request made by curl, its files in `dir`: the status and the JSON body (else
    /// its text under "raw"), with the response's header lines, lowercased, under "_headers".
    /// A `body` is sent from a file, as text/plain, as is `bodyFile`.
    public static func curl(
        _ method: String,
        _ url: String,
        body: String? = nil,
        bodyFile: URL? = nil,
        headers: [String] = [],
        options: [String] = [],
        in dir: URL
    ) throws -> (Int, [String: Any]) {
        let out = dir.appendingPathComponent("response-\(UUID().uuidString)")
        let headerFile = dir.appendingPathComponent("headers-\(UUID().uuidString)")
        var args = ["-s", "-o", out.path, "-D", headerFile.path, "-w", "%{http_code}", "-X", method, "--max-time", "60"] + options
        for h in headers { args += ["-H", h] }
        var file = bodyFile
        if let body {
            let request = dir.appendingPathComponent("request-\(UUID().uuidString)")
            try body.write(to: request, atomically: true, encoding: .utf8)
            file = request
        }
        if let file { args += ["-H", "Content-Type: text/plain", "--data-binary", "@" + file.path] }
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        curl.arguments = ["curl"] + args + [url]
        let status = Pipe()
        curl.standardOutput = status
        try curl.run()
        curl.waitUntilExit()
        let code = Int(String(decoding: status.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)) ?? 0
        let data = (try? Data(contentsOf: out)) ?? Data()
        var object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? ["raw": String(decoding: data, as: UTF8.self)]
        object["_headers"] = (try? String(contentsOf: headerFile, encoding: .utf8))?.lowercased() ?? ""
        return (code, object)
    }
}

extension Tools {
    /// A loopback TCP port free at the moment of asking (bound, read, released).
    /// How long each of `count` writes took to show on a change stream: `write(i)` makes the
    /// i-th, `events()` counts the stream's events so far (at most 5 s waited for each). The
    /// writes are spread over a poll's cycle, so a stream that only polls shows a median of
    /// half its interval.
    public static func streamDelays(count: Int = 7, write: (Int) throws -> Void, events: () -> Int) rethrows -> [Double] {
        var delays: [Double] = []
        for i in 1...count {
            let before = events()
            try write(i)
            let written = Date()
            while events() == before, Date().timeIntervalSince(written) < 5 { usleep(2_000) }
            delays.append(events() > before ? Date().timeIntervalSince(written) : .infinity)
            usleep(UInt32.random(in: 50_000...300_000))
        }
        return delays
    }

    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw NSError(domain: "Tools", code: 1, userInfo: [NSLocalizedDescriptionKey: "no socket"]) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }
        guard bound == 0 else { throw NSError(domain: "Tools", code: 2, userInfo: [NSLocalizedDescriptionKey: "cannot bind"]) }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &size) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
