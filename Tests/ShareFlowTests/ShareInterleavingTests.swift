import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// A property of R21: whatever order saves (from fresh and stale copies), participant changes
/// and accepts come in, a share's saved object and the store never disagree about who is on
/// it, and a refused save changes nothing.
class ShareInterleavingTests: XCTestCase {
    /// A small deterministic generator (the engine's SplitMix64), so a failure names a seed that replays it.
    struct Generator {
        private var inner: SplitMix64
        init(state: UInt64) { inner = SplitMix64(seed: state) }
        mutating func next() -> UInt64 { inner.next() }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
    }

    /// Who is on the share in the store, by address, with permission and status (removed ones left out).
    private func stored(_ w: World, _ url: String) throws -> Set<String> {
        let audit = try XCTUnwrap(w.engine.auditShares().first { $0.url == url })
        return Set(
            audit.participants.filter { $0.acceptanceStatus != .removed }
                .map { "\($0.lookupInfo.value)/\($0.permission.rawValue)" }
        )
    }

    private func shown(_ share: Share) -> Set<String> {
        Set(
            share.participants.filter { $0.acceptanceStatus != .removed }.map { p in
                "\(p.userIdentity.lookupInfo?.value ?? p.userIdentity.userRecordID ?? "?")/\(p.permission.rawValue)"
            }
        )
    }

    func testRandomInterleavingsNeverSplitObjectAndStore() throws {
        for seed: UInt64 in TestStore.seeds([1, 7, 42, 2026, 31337]) {
            try run(seed: seed, steps: 150)
        }
    }

    private func run(seed: UInt64, steps: Int) throws {
        var g = Generator(state: seed)
        let w = try World()
        let people = ["bob@example.com", "carol@example.com", "dave@example.com", "erin@example.com"]
        for p in people.dropFirst(2) { try w.engine.accounts.create(emails: [p]) }
        let containers = try people.map { try w.engine.session(for: $0).container(World.containerID) }
        let db = w.c.privateCloudDatabase
        // Three shares, each with two copies held by the owner (one goes stale as the other saves).
        var copies: [[Share]] = []
        for n in 0..<3 {
            let root = Record(recordType: "Trip", recordID: RecordID(recordName: "trip\(n)", zoneID: w.zone.zoneID))
            let share = Share(rootRecord: root)
            XCTAssertNil(try db.modifyRecords(saving: [root, share]).error)
            let second = try XCTUnwrap(db.fetchRecord(share.recordID) as? Share)
            copies.append([share, second])
        }
        for step in 0..<steps {
            let s = g.below(3)
            let k = g.below(2)
            let share = copies[s][k]
            let url = share.url!
            let context = "seed \(seed) step \(step) share \(s) copy \(k)"
            switch g.below(6) {
            case 0, 1:  // add or re-add someone (only while private: R9)
                guard share.publicPermission == .none else { continue }
                let (found, _) = w.c.fetchShareParticipantResults([LookupRequest(emailAddress: g.pick(people))])
                let p = try found[0].1.get()
                p.permission = g.pick([.readOnly, .readWrite])
                share.addParticipant(p)
            case 2:  // remove someone
                let others = share.participants.filter { $0.role != .owner && $0.acceptanceStatus != .removed }
                guard !others.isEmpty else { continue }
                share.removeParticipant(g.pick(others))
            case 3:  // change the public permission, or the title
                if g.below(2) == 0 { share.publicPermission = g.pick([.none, .readOnly, .readWrite]) } else { share.title = "t\(step)" }
            case 4:  // someone accepts (a public share: anyone with an account; a private one: if added)
                let who = g.below(people.count)
                _ = containers[who].fetchShareMetadataResults([url]).0.first.flatMap { try? $0.1.get() }
                    .map { containers[who].acceptShareResults([$0]) }
                continue
            default:  // take a fresh copy
                copies[s][k] = try XCTUnwrap(db.fetchRecord(share.recordID) as? Share)
                continue
            }
            let before = try stored(w, url)
            let result = try db.modifyRecords(saving: [share])
            let after = try stored(w, url)
            if let error = result.firstError {
                XCTAssertEqual(before, after, "\(context): a refused save (\(error.code)) changed the store")
                if error.code == .serverRecordChanged {
                    copies[s][k] = try XCTUnwrap(error.serverRecord as? Share, context)
                } else {
                    copies[s][k] = try XCTUnwrap(db.fetchRecord(share.recordID) as? Share)
                }
            } else {
                XCTAssertEqual(shown(share), after, "\(context): the saved object and the store disagree")
            }
            let fresh = try XCTUnwrap(db.fetchRecord(share.recordID) as? Share)
            XCTAssertEqual(shown(fresh), after, "\(context): a fresh copy and the store disagree")
        }
    }

