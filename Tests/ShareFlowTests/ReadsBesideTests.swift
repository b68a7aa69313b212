import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowPostgres

/// Reads beside the write (SPEC §16 M5), on the store the suite runs on: a thread with a
/// reader of its own reads while another thread holds the engine's lock in the middle of a
/// write, sees the last commit and not the write in progress, and the events its read sends
/// reach observers under the lock once the read is over (an observer that writes included);
/// many readers, a writer and observers together lose nothing.
class ReadsBesideTests: XCTestCase {
    /// Runs `body` on a new thread that reads beside the lock, and waits for it.
    private func onReadingThread(_ engine: Engine, _ body: @escaping @Sendable () throws -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        let failure = LockedBox<Error?>(nil)
        let thread = Thread {
            do {
                let reader = try engine.store.makeReader()
                XCTAssertNotNil(reader, "a file or PostgreSQL store gives a reader")
                engine.attachReader(reader)
                defer {
                    engine.attachReader(nil)
                    reader?.close()
                }
                try body()
            } catch {
                failure.value = error
            }
            done.signal()
        }
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 120), .success, "the reading thread finished")
        if let error = failure.value { throw error }
    }

    func testAReadGoesOnWhileAnotherThreadHoldsTheLockInTheMiddleOfAWrite() throws {
        let (store, drop) = try readableStore()
        defer { drop() }
        let engine = Engine(store: store)
        nonisolated(unsafe) let world = try World(engine: engine)
        let shareURL = try XCTUnwrap(try world.share(["bob@example.com"]).url)
        engine.allowReadsBeside()

        // The writer saves a record and, its transaction open (the engine's lock and the
        // store's write lock held), waits until the reader is done.
        let writing = DispatchSemaphore(value: 0)
        let readerDone = DispatchSemaphore(value: 0)
        let writerDone = DispatchSemaphore(value: 0)
        let readerFinishedFirst = LockedBox(false)
        nonisolated(unsafe) let unsaved = Record(
            recordType: "Day",
            recordID: RecordID(recordName: "day2", zoneID: world.zone.zoneID),
            parent: world.trip.recordID
        )
        Thread {
            _ = try? engine.transaction { _ in
                _ = try world.c.privateCloudDatabase.modifyRecords(saving: [unsaved])
                writing.signal()
                // Bounded: a reader that waited for the lock would otherwise hang the suite;
                // the assertion below then fails instead.
                readerFinishedFirst.value = readerDone.wait(timeout: .now() + 30) == .success
            }
            writerDone.signal()
        }.start()
        XCTAssertEqual(writing.wait(timeout: .now() + 60), .success)

        try onReadingThread(engine) {
            let db = world.c.privateCloudDatabase
            XCTAssertEqual(try db.fetchRecord(world.trip.recordID).fields["title"], .string("Lisbon"))
            // The write in progress is not seen: the read's snapshot is the last commit.
            XCTAssertThrowsError(try db.fetchRecord(unsaved.recordID)) { error in
                XCTAssertEqual((error as? ShareFlowError)?.code, .unknownItem)
            }
            let (metas, error) = world.bc.fetchShareMetadataResults([shareURL])
            XCTAssertNil(error)
            XCTAssertEqual(try metas.first?.1.get().share.title, "Lisbon trip")
            readerDone.signal()
        }
        XCTAssertEqual(writerDone.wait(timeout: .now() + 60), .success)
        XCTAssertTrue(readerFinishedFirst.value, "the reads finished while the writer held the lock")
        // Committed: a read now sees it.
        XCTAssertNoThrow(try world.c.privateCloudDatabase.fetchRecord(unsaved.recordID))
    }

    func testEventsOfAReadBesideReachObserversUnderTheLockAfterTheRead() throws {
        let (store, drop) = try readableStore()
        defer { drop() }
        let engine = Engine(store: store)
        nonisolated(unsafe) let world = try World(engine: engine)
        let share = try world.share(["bob@example.com"])
        engine.allowReadsBeside()
        let url = try XCTUnwrap(share.url)
        // The observer writes (a note of who asked): its write is made under the lock, on the
        // store's own connection, after the read is over.
        let seen = LockedBox(0)
        // Removed at the end: the observer holds the world, which holds the engine and its bus.
        let observer = engine.events.observe(.shareMetadataFetched) { _ in
            seen.value += 1
            let note = Record(
                recordType: "Note",
                recordID: RecordID(recordName: "note\(seen.value)", zoneID: world.zone.zoneID),
                fields: ["n": .integer(Int64(seen.value))]
            )
            let result = try world.c.privateCloudDatabase.modifyRecords(saving: [note])
            if let error = result.error { throw error }
        }
        try onReadingThread(engine) {
            for _ in 0..<3 {
                let (metas, error) = world.bc.fetchShareMetadataResults([url])
                XCTAssertNil(error)
                XCTAssertNotNil(try metas.first?.1.get())
            }
        }
        observer.remove()
        XCTAssertEqual(seen.value, 3, "one event per fetch, no more, no fewer")
        for n in 1...3 {
            XCTAssertNoThrow(try world.c.privateCloudDatabase.fetchRecord(RecordID(recordName: "note\(n)", zoneID: world.zone.zoneID)))
        }
    }

    func testManyReadersAndAWriterTogetherLoseNothing() throws {
        let (store, drop) = try readableStore()
        defer { drop() }
        let engine = Engine(store: store)
        nonisolated(unsafe) let world = try World(engine: engine)
        try world.share(["bob@example.com"])
        engine.allowReadsBeside()
        let saves = TestStore.isPostgres ? 20 : 60
        let group = DispatchGroup()
        let failures = LockedBox<[String]>([])
        // The writer saves `saves` records one by one; each reader reads until it has seen the
        // last, each read a whole snapshot (never a record without its parent).
        group.enter()
        Thread {
            for i in 0..<saves {
                let r = Record(recordType: "Day", recordID: RecordID(recordName: "d\(i)", zoneID: world.zone.zoneID), parent: world.trip.recordID)
                do {
                    if let error = try world.c.privateCloudDatabase.modifyRecords(saving: [r]).error {
                        failures.update { $0.append("save \(i): \(error)") }
                    }
                } catch {
                    failures.update { $0.append("save \(i): \(error)") }
                }
            }
            group.leave()
        }.start()
        for _ in 0..<3 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    try withOwnReader(engine) {
                        var last = -1
                        let deadline = Date().addingTimeInterval(120)
                        while last < saves - 1, Date() < deadline {
                            var seen = last
                            while seen + 1 < saves,
                                (try? world.c.privateCloudDatabase.fetchRecord(RecordID(recordName: "d\(seen + 1)", zoneID: world.zone.zoneID)))
                                    != nil
                            {
                                seen += 1
                            }
                            last = seen
                        }
                        if last < saves - 1 { failures.update { $0.append("a reader saw only \(last + 1) of \(saves)") } }
                    }
                } catch {
                    failures.update { $0.append("reader: \(error)") }
                }
            }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 180), .success)
        XCTAssertEqual(failures.value, [])
    }

    /// Many readers, a writer, and observers of a read's events that read and write through the
    /// engine, with observers coming and going: nothing fails, nothing deadlocks (run under
    /// ThreadSanitizer by `make tsan`).
    func testReadersWriterAndObserversTogether() throws {
        let (store, drop) = try readableStore()
        defer { drop() }
        let engine = Engine(store: store)
        nonisolated(unsafe) let world = try World(engine: engine)
        let share = try world.share(["bob@example.com"])
        let url = try XCTUnwrap(share.url)
        _ = try engine.accounts.addContacts([(value: "bob@example.com", identifier: nil)], to: world.alice)
        engine.allowReadsBeside()
        let failures = LockedBox<[String]>([])
        let observed = LockedBox(0)
        // An observer of a read's event that reads and writes through the engine.
        let handle = engine.events.observe(.shareMetadataFetched) { _ in
            observed.update { $0 += 1 }
            let n = observed.value
            _ = try world.c.privateCloudDatabase.fetchRecord(world.trip.recordID)
            let note = Record(recordType: "Note", recordID: RecordID(recordName: "obs\(n)", zoneID: world.zone.zoneID))
            if let e = try world.c.privateCloudDatabase.modifyRecords(saving: [note]).error { throw e }
        }
        _ = engine.events.observe(.userDiscovered) { _ in observed.update { $0 += 1 } }
        _ = engine.events.observe(.operationFinished) { _ in observed.update { $0 += 1 } }
        let group = DispatchGroup()
        let stop = LockedBox(false)
        group.enter()
        Thread {
            defer { group.leave() }
            for i in 0..<40 {
                let r = Record(recordType: "Day", recordID: RecordID(recordName: "w\(i)", zoneID: world.zone.zoneID), parent: world.trip.recordID)
                do {
                    if let e = try world.c.privateCloudDatabase.modifyRecords(saving: [r]).error { failures.update { $0.append("save: \(e)") } }
                } catch { failures.update { $0.append("save: \(error)") } }
                // Observers come and go while the readers run (under the engine's lock, as
                // EventBus.observe requires).
                engine.locked {
                    let h = engine.events.observe(.recordSaved) { _ in }
                    h.remove()
                }
            }
            stop.value = true
        }.start()
        for t in 0..<4 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    try withOwnReader(engine) {
                        // Containers of this thread's own (as a server makes one per request).
                        let alice = try engine.session(for: world.alice).container(World.containerID)
                        let bob = try engine.session(for: world.bob).container(World.containerID)
                        var rounds = 0
                        while !stop.value || rounds < 3 {
                            rounds += 1
                            _ = try alice.privateCloudDatabase.fetchRecord(world.trip.recordID)
                            let (metas, error) = bob.fetchShareMetadataResults([url])
                            if let error { failures.update { $0.append("resolve \(t): \(error)") } }
                            _ = try metas.first?.1.get()
                            _ = alice.discoverAllUserIdentityResults()
                            _ = try alice.privateCloudDatabase.fetchAllRecordZones()
                            _ = try engine.accounts.find("bob@example.com")
                            _ = engine.options.maxParticipants
                            _ = try alice.privateCloudDatabase.currentChangeToken(world.zone.zoneID)
                        }
                    }
                } catch {
                    failures.update { $0.append("reader \(t): \(error)") }
                }
            }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 300), .success, "no deadlock")
        handle.remove()
        XCTAssertEqual(failures.value, [])
        XCTAssertGreaterThan(observed.value, 0)
    }

    func testAnInMemoryStoreHasNoReader() throws {
        XCTAssertNil(try Store(path: ":memory:").makeReader())
    }
}
