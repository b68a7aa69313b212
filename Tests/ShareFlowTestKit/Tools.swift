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

    /// Runs `sql` (one statement or several) on the SQLite file at `path` through Python's
    /// sqlite3, committed, as another program would; its exit status.
    @discardableResult
    public static func sqlite(_ path: String, _ sql: String) throws -> Int32 {
        try run(["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit(); c.close()",
                 path, sql])
    }

    /// One HTTP request made by curl, its files in `dir`: the status and the JSON body (else
    /// its text under "raw"), with the response's header lines, lowercased, under "_headers".
    /// A `body` is sent from a file, as text/plain, as is `bodyFile`.
    public static func curl(_ method: String, _ url: String, body: String? = nil, bodyFile: URL? = nil,
                            headers: [String] = [], in dir: URL) throws -> (Int, [String: Any]) {
        let out = dir.appendingPathComponent("response-\(UUID().uuidString)")
        let headerFile = dir.appendingPathComponent("headers-\(UUID().uuidString)")
        var args = ["-s", "-o", out.path, "-D", headerFile.path, "-w", "%{http_code}", "-X", method, "--max-time", "60"]
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