    // MARK: Access requests (SPEC §17, R38–R43)

    /// Random requests, approvals, denials, blocks, unblocks, public-permission flips and
    /// accepts by many accounts, from fresh and stale owner copies: after every step the store
    /// passes `store check` (no request of someone on the share, no blocked identity on it, the
    /// cap), one entry per account, a public share holds no request, a refused save changed
    /// nothing, and only the owner's copy shows requesters (R40).
    func testRandomAccessRequestInterleavingsKeepR38ToR43() throws {
        var stuck = Set<Int>()
        for seed: UInt64 in TestStore.seeds([5, 17, 2026]) {
            stuck.formUnion(try runAccess(seed: seed, steps: TestStore.steps(120)))
        }
        // Approvals, denials, blocks, unblocks and flips each changed the store at least once
        // (the PostgreSQL pass runs one short seed: some change, at least).
        XCTAssertTrue(TestStore.isPostgres ? !stuck.isEmpty : stuck.isSuperset(of: [2, 3, 4, 5, 6]), "only \(stuck.sorted()) changed the store")
    }

    /// The kinds of step whose save changed the store.
    private func runAccess(seed: UInt64, steps: Int) throws -> Set<Int> {
        var g = Generator(state: seed)
        let w = try World()
        w.engine.options.maxRequesters = 4
        w.engine.options.requestRefreshSeconds = 0
        let people = ["bob@example.com", "carol@example.com", "dave@example.com", "erin@example.com", "fay@example.com", "gus@example.com"]
        for p in people.dropFirst(2) { try w.engine.accounts.create(emails: [p]) }
        let containers = try people.map { try w.engine.session(for: $0).container(World.containerID) }
        let db = w.c.privateCloudDatabase
        let root = Record(recordType: "Trip", recordID: RecordID(recordName: "asked", zoneID: w.zone.zoneID))
        let first = Share(rootRecord: root)
        first.allowsAccessRequests = true
        XCTAssertNil(try db.modifyRecords(saving: [root, first]).error)
        let url = try XCTUnwrap(first.url)
        var copies = [first, try XCTUnwrap(db.fetchRecord(first.recordID) as? Share)]
        /// What R38–R43 speak of, as the store has it.
        func state() throws -> [String] {
            let fresh = try XCTUnwrap(db.fetchRecord(first.recordID) as? Share)
            return try stored(w, url).sorted() + fresh.requesters.map { "r:\($0.requestID)" }.sorted()
                + fresh.blockedIdentities.map { "b:\($0.blockID)" }.sorted() + ["p:\(fresh.publicPermission.rawValue)"]
        }
        // Which kinds of step a save made stick, so the run is known to have exercised them.
        var stuck = Set<Int>()
        for step in 0..<steps {
            let k = g.below(2)
            let share = copies[k]
            let context = "seed \(seed) step \(step) copy \(k)"
            let kind = g.below(8)
            switch kind {
            case 0, 1:  // someone asks
                let who = g.below(people.count)
                _ = containers[who].requestShareAccessResults([url])
                continue
            case 2:  // approve some requesters (only while private: R9)
                guard share.publicPermission == .none, !share.requesters.isEmpty else { continue }
                share.approveRequesters([g.pick(share.requesters)], permission: g.pick([.readOnly, .readWrite]))
            case 3:  // deny
                guard !share.requesters.isEmpty else { continue }
                share.denyRequesters([g.pick(share.requesters)])
            case 4:  // block a requester or a participant
                let others = share.participants.filter { $0.role != .owner && $0.acceptanceStatus != .removed }
                if g.below(2) == 0, !share.requesters.isEmpty {
                    share.blockRequesters([g.pick(share.requesters)])
                } else if !others.isEmpty {
                    share.blockParticipants([g.pick(others)])
                } else {
                    continue
                }
            case 5:  // unblock
                guard !share.blockedIdentities.isEmpty else { continue }
                share.unblockIdentities([g.pick(share.blockedIdentities)])
            case 6:  // flip the public permission
                share.publicPermission = share.publicPermission == .none ? .readOnly : .none
            default:  // someone accepts, or the owner takes a fresh copy
                if g.below(2) == 0 {
                    let who = g.below(people.count)
                    _ = containers[who].fetchShareMetadataResults([url]).0.first.flatMap { try? $0.1.get() }
                        .map { containers[who].acceptShareResults([$0]) }
                } else {
                    copies[k] = try XCTUnwrap(db.fetchRecord(first.recordID) as? Share)
                }
                try checkAccess(w, share: first.recordID, containers: containers, context: context)
                continue
            }
            let before = try state()
            let result = try db.modifyRecords(saving: [share])
            if let error = result.firstError {
                XCTAssertEqual(try state(), before, "\(context): a refused save (\(error.code)) changed the store")
                copies[k] = try XCTUnwrap(db.fetchRecord(first.recordID) as? Share)
            } else if try state() != before {
                stuck.insert(kind)
            }
            try checkAccess(w, share: first.recordID, containers: containers, context: context)
        }
        return stuck
    }

