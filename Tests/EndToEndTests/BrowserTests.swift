import Foundation
import ShareFlowTestKit
import XCTest

/// SPEC §19 A5–A6 in a real browser: Debian's chromium, driven by Playwright from PyPI through
/// `executable_path` (`make deps` installs chromium, `make pyenv` Playwright; no browser is ever
/// downloaded), runs a page on another origin that moves a binary file the way CloudKit JS does.
final class BrowserTests: ServerTestCase {
    /// Debian's chromium, where `make deps` puts it.
    static var chromium: String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-headless-shell"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    func testAPageOnAnotherOriginSavesAndReadsABinaryFileAsCloudKitJSDoes() throws {
        guard hasPyiCloud() else { return }
        guard let chromium = Self.chromium else { return XCTFail("no chromium at /usr/bin: run `make deps` (make test does)") }
        let (pagePort, otherPort) = (try Tools.freePort(), try Tools.freePort())
        stopServer()
        try startServer(["--cors-origin", "http://127.0.0.1:\(pagePort)"])
        let (status, text) = try runTool(
            PyiCloudTests.python,
            [CLI.root.appendingPathComponent("Tests/browser/asset_page.py").path],
            environment: try pyicloudEnvironment([
                "SHAREFLOW_CHROMIUM": chromium, "SHAREFLOW_PAGE_PORT": String(pagePort), "SHAREFLOW_OTHER_PORT": String(otherPort),
            ]),
            timeout: 180
        )
        XCTAssertEqual(status, 0, text)
        XCTAssertTrue(text.hasSuffix("browser asset flow ok\n"), text)
    }
}
