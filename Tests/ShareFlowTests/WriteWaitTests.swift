import Foundation
import GRDB
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowPostgres

/// `Store.writeWait` (SPEC §16 M5), on the store the suite runs on: a write that may not wait
/// fails at once with `StoreBusy` while another process holds the write lock, having written
/// nothing, and so does every write of that attempt after it; reads go on; once the lock is
/// free the write goes through and ends deferring.
class WriteWaitTests: XCTestCase {
    /// A store another connection can lock (SQLite: a file; PostgreSQL: a scratch database),
    /// and a way to hold its write lock from elsewhere until the returned closure is called.
    private func lockableStore(_ dir: URL) throws -> (store: Store, lock: () throws -> () -> Void, drop: () -> Void) {
        if let template = TestStore.postgresTemplate {
            let url = try PostgresStore.makeScratch(template: template)
            let store = try Store.open(url)
            let lock = { () throws -> () -> Void in
                let holder = try XCTUnwrap(store.driver as? PostgresStore).openSession(statementTimeoutMs: 60_000)
                try holder.command("SELECT pg_advisory_lock(\(PostgresStore.writeLock))")
                return {
                    try? holder.command("SELECT pg_advisory_unlock(\(PostgresStore.writeLock))")
                    try? holder.connection.close().wait()
                }
            }
            return (
                store, lock,
                {
                    store.close()
                    PostgresStore.dropScratch(url)
                }
            )
        }
        let path = dir.appendingPathComponent("store.sqlite").path
        let store = try Store(path: path, busyTimeout: 30)
        let lock = { () throws -> () -> Void in
            var config = Configuration()
            config.allowsUnsafeTransactions = true  // the lock held across calls, on purpose
            let other = try DatabaseQueue(path: path, configuration: config)
            try other.writeWithoutTransaction { try $0.execute(sql: "BEGIN IMMEDIATE") }
            return {
                try? other.writeWithoutTransaction { try $0.execute(sql: "ROLLBACK") }
                try? other.close()
            }
        }
        return (store, lock, { store.close() })
    }

    /// `body` with an engine on `lockableStore`, in a folder of its own removed after.
    private func withLockableEngine(_ body: (Engine, Store, () throws -> () -> Void) throws -> Void) throws {
        let dir = try FileManager.default.url(
            for: .itemReplacementDirectory,
            in: .userDomainMask,
            appropriateFor: URL(fileURLWithPath: NSTemporaryDirectory()),
            create: true
        )
        defer { try? FileManager.default.removeItem(at: dir) }
        let (store, lock, drop) = try lockableStore(dir)
        defer { drop() }
        let engine = Engine(store: store)
        try body(engine, store, lock)
    }

    func testAWriteThatMayNotWaitFailsAtOnceHavingWrittenNothing() throws {
        try withLockableEngine { engine, store, lock in
            let alice = try engine.accounts.create(emails: ["alice@example.com"])
            let count = { try engine.accounts.count() }
            XCTAssertEqual(try count(), 1)

            let release = try lock()
            store.writeWait = .deferFirst
            let started = Date()
            XCTAssertThrowsError(try engine.accounts.create(emails: ["bob@example.com"])) { error in
                XCTAssertTrue(error is StoreBusy, "\(error)")
            }
            XCTAssertLessThan(Date().timeIntervalSince(started), 10, "it did not wait out the busy timeout (30 s)")
            XCTAssertEqual(store.writeWait, .deferred)
            // Every later write of the attempt fails at once too; reads go on.
            XCTAssertThrowsError(try engine.accounts.create(emails: ["carol@example.com"])) { XCTAssertTrue($0 is StoreBusy, "\($0)") }
            XCTAssertEqual(try count(), 1)
            XCTAssertEqual(try engine.accounts.account(id: alice.id)?.id, alice.id)

            // The lock free, the next attempt writes, and ends deferring. On PostgreSQL it runs
            // when the lock asked for on the spare connection has come (`onReady`), as a server
            // runs a deferred request again: before that, the lock may still be on its way.
            let onReady = store.deferredBy?.onReady
            release()
            if let onReady {
                let ready = DispatchSemaphore(value: 0)
                onReady { ready.signal() }
                XCTAssertEqual(ready.wait(timeout: .now() + 30), .success, "the lock asked for came once it was let go")
            }
            store.writeWait = .deferFirst
            _ = try engine.accounts.create(emails: ["bob@example.com"])
            XCTAssertEqual(store.writeWait, .inPlace)
            XCTAssertEqual(try count(), 2)
            let error = StoreBusy(path: store.path).shareFlowError(waited: 5)
            XCTAssertEqual(error.code, .serviceUnavailable)
            XCTAssertNotNil(error.retryAfter)
            XCTAssertTrue(error.isOperatorDetail, "the store's path never reaches a client")
        }
    }