    /// R38–R43 as they stand after a step.
    private func checkAccess(_ w: World, share id: RecordID, containers: [Container], context: String) throws {
        XCTAssertEqual(try w.engine.store.check(maxRequesters: 4).problems, [], context)
        let fresh = try XCTUnwrap(w.c.privateCloudDatabase.fetchRecord(id) as? Share)
        let askers = fresh.requesters.compactMap(\.userIdentity.userRecordID)
        XCTAssertEqual(Set(askers).count, askers.count, "\(context): one entry per account")
        if fresh.publicPermission != .none { XCTAssertEqual(askers, [], "\(context): a public share holds no request (R42)") }
        // R40: a participant who is no administrator reads none.
        for c in containers {
            guard let theirs = try? c.sharedCloudDatabase.fetchRecord(fresh.recordID) as? Share else { continue }
            XCTAssertEqual(theirs.requesters.count + theirs.blockedIdentities.count, 0, "\(context): R40")
        }
    }

    // MARK: Records round 3 (R29, R30, R33)

    func testPartialCopiesPublicWritersAndPagingUnderConcurrentEdits() throws {
        for seed: UInt64 in TestStore.seeds([3, 11, 99, 2027, 65_537]) {
            try runRecords(seed: seed, steps: 220)
        }
    }

    /// A pager: one query read a page at a time while the other steps go on.
    private struct Pager {
        let query: Query
        let limit: Int
        var cursor: QueryCursor?
        var seen: [String] = []
        var atStart: Set<String>
        /// Saved (moved in a modificationDate order) or deleted since the pager began.
        var touched: Set<String> = []
        var done = false
    }

