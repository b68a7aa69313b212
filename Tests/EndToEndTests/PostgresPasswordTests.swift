import Foundation
import ShareFlowTestKit
import XCTest

/// A PostgreSQL store's password need not be in its URL, where `ps` shows it (SPEC §16):
/// `PGPASSWORD`, the config's `postgres.passwordFile` and libpq's password file (`PGPASSFILE`,
/// `~/.pgpass`, private only) give it; a server that asks for a password none of them gave is
/// "password required", not "cannot be reached". Against a cluster of the test's own that asks
/// user `keeper` for a password (scram-sha-256), the `shareflow` binary run as users run it.
final class PostgresPasswordTests: XCTestCase {
    private var dir: URL!
    private var clusterDir: URL!
    private var url = ""
    private let password = "s3cret:with\\colon"

    override func setUpWithError() throws {
        guard ProcessInfo.processInfo.environment["SHAREFLOW_TEST_CLUSTER"] != nil else {
            throw XCTSkip("no PostgreSQL cluster (SHAREFLOW_TEST_CLUSTER)")
        }
        dir = try CLI.temporaryDirectory()
        clusterDir = URL(fileURLWithPath: "/tmp/sf-pw-\(getpid())-\(UUID().uuidString.prefix(8))")
        let cluster = CLI.root.appendingPathComponent("Tests/postgres/cluster.sh").path
        let started = try CLI.runTool("bash", [cluster, "start", clusterDir.path])
        XCTAssertEqual(started.status, 0, started.stderr)
        let admin = started.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let sqlPassword = password.replacingOccurrences(of: "'", with: "''")
        let made = try CLI.runTool(
            "psql",
            [
                admin, "-qc",
                "CREATE ROLE keeper LOGIN PASSWORD '\(sqlPassword)'; GRANT ALL ON DATABASE shareflow_test TO keeper; ALTER DATABASE shareflow_test OWNER TO keeper",
            ]
        )
        XCTAssertEqual(made.status, 0, made.stderr)
        // keeper must give a password over TCP; every other user stays trusted.
        let hba = clusterDir.appendingPathComponent("data/pg_hba.conf")
        let rules = try String(contentsOf: hba, encoding: .utf8)
        try ("host all keeper 127.0.0.1/32 scram-sha-256\n" + rules).write(to: hba, atomically: false, encoding: .utf8)
        XCTAssertEqual(try CLI.runTool("bash", [cluster, "pause", clusterDir.path]).status, 0)
        XCTAssertEqual(try CLI.runTool("bash", [cluster, "resume", clusterDir.path]).status, 0)
        url = admin.replacingOccurrences(of: "postgres@", with: "keeper@")
    }

    override func tearDownWithError() throws {
        guard let clusterDir else { return }
        _ = try? CLI.runTool("bash", [CLI.root.appendingPathComponent("Tests/postgres/cluster.sh").path, "stop", clusterDir.path])
    }

    private func info(_ environment: [String: String] = [:], extra: [String] = []) throws -> CLI.Result {
        try CLI.run(
            ["store", "info", "--store", url] + extra,
            environment: ["HOME": dir.path, "PGPASSWORD": "", "PGPASSFILE": ""].merging(environment) { $1 }
        )
    }

    func testThePasswordComesFromWhereLibpqLooksAndItsAbsenceIsSaid() throws {
        let none = try info()
        XCTAssertNotEqual(none.status, 0)
        XCTAssertTrue(none.stderr.contains("password required"), none.stderr)
        XCTAssertFalse(none.stderr.contains("cannot be reached"), none.stderr)
        XCTAssertEqual(none.stderr.split(separator: "\n").count, 1, none.stderr)

        XCTAssertEqual(try info(["PGPASSWORD": password]).status, 0, "PGPASSWORD")
        let wrong = try info(["PGPASSWORD": "nope"])
        XCTAssertTrue(wrong.stderr.contains("refused the user or password"), wrong.stderr)
        XCTAssertFalse(wrong.stderr.contains("nope"), "never the password: \(wrong.stderr)")

        // ~/.pgpass: private only, `\` escaping ':' and '\'.
        let escaped = password.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: ":", with: "\\:")
        let pgpass = dir.appendingPathComponent(".pgpass")
        try "# a comment\nelsewhere:*:*:*:no\n127.0.0.1:*:shareflow_test:keeper:\(escaped)\n".write(to: pgpass, atomically: true, encoding: .utf8)
        chmod(pgpass.path, 0o644)
        XCTAssertTrue(try info().stderr.contains("password required"), "a password file others can read is ignored, as libpq does")
        chmod(pgpass.path, 0o600)
        XCTAssertEqual(try info().status, 0, "~/.pgpass")
        try FileManager.default.moveItem(at: pgpass, to: dir.appendingPathComponent("elsewhere.pgpass"))
        XCTAssertEqual(try info(["PGPASSFILE": dir.appendingPathComponent("elsewhere.pgpass").path]).status, 0, "PGPASSFILE")

        // postgres.passwordFile in the config, relative to the config file.
        try (password + "\n").write(to: dir.appendingPathComponent("pg.secret"), atomically: true, encoding: .utf8)
        let config = dir.appendingPathComponent("shareflow.config.lua")
        try #"return { postgres = { passwordFile = "pg.secret" } }"#.write(to: config, atomically: true, encoding: .utf8)
        XCTAssertEqual(try info(extra: ["--config", config.path]).status, 0, "postgres.passwordFile")
        try #"return { postgres = { passwordFile = "missing.secret" } }"#.write(to: config, atomically: true, encoding: .utf8)
        let missing = try info(extra: ["--config", config.path])
        XCTAssertTrue(missing.stderr.contains("missing.secret") && missing.stderr.contains("cannot be read"), missing.stderr)
    }
}