    /// A request run again must not show an observer its reads twice: the events of reads are
    /// held while it may be run again, dropped with an attempt that is, and delivered before
    /// the first write's events otherwise.
    func testReadEventsOfAnAttemptRunAgainAreNotDelivered() throws {
        let w = try World(engine: Engine(store: TestStore.make()))
        let share = try w.share(["bob@example.com"])
        let url = try XCTUnwrap(share.url)
        var seen: [String] = []
        w.engine.events.observe(.shareMetadataFetched) { _ in seen.append("fetched") }
        w.engine.events.observe(.shareAccepted) { _ in seen.append("accepted") }

        w.engine.holdReadEvents()
        _ = try w.bc.fetchShareMetadataResults([url]).0[0].1.get()
        XCTAssertEqual(seen, [], "held")
        w.engine.endHoldingReadEvents(deliver: false)
        XCTAssertEqual(seen, [], "dropped with the attempt")

        w.engine.holdReadEvents()
        _ = try w.bc.fetchShareMetadataResults([url]).0[0].1.get()
        w.engine.endHoldingReadEvents(deliver: true)
        XCTAssertEqual(seen, ["fetched"], "delivered when the request ends")

        seen.removeAll()
        w.engine.holdReadEvents()
        _ = try w.accept(url, in: w.bc)
        XCTAssertEqual(seen, ["fetched", "accepted"], "delivered before the first write's events: \(seen)")
        w.engine.endHoldingReadEvents(deliver: true)
        XCTAssertEqual(seen, ["fetched", "accepted"], "once")
    }

    /// An accept that changes nothing (Bob accepted already; the owner accepting her own share)
    /// is a read: while another process holds the write lock, it answers at once even when it
    /// may not wait, where a first accept (Carol's) needs the lock.
    func testAnAcceptThatChangesNothingTakesNoWriteLock() throws {
        try withLockableEngine { engine, store, lock in
            for who in ["owner", "bob", "carol"] { _ = try engine.accounts.create(emails: ["\(who)@example.com"]) }
            let owner = try engine.session(for: "owner@example.com").container("iCloud.t")
            let zone = try owner.privateCloudDatabase.saveZone("Z").zoneID
            let root = Record(recordType: "Doc", recordID: RecordID(recordName: "d", zoneID: zone))
            let share = Share(rootRecord: root)
            for who in ["bob", "carol"] {
                share.addParticipant(try owner.fetchShareParticipantResults([LookupRequest(emailAddress: "\(who)@example.com")]).0[0].1.get())
            }
            _ = try owner.privateCloudDatabase.modifyRecords(saving: [root, share])
            let url = try XCTUnwrap(try owner.privateCloudDatabase.fetchRecord(share.recordID) as? Share).url!
            let bob = try engine.session(for: "bob@example.com").container("iCloud.t")
            let carol = try engine.session(for: "carol@example.com").container("iCloud.t")
            let bobsMetadata = try bob.fetchShareMetadataResults([url]).0[0].1.get()
            _ = try bob.acceptShareResults([bobsMetadata]).0[0].1.get()
            let carolsMetadata = try carol.fetchShareMetadataResults([url]).0[0].1.get()
            let ownersMetadata = try owner.fetchShareMetadataResults([url]).0[0].1.get()

            let release = try lock()
            defer { release() }
            store.writeWait = .deferFirst
            let again = try bob.acceptShareResults([bobsMetadata]).0[0].1.get()
            XCTAssertEqual(again.currentUserParticipant?.acceptanceStatus, .accepted)
            XCTAssertNotNil(try owner.acceptShareResults([ownersMetadata]).0[0].1.get().currentUserParticipant)
            XCTAssertEqual(store.writeWait, .deferFirst, "an accept that changes nothing tried to write")
            XCTAssertThrowsError(try carol.acceptShareResults([carolsMetadata]).0[0].1.get()) { error in
                XCTAssertEqual((error as? ShareFlowError)?.code, .serviceUnavailable, "\(error)")
            }
            store.writeWait = .inPlace
        }
    }
}