    /// Alice's zone of records under one shared root, Bob a readWrite participant; copies of
    /// them fetched whole or with random desiredKeys by either, edited and saved back under
    /// random policies; Alice and Bob writing the public database; queries paged while all
    /// this goes on. A model holds every key of every record: after each step the store
    /// agrees with it (no field ever lost, a refused save changes nothing), and every pager,
    /// once done, saw each record that was there throughout and never touched exactly once.
    private func runRecords(seed: UInt64, steps: Int) throws {
        var g = Generator(state: seed)
        let w = try World()
        let owner = w.c.privateCloudDatabase
        let guest = w.bc.sharedCloudDatabase
        let keys = ["a", "b", "c", "d"]
        var model: [String: [String: FieldValue]] = [:]
        let root = Record(recordType: "Item", recordID: RecordID(recordName: "root", zoneID: w.zone.zoneID), fields: ["rank": .integer(0)])
        model["root"] = ["rank": .integer(0)]
        var batch: [Record] = [root]
        for i in 1..<16 {
            var fields: [String: FieldValue] = ["rank": .integer(Int64(g.below(5)))]
            for k in keys where g.below(2) == 0 { fields[k] = .string("\(k)0-\(i)") }
            batch.append(
                Record(recordType: "Item", recordID: RecordID(recordName: "r\(i)", zoneID: w.zone.zoneID), fields: fields, parent: root.recordID)
            )
            model["r\(i)"] = fields
        }
        let share = Share(rootRecord: root)
        share.addParticipant(try w.participant("bob@example.com", permission: .readWrite))
        XCTAssertNil(try owner.modifyRecords(saving: batch + [share]).error)
        try w.accept(share.url!, in: w.bc)
        var nextName = 16
        var copies: [(record: Record, byGuest: Bool)] = []
        var pagers: [Pager] = []
        var finished = 0
        var publicModel: [String: (creator: String, fields: [String: FieldValue])] = [:]
        let publicWriters = [(w.c.publicCloudDatabase, w.alice.userRecordID), (w.bc.publicCloudDatabase, w.bob.userRecordID)]

        func fetch(_ name: String, keys desired: [String]?, byGuest: Bool) throws -> Record? {
            let op = FetchRecordsOperation(recordIDs: [RecordID(recordName: name, zoneID: w.zone.zoneID)])
            op.desiredKeys = desired
            var fetched: Record?
            op.perRecordResultBlock = { _, r in fetched = try? r.get() }
            op.database = byGuest ? guest : owner
            (byGuest ? w.bc : w.c).add(op)
            op.waitUntilFinished()
            return fetched
        }
        func touch(_ name: String) { for i in pagers.indices { pagers[i].touched.insert(name) } }

        for step in 0..<steps {
            let context = "seed \(seed) step \(step)"
            switch g.below(11) {
            case 0, 1:  // a copy, whole or partial, by the owner or the participant
                let names = model.keys.sorted()
                let desired: [String]? = g.below(3) == 0 ? nil : (keys + ["rank"]).filter { _ in g.below(2) == 0 }
                let byGuest = g.below(2) == 0
                if let r = try fetch(g.pick(names), keys: desired, byGuest: byGuest) {
                    if let desired { XCTAssertTrue(Set(r.fields.keys).isSubset(of: Set(desired)), "\(context): a partial copy holds only its keys") }
                    copies.append((r, byGuest))
                }
            case 2, 3:  // edit a copy (a key it holds or not, or delete one it holds) and save it
                guard !copies.isEmpty else { continue }
                let (copy, byGuest) = copies.remove(at: g.below(copies.count))
                let name = copy.recordID.recordName
                let key = g.pick(keys)
                if g.below(4) == 0, copy.fields[key] != nil { copy[key] = nil } else { copy[key] = .string("\(key)\(step)") }
                let policy = g.pick(RecordSavePolicy.allCases)
                let before = model[name]
                let changed = copy.changedKeys()
                let held = copy.fields
                let result = try (byGuest ? guest : owner).modifyRecords(saving: [copy], savePolicy: policy)
                if let error = result.firstError {
                    XCTAssertTrue([.serverRecordChanged, .unknownItem].contains(error.code), "\(context): \(error)")
                } else if var fields = before {
                    for k in changed { fields[k] = held[k] }
                    if policy == .allKeys { for (k, v) in held { fields[k] = v } }
                    model[name] = fields
                    touch(name)
                } else {
                    // Deleted meanwhile: a save that checks no tag makes it again from what the
                    // copy holds (as forceUpdate does, R36); one that checks the tag cannot pass.
                    XCTAssertNotEqual(policy, .ifServerRecordUnchanged, "\(context): a stale copy of deleted \(name) was saved")
                    model[name] = held
                    touch(name)
                }
            case 4:  // a new record, or a delete (never the root)
                if g.below(2) == 0 {
                    let name = "r\(nextName)"
                    nextName += 1
                    let fields: [String: FieldValue] = ["rank": .integer(Int64(g.below(5))), "a": .string("new")]
                    let r = Record(
                        recordType: "Item",
                        recordID: RecordID(recordName: name, zoneID: w.zone.zoneID),
                        fields: fields,
                        parent: root.recordID
                    )
                    XCTAssertNil(try owner.modifyRecords(saving: [r]).error, context)
                    model[name] = fields
                } else if let name = model.keys.filter({ $0 != "root" }).sorted().randomElement(using: &g) {
                    XCTAssertNil(try owner.modifyRecords(deleting: [RecordID(recordName: name, zoneID: w.zone.zoneID)]).error, context)
                    model[name] = nil
                    touch(name)
                }
            case 5:  // the public database: each writes their own notes, never another's (R30)
                let (db, me) = publicWriters[g.below(2)]
                let name = "note\(g.below(6))"
                let note = Record(recordType: "Note", recordName: name, fields: ["text": .string("\(me) \(step)")])
                let result = try db.modifyRecords(saving: [note], savePolicy: .changedKeys)
                if let owned = publicModel[name], owned.creator != me {
                    XCTAssertEqual(result.firstError?.code, .permissionFailure, "\(context): another's public record")
                } else {
                    XCTAssertNil(result.firstError, "\(context): \(String(describing: result.firstError))")
                    publicModel[name] = (me, ["text": .string("\(me) \(step)")])
                }
            case 6:  // start paging a query
                let sorts = g.pick([
                    [], [SortDescriptor(key: "rank")], [SortDescriptor(key: "modificationDate")],
                    [SortDescriptor(key: "modificationDate", ascending: false)], [SortDescriptor(key: "recordName", ascending: false)],
                ])
                pagers.append(
                    Pager(
                        query: Query(recordType: "Item", sortDescriptors: sorts),
                        limit: 2 + g.below(6),
                        atStart: Set(model.keys)
                    )
                )
            default:  // one more page of some pager
                guard let i = pagers.indices.filter({ !pagers[$0].done }).randomElement(using: &g) else { continue }
                let page =
                    try pagers[i].cursor.map { try owner.records(continuingMatchFrom: $0, resultsLimit: pagers[i].limit) }
                    ?? owner.records(matching: pagers[i].query, inZoneWith: w.zone.zoneID, resultsLimit: pagers[i].limit)
                XCTAssertLessThanOrEqual(page.records.count, pagers[i].limit, context)
                pagers[i].seen += page.records.map(\.recordID.recordName)
                pagers[i].cursor = page.cursor
                pagers[i].done = page.cursor == nil
            }
            // The store holds exactly the model: every key of every record, none lost.
            for (name, fields) in model {
                XCTAssertEqual(try owner.fetchRecord(RecordID(recordName: name, zoneID: w.zone.zoneID)).fields, fields, "\(context): \(name)")
            }
            for (name, note) in publicModel {
                let stored = try w.c.publicCloudDatabase.fetchRecord(Record(recordType: "Note", recordName: name).recordID)
                XCTAssertEqual(stored.fields, note.fields, "\(context): public \(name)")
                XCTAssertEqual(stored.creatorUserRecordID?.recordName, note.creator, "\(context): public \(name)")
            }
            for pager in pagers where pager.done {
                let sortsKey = pager.query.sortDescriptors.first?.key ?? "none"
                let moves = sortsKey == "modificationDate"
                var counts: [String: Int] = [:]
                for n in pager.seen { counts[n, default: 0] += 1 }
                for (n, c) in counts where c > 1 {
                    XCTAssertTrue(moves && pager.touched.contains(n), "\(context): \(sortsKey) page repeated \(n)")
                }
                for n in pager.atStart.subtracting(pager.touched) where model[n] != nil {
                    XCTAssertEqual(counts[n], 1, "\(context): \(sortsKey) pages skipped \(n) (seen \(pager.seen))")
                }
            }
            finished += pagers.filter(\.done).count
            pagers.removeAll { $0.done }
        }
        XCTAssertGreaterThan(finished, 3, "seed \(seed): pagers ran to their end")
        XCTAssertGreaterThan(publicModel.count, 2, "seed \(seed): public records were written")
    }
}
