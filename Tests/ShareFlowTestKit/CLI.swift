import Foundation

/// Runs the built `shareflow` binary as a user would: a real process, its output and exit code.
public enum CLI {
    /// The package's root folder: the tests run there.
    public static var root: URL { packageRoot }

    /// The binary under test: SHAREFLOW_BIN (an instrumented build), else .build/debug/shareflow.
    public static let binary: String = {
        if let path = ProcessInfo.processInfo.environment["SHAREFLOW_BIN"] { return path }
        return root.appendingPathComponent(".build/debug/shareflow").path
    }()

    public struct Result: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String

        public init(status: Int32, stdout: String, stderr: String) {
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
        }
    }

    @discardableResult
    public static func run(
        _ arguments: [String],
        stdin: String? = nil,
        cwd: URL? = nil,
        environment: [String: String] = [:],
        timeout: TimeInterval = 120
    ) throws -> Result {
        try execute(binary, arguments, stdin: stdin, cwd: cwd, environment: environment, timeout: timeout)
    }

    /// Another program, found on PATH (psql, bash), run as `run` runs shareflow.
    @discardableResult
    public static func runTool(_ name: String, _ arguments: [String], timeout: TimeInterval = 120) throws -> Result {
        try execute("/usr/bin/env", [name] + arguments, stdin: nil, cwd: nil, environment: [:], timeout: timeout)
    }

    private static func execute(
        _ executable: String,
        _ arguments: [String],
        stdin: String?,
        cwd: URL?,
        environment: [String: String],
        timeout: TimeInterval
    ) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = cwd ?? root
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { $1 }
        process.environment = env
        // Output goes to files: no pipe can fill up and stall the child.
        let dir = try temporaryDirectory()
        let outURL = dir.appendingPathComponent("stdout")
        let errURL = dir.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(2_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try out.close()
        try err.close()
        let outData = try Data(contentsOf: outURL)
        let errData = try Data(contentsOf: errURL)
        try? FileManager.default.removeItem(at: dir)
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self)
        )
    }

    /// A fresh temporary folder for one test.
    public static func temporaryDirectory() throws -> URL {
        try makeTemporaryFolder("shareflow-e2e")
    }

    public static func write(_ text: String, to url: URL) throws {
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    /// Sets `dir` up as a README's walk-through expects a user's folder: `shareflow` on a
    /// PATH (the folder returned, `dir`/bin) and the package's Scripts beside.
    public static func readmeFolder(_ dir: URL) throws -> URL {
        let bin = dir.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: bin.appendingPathComponent("shareflow").path, withDestinationPath: binary)
        try FileManager.default.createSymbolicLink(
            atPath: dir.appendingPathComponent("Scripts").path,
            withDestinationPath: root.appendingPathComponent("Scripts").path
        )
        return bin
    }
}
