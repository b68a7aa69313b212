import Foundation
import ShareFlowTestKit
import XCTest

/// `shareflow tokens signin` as an operator runs it (SPEC §21; docs/reference/server.md, the sign-in page): a
/// one-time code for an account in a container, its checks, and `tokens revoke CODE`.
final class SignInCodeCommandTests: XCTestCase {
    private var dir: URL!
    private var store = ""

    override func setUpWithError() throws {
        dir = try CLI.temporaryDirectory()
        store = dir.appendingPathComponent("store.sqlite").path
        let setup = dir.appendingPathComponent("setup.lua")
        try CLI.write(#"require("shareflow").accounts.create{ email = "bob@example.com" }"#, to: setup)
        XCTAssertEqual(try CLI.run(["run", "--store", store, setup.path]).status, 0)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    private func signin(_ extra: [String] = []) throws -> CLI.Result {
        try CLI.run(["tokens", "signin", "--store", store, "--container", "iCloud.test", "--as", "bob@example.com"] + extra)
    }

    func testACodeIsPrintedAndChecked() throws {
        var r = try signin()
        XCTAssertEqual(r.status, 0, r.stderr)
        let code = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertNotNil(code.wholeMatch(of: /[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}/), code)

        r = try signin(["--ttl", "60", "--json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((object["code"] as? String)?.count, 14, "\(object)")
        XCTAssertNotEqual(object["code"] as? String, code)
        XCTAssertEqual(object["container"] as? String, "iCloud.test")
        let expiresAt = try XCTUnwrap(ISO8601DateFormatter().date(from: object["expiresAt"] as? String ?? ""), "\(object)")
        XCTAssertEqual(expiresAt.timeIntervalSinceNow, 60, accuracy: 10)

        // A store holding codes is a sound store.
        r = try CLI.run(["store", "check", "--store", store])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)

        // Refused, naming what and why on the first line.
        for ttl in ["0", "3601", "7200.5", "nan"] {
            r = try signin(["--ttl", ttl])
            XCTAssertNotEqual(r.status, 0, ttl)
            let first = r.stderr.split(separator: "\n").first.map(String.init) ?? ""
            XCTAssertTrue(first.contains("--ttl") && first.contains(ttl), "\(ttl): \(r.stderr)")
            XCTAssertTrue(first.contains("from 1 to 3600 seconds"), "\(ttl): \(r.stderr)")
            XCTAssertEqual(r.stdout, "", ttl)
        }
        r = try CLI.run(["tokens", "signin", "--store", store, "--container", "iCloud.test", "--as", "nobody@example.com"])
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(
            r.stderr.split(separator: "\n").first.map(String.init),
            "shareflow: --as nobody@example.com: no account has this address in store \(store)"
        )
        r = try CLI.run(["tokens", "signin", "--store", store, "--container", "iCloud.test", "--as", "nobody"])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.hasPrefix("shareflow: --as nobody: 'nobody' is not a valid phone number"), r.stderr)
        r = try CLI.run(["tokens", "signin", "--store", store, "--container", " ", "--as", "bob@example.com"])
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.split(separator: "\n").first?.contains("--container must name a container") == true, r.stderr)
        r = try CLI.run(["tokens", "signin", "--store", store, "--as", "bob@example.com"])
        XCTAssertNotEqual(r.status, 0, "a code is for one container")
        XCTAssertTrue(r.stderr.contains("--container"), r.stderr)
    }

    /// A code is revoked by its printed form, or however it is typed.
    func testACodeIsRevokedAsPrintedOrAsTyped() throws {
        for typed in [{ (code: String) in code }, { $0.lowercased().replacingOccurrences(of: "-", with: "") }] {
            let code = try signin().stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            var r = try CLI.run(["tokens", "revoke", "--store", store, typed(code)])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertEqual(r.stdout, "revoked\n")
            r = try CLI.run(["tokens", "revoke", "--store", store, code])
            XCTAssertEqual(r.status, 1, "gone: \(r.stdout)")
            XCTAssertTrue(r.stderr.contains("nothing was revoked"), r.stderr)
        }
        let r = try CLI.run(["tokens", "revoke", "--store", store, "ZZZZ-ZZZZ-ZZZZ"])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("nothing was revoked"), r.stderr)
    }

    func testTheHelpNamesTheCommand() throws {
        let r = try CLI.run(["tokens", "--help"])
        XCTAssertTrue(r.stdout.contains("signin"), r.stdout)
        let help = try CLI.run(["tokens", "signin", "--help"])
        XCTAssertTrue(help.stdout.contains("--ttl"), help.stdout)
        XCTAssertTrue(help.stdout.contains("--container"), help.stdout)
    }
}
