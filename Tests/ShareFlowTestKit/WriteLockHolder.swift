import Foundation
import XCTest

/// A store's write lock held by another process until `release` (or the holder's end): SQLite's
/// by an open `BEGIN IMMEDIATE` (Python's sqlite3), PostgreSQL's ShareFlow write lock by a
/// `psql` session. For tests of what a server does while another process writes.
public final class WriteLockHolder {
    public let process = Process()
    private let input = Pipe()
    private let release: Data

    /// ShareFlow's write lock on PostgreSQL ("ShareFlw", `PostgresStore.writeLock`).
    public static let postgresWriteLock: Int64 = 0x5368_6172_6546_6C77

    /// Holds `store`'s write lock (a file, or a postgres:// URL) until `release`.
    public init(store: String, file: StaticString = #filePath, line: UInt = #line) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        if store.hasPrefix("postgres") {
            process.arguments = ["psql", "-qAt", store]
            release = Data("SELECT pg_advisory_unlock(\(WriteLockHolder.postgresWriteLock));\n\\q\n".utf8)
        } else {
            process.arguments = [
                "python3", "-c",
                """
                import sqlite3, sys
                c = sqlite3.connect(sys.argv[1], isolation_level=None)
                c.execute("BEGIN IMMEDIATE")
                print("locked", flush=True)
                sys.stdin.readline()
                c.execute("ROLLBACK")
                """, store,
            ]
            release = Data("\n".utf8)
        }
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        if store.hasPrefix("postgres") {
            try input.fileHandleForWriting.write(
                contentsOf: Data("SELECT pg_advisory_lock(\(WriteLockHolder.postgresWriteLock)); SELECT 'locked';\n".utf8)
            )
        }
        var said = ""
        while !said.contains("locked") {
            let data = output.fileHandleForReading.availableData
            guard !data.isEmpty else { break }
            said += String(decoding: data, as: UTF8.self)
        }
        XCTAssertTrue(said.contains("locked"), "the holder took the lock: \(said)", file: file, line: line)
    }

    /// Lets go of the lock and waits for the holder to end.
    public func releaseLock() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.write(contentsOf: release)
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}
