import Foundation
import ShareFlowTestKit
import XCTest

/// Every script in Scripts/ and every ```lua block of the README runs, so the docs cannot rot.
final class ScriptsTests: XCTestCase {
    func run(_ script: String, store: String = ":memory:") throws -> CLI.Result {
        try CLI.run(["run", "--store", store, script])
    }

    func testDemoTellsTheWholeStory() throws {
        let dir = try CLI.temporaryDirectory()
        let r = try CLI.run([
            "run", "--store", dir.appendingPathComponent("demo.sqlite").path,
            "--config", "Scripts/demo.config.lua", "Scripts/demo.lua",
        ])
        XCTAssertEqual(r.status, 0, r.stderr)
        for line in [
            "== Accounts", "bob@example.com      privateUser  readWrite  pending", "bob: accepted", "carol: accepted",
            "carol (readOnly) edits day1: permissionFailure", "with her old copy: serverRecordChanged",
            "event participant.removed: carol@example.com (removedByOwner)",
            "carol fetches the trip: zoneNotFound", "UserIdentity(Bob Ruiz bob@example.com)",
            "plugins on: audit-log, domain-allowlist, expiring-invitations",
            "mallory is refused: ", "denied by policy 'domain-allowlist/accept' at share.accept",
            "deny  by domain-allowlist/accept", "events in ", "share.accepted                   2",
        ] {
            XCTAssertTrue(r.stdout.contains(line), "demo output lacks \(line):\n\(r.stdout)")
        }
    }

    func testDemoWithoutPluginsSaysSo() throws {
        let r = try run("Scripts/demo.lua")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("mallory accepted (no allow-list policy is on)"), r.stdout)
        XCTAssertTrue(r.stdout.contains("(audit-log plugin not loaded)"), r.stdout)
    }

    func testEveryExampleRuns() throws {
        let examples = try FileManager.default.contentsOfDirectory(atPath: CLI.root.appendingPathComponent("Scripts/examples").path)
            .filter { $0.hasSuffix(".lua") }.sorted()
        XCTAssertGreaterThanOrEqual(examples.count, 5)
        let expected: [String: [String]] = [
            "fetch_share_participants.lua": ["Participant(bob@example.com, privateUser, readOnly, unknown)", "nobody@example.com (no account)"],
            "fetch_share_metadata.lua": ["you: privateUser/readOnly/pending", "root record:\tRecord(List groceries", "unknownItem"],
            "accept_shares.lua": ["accepted; root record:\tRecordID(summer in Albums)", "Record(Album summer"],
            "discover_all_user_identities.lua": ["UserIdentity(Ana ana@example.com)\tcontact:\tcontact-ana", "contact-ben"],
            "share_participants.lua": ["after publicPermission = readOnly:", "reader@example.com   privateUser  readOnly   accepted"],
            "sync_replica.lua": [
                "before accepting: no shared zones", "accepted: Albums: (share), beach=Beach, summer=Summer",
                "after Alice's edits: Albums: (share), beach=Beach at noon, draft=Draft, summer=Summer, sunset=Sunset",
                "after the delete and the move out: Albums: (share), beach=Beach at noon, summer=Summer",
                "asked again: 0 changed, 0 deleted, same token: true", "after the share ended: no shared zones",
            ],
            "retry_on_throttle.lua": [
                "saved after 3 attempts, 4s waited", "the retry finds it saved already",
                "todo: call Bob", "b-2: zoneBusy, retry in 1s", "saved 2 at once, 1 on retry",
                "changeTokenExpired: dropping the token", "20 notes saved in 25 attempts, 5s waited",
            ],
            "review_access_requests.lua": [
                "Roadmap    approve  colleague@example.com", "Offsite    waiting  stranger@elsewhere.org",
                "approved 2, denied 0 stale, 2 left for owner@example.com",
            ],
            "audit_access.lua": [
                "2 share(s) in iCloud.com.example.audit", "records: Project launch, Task task1, Task task2, Task task3",
                "nobody@example.com     privateUser  readOnly   pending    (no account yet)",
                "guest@example.com      publicUser   readOnly   accepted",
                "editor@example.com     Launch plan (readWrite)",
            ],
        ]
        for example in examples {
            let r = try run("Scripts/examples/\(example)")
            XCTAssertEqual(r.status, 0, "\(example): \(r.stderr)")
            XCTAssertTrue(r.stderr.isEmpty, "\(example) wrote to stderr: \(r.stderr)")
            for line in expected[example] ?? [] {
                XCTAssertTrue(r.stdout.contains(line), "\(example) output lacks \(line):\n\(r.stdout)")
            }
            XCTAssertFalse(r.stdout.contains("Pat"), "a non-discoverable account never shows")
        }
    }

    func testEveryReadmeLuaBlockRuns() throws {
        let readme = try String(contentsOf: CLI.root.appendingPathComponent("README.md"), encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.hasPrefix("```lua") {
                current = []
                continue
            }
            if current != nil, line.hasPrefix("```") {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
                continue
            }
            current?.append(line)
        }
        XCTAssertGreaterThanOrEqual(blocks.count, 3, "the README shows Lua")
        let dir = try CLI.temporaryDirectory()
        for (n, block) in blocks.enumerated() {
            // A block that says it is a test file runs as one, with the shipped plugins.
            let isTestFile = block.hasPrefix("-- a test file")
            let file = dir.appendingPathComponent("readme_\(n + 1)\(isTestFile ? "_test" : "").lua")
            try CLI.write(block, to: file)
            let r = isTestFile ? try CLI.run(["test", file.path], cwd: CLI.root) : try run(file.path)
            XCTAssertEqual(r.status, 0, "README block \(n + 1) failed:\n\(block)\n\(r.stdout)\n\(r.stderr)")
        }
    }
}
