import Foundation
import ShareFlowTestKit
import XCTest

/// SPEC §21 C5: the console in a real browser. Debian's chromium under Playwright (PyPI, through
/// `executable_path`), driven by pytest (Tests/browser/console), against `shareflow serve
/// --console` with Alice, Bob and Carol, an admin token, two one-time sign-in codes, an app
/// origin listed by `--cors-origin`, and a plugin whose policy denies Carol's accepts.
/// `make screenshots` runs the same tests with SHAREFLOW_SCREENSHOTS=docs/images/console.
final class WebConsoleBrowserTests: ServerTestCase {
    static let gate = """
        return {
          name = "gate",
          version = "1.0.0",
          description = "Fixture: denies Carol's accepts.",
          setup = function(ctx)
            ctx.policy("share.accept", function(req)
              local email = req.caller and req.caller.email
              if email == "carol@example.com" then
                return ctx.deny(email .. " is blocked")
              end
            end, { name = "accept" })
          end,
        }
        """

    func testTheConsoleInARealBrowser() throws {
        guard hasPyiCloud() else { return }
        guard let chromium = BrowserTests.chromium else { return XCTFail("no chromium at /usr/bin: run `make deps` (make test does)") }
        try script("local sf = require(\"shareflow\")\nsf.accounts.create{ email = \"carol@example.com\", name = { given = \"Carol\" } }")
        let plugins = dir.appendingPathComponent("plugins")
        try FileManager.default.createDirectory(at: plugins.appendingPathComponent("gate"), withIntermediateDirectories: true)
        try CLI.write(Self.gate, to: plugins.appendingPathComponent("gate/init.lua"))
        let config = dir.appendingPathComponent("console.config.lua")
        try CLI.write("return { plugins = { gate = true } }", to: config)
        let admin = try CLI.run(["tokens", "admin", "--store", store]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let codes = try (0..<2).map { _ in
            let r = try CLI.run(["tokens", "signin", "--store", store, "--container", "iCloud.test", "--as", "bob@example.com"])
            XCTAssertEqual(r.status, 0, r.stderr)
            return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let (pagePort, otherPort) = (try Tools.freePort(), try Tools.freePort())
        stopServer()
        try startServer([
            "--console", "--cors-origin", "http://127.0.0.1:\(pagePort)", "--plugins", plugins.path, "--config", config.path,
        ])
        let screenshots = ProcessInfo.processInfo.environment["SHAREFLOW_SCREENSHOTS"] ?? ""
        let (status, text) = try runTool(
            PyiCloudTests.python,
            ["-m", "pytest", "-q", "-p", "no:cacheprovider", CLI.root.appendingPathComponent("Tests/browser/console").path],
            environment: try pyicloudEnvironment([
                "SHAREFLOW_CHROMIUM": chromium, "SHAREFLOW_PAGE_PORT": String(pagePort), "SHAREFLOW_OTHER_PORT": String(otherPort),
                "SHAREFLOW_ADMIN": admin, "SHAREFLOW_SIGNIN_CODES": codes.joined(separator: ","),
                "SHAREFLOW_SCREENSHOTS": screenshots.isEmpty ? "" : CLI.root.appendingPathComponent(screenshots).path,
            ]),
            timeout: 420
        )
        XCTAssertEqual(status, 0, text)
        // pytest's summary: every test ran and passed (exit 5, none collected, fails above).
        XCTAssertNotNil(text.range(of: #"\b\d+ passed\b"#, options: .regularExpression), text)
        XCTAssertNil(text.range(of: #"\b(failed|error|skipped)\b"#, options: .regularExpression), text)
        // No page held the store's path or the admin token (they never reach a browser).
        let log = (try? String(contentsOf: serverLog, encoding: .utf8)) ?? ""
        XCTAssertFalse(log.contains(admin), "the admin token is in the server's log")
        for code in codes { XCTAssertFalse(log.contains(code), "a sign-in code is in the server's log") }
    }

    func testTheREADMEsPicturesOfTheConsoleExist() throws {
        let readme = try String(contentsOf: CLI.root.appendingPathComponent("README.md"), encoding: .utf8)
        let images = readme.matches(of: /\]\((docs\/images\/console\/[a-z-]+\.png)\)/).map { String($0.1) }
        XCTAssertGreaterThanOrEqual(images.count, 5)
        for image in images {
            let data = try Data(contentsOf: CLI.root.appendingPathComponent(image))
            XCTAssertEqual(Array(data.prefix(4)), [0x89, 0x50, 0x4E, 0x47], "\(image) is a PNG (make screenshots)")
        }
    }

    func testTheConsolesRoutesAreListedOnlyWithIt() throws {
        let plain = try CLI.run(["serve", "--routes"]).stdout.split(separator: "\n")
        let with = try CLI.run(["serve", "--console", "--routes"]).stdout.split(separator: "\n")
        XCTAssertFalse(plain.contains { $0.contains("/console") })
        XCTAssertTrue(with.contains("GET /console/accounts") && with.contains("POST /console/share/invite"), "\(with)")
        XCTAssertEqual(with.count - plain.count, with.filter { $0.contains("/console") }.count)
    }
}
