import Foundation
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowPostgres

/// A credential taken once (SPEC §21, the sign-in page's one-time codes): `take` reads and
/// deletes it in one write, so a code signs in once however many ask for it at once, on one
/// node or across two (the twin runs these on PostgreSQL).
class CredentialTakeTests: XCTestCase {
    private let code = String(repeating: "c0", count: 32)

    func testACredentialIsTakenOnceAndAnExpiredOneIsNone() throws {
        let engine = Engine(store: try TestStore.make())
        let alice = try engine.accounts.create(emails: ["alice@example.com"])
        let later = Date().timeIntervalSince1970 + 600
        try engine.credentials.add(.signInCode, container: "iCloud.test", hash: code, accountID: alice.id, expiresAt: later)
        XCTAssertEqual(try engine.store.check().problems, [], "a stored code is a readable row")
        // Another kind's hash is not a code, and a code is not found as another kind.
        XCTAssertNil(try engine.credentials.take(.webAuthToken, hash: code))
        XCTAssertNil(try engine.credentials.find(.webAuthToken, container: "iCloud.test", environment: .development, hash: code))

        let taken = try XCTUnwrap(try engine.credentials.take(.signInCode, hash: code))
        XCTAssertEqual(taken.kind, .signInCode)
        XCTAssertEqual(taken.container, "iCloud.test")
        XCTAssertEqual(taken.accountID, alice.id)
        XCTAssertEqual(taken.expiresAt, later)
        XCTAssertNil(taken.environment)
        XCTAssertNil(try engine.credentials.take(.signInCode, hash: code), "taken once")
        XCTAssertNil(try engine.credentials.take(.signInCode, hash: String(repeating: "0", count: 64)), "never made")

        // An expired code is deleted and answered as one never made.
        let expired = String(repeating: "e1", count: 32)
        try engine.credentials.add(.signInCode, container: "iCloud.test", hash: expired, accountID: alice.id, expiresAt: 1)
        XCTAssertNil(try engine.credentials.take(.signInCode, hash: expired))
        let left = try engine.store.read { try $0.fetchInteger("SELECT COUNT(*) FROM credential WHERE kind = 'signInCode'") }
        XCTAssertEqual(left, 0, "the expired code was deleted too")
        XCTAssertEqual(try engine.store.check().problems, [])
    }

    /// Two nodes (two openings of one store: two processes on SQLite, two servers on
    /// PostgreSQL) take the same code at once, many times over: each time exactly one gets it.
    func testOfTwoTakesAtOnceExactlyOneWins() throws {
        let folder = try makeTemporaryFolder("sf-take")
        defer { try? FileManager.default.removeItem(at: folder) }
        let location =
            try TestStore.postgresTemplate.map { try PostgresStore.makeScratch(template: $0) } ?? folder.appendingPathComponent("store.sqlite").path
        defer { if TestStore.isPostgres { PostgresStore.dropScratch(location) } }
        let nodes = [Engine(store: try Store.open(location)), Engine(store: try Store.open(location))]
        defer { for node in nodes { node.store.close() } }
        let alice = try nodes[0].accounts.create(emails: ["alice@example.com"])
        final class Wins: @unchecked Sendable {
            let lock = NSLock()
            var count = 0
            var failures: [String] = []
        }
        let rounds = TestStore.isPostgres ? 10 : 25
        for round in 0..<rounds {
            let hash = String(format: "%064x", round)
            try nodes[round % 2].credentials.add(.signInCode, container: "iCloud.test", hash: hash, accountID: alice.id, expiresAt: 4e9)
            let wins = Wins()
            let group = DispatchGroup()
            let start = DispatchSemaphore(value: 0)
            for node in nodes {
                group.enter()
                Thread.detachNewThread {
                    start.wait()
                    do {
                        let got = try node.credentials.take(.signInCode, hash: hash)
                        wins.lock.withLock { wins.count += got == nil ? 0 : 1 }
                    } catch {
                        wins.lock.withLock { wins.failures.append("\(error)") }
                    }
                    group.leave()
                }
            }
            start.signal()
            start.signal()
            XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
            XCTAssertEqual(wins.failures, [], "round \(round)")
            XCTAssertEqual(wins.count, 1, "round \(round): exactly one take wins")
        }
    }
}
