import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowPostgres

/// Three nodes (three stores on one scratch database) writing zones that share viewers,
/// making default zones, making and deleting zones, while followers read the zone feeds and
/// the database feeds incrementally. Afterwards: no error but a stale tag, and every follower
/// saw every record's last version through its incremental tokens.
final class ScopedWriteConvergenceTests: XCTestCase {
    /// A client following a database's feed and its zones' feeds.
    private final class Follower: @unchecked Sendable {
        let db: CloudDatabase
        var dbToken: String?
        var zoneTokens: [RecordZoneID: String] = [:]
        var seen: [RecordZoneID: [String: String]] = [:]
        init(_ db: CloudDatabase) { self.db = db }

        func poll() throws {
            var zones: [RecordZoneID] = []
            var more = true
            while more {
                let page = try db.databaseChanges(since: dbToken)
                zones += page.changedZoneIDs
                for d in page.deletions {
                    seen[d.zoneID] = nil
                    zoneTokens[d.zoneID] = nil
                }
                dbToken = page.changeToken
                more = page.moreComing
            }
            for zone in Set(zones) where !zone.isDefaultZone {
                var more = true
                while more {
                    let page: RecordZoneChanges
                    do { page = try db.recordZoneChanges(zone, since: zoneTokens[zone]) } catch let e as ShareFlowError
                        where e.code == .zoneNotFound || e.code == .changeTokenExpired
                    {
                        seen[zone] = nil
                        zoneTokens[zone] = nil
                        break
                    }
                    for r in page.modifications { seen[zone, default: [:]][r.recordID.recordName] = r.recordChangeTag }
                    for d in page.deletions { seen[zone, default: [:]][d.recordID.recordName] = nil }
                    zoneTokens[zone] = page.changeToken
                    more = page.moreComing
                }
            }
        }

        /// Each zone as read from its start now.
        func truth() throws -> [RecordZoneID: [String: String]] {
            var all: [RecordZoneID: [String: String]] = [:]
            var token: String?
            var zones: [RecordZoneID] = []
            var more = true
            while more {
                let page = try db.databaseChanges(since: token)
                zones += page.changedZoneIDs
                for d in page.deletions { zones.removeAll { $0 == d.zoneID } }
                token = page.changeToken
                more = page.moreComing
            }
            for zone in Set(zones) where !zone.isDefaultZone {
                var t: String?
                var more = true
                var names: [String: String] = [:]
                while more {
                    let page: RecordZoneChanges
                    do { page = try db.recordZoneChanges(zone, since: t) } catch let e as ShareFlowError where e.code == .zoneNotFound { break }
                    for r in page.modifications { names[r.recordID.recordName] = r.recordChangeTag }
                    for d in page.deletions { names[d.recordID.recordName] = nil }
                    t = page.changeToken
                    more = page.moreComing
                }
                if !names.isEmpty { all[zone] = names }
            }
            return all
        }
    }

    private final class Load: @unchecked Sendable {
        let nodes: [Engine], owners: [String], viewers: [String], zonesOf: [String: [RecordZoneID]], container: String
        let errors = LockedBox<[String]>([]), counts = LockedBox<[String: Int]>([:]), newAccounts = LockedBox(0)
        let deadline: Date
        init(nodes: [Engine], owners: [String], viewers: [String], zonesOf: [String: [RecordZoneID]], container: String, seconds: TimeInterval) {
            self.nodes = nodes
            self.owners = owners
            self.viewers = viewers
            self.zonesOf = zonesOf
            self.container = container
            deadline = Date().addingTimeInterval(seconds)
        }
        func priv(_ n: Int, _ who: String) throws -> CloudDatabase { try nodes[n].session(for: who).container(container).privateCloudDatabase }
        func shared(_ n: Int, _ who: String) throws -> CloudDatabase { try nodes[n].session(for: who).container(container).sharedCloudDatabase }
        func note(_ what: String, _ error: Error) {
            if let e = error as? ShareFlowError, e.code == .serverRecordChanged || e.code == .batchRequestFailed { return }
            errors.update { $0.append("\(what): \(error)") }
        }
        func noteResult(_ what: String, _ r: ModifyResult) {
            for e in r.errors { note(what, e.error) }
        }
        func work(_ n: Int, _ lane: Int) {
            var rng = SystemRandomNumberGenerator()
            var i = 0
            while Date() < deadline {
                i += 1
                let roll = Int.random(in: 0..<100, using: &rng)
                do {
                    if roll < 55 {
                        // An owner's batch over several zones, in a random order.
                        let o = owners.randomElement(using: &rng)!
                        let db = try priv(n, o)
                        let zones = zonesOf[o]!.shuffled(using: &rng)
                        var recs: [Record] = []
                        for z in zones.prefix(Int.random(in: 1...3, using: &rng)) {
                            let zone = z.isDefaultZone ? z : z
                            recs.append(
                                Record(
                                    recordType: "Doc",
                                    recordID: RecordID(recordName: "r\(Int.random(in: 0..<6, using: &rng))", zoneID: zone),
                                    fields: ["v": .string("\(n)-\(lane)-\(i)")]
                                )
                            )
                        }
                        noteResult("owner \(o) batch", try db.modifyRecords(saving: recs, savePolicy: .allKeys, atomically: Bool.random(using: &rng)))
                        counts.update { $0["ownerBatch", default: 0] += 1 }
                    } else if roll < 75 {
                        // A viewer writes into two owners' zones at once (shared DB).
                        let v = viewers.randomElement(using: &rng)!
                        let db = try shared(n, v)
                        let a = owners.randomElement(using: &rng)!
                        let b = owners.randomElement(using: &rng)!
                        let za = zonesOf[a]![Int.random(in: 0..<2, using: &rng)]
                        let zb = zonesOf[b]![Int.random(in: 0..<2, using: &rng)]
                        let recs = [za, zb].map {
                            Record(
                                recordType: "Doc",
                                recordID: RecordID(recordName: "s\(Int.random(in: 0..<4, using: &rng))", zoneID: $0),
                                fields: ["v": .string("\(n)-\(lane)-\(i)")]
                            )
                        }
                        noteResult("viewer \(v) batch", try db.modifyRecords(saving: recs, savePolicy: .allKeys, atomically: false))
                        counts.update { $0["viewerBatch", default: 0] += 1 }
                    } else if roll < 85 {
                        // A new account's first save: its default zone made (zone IDs).
                        let k = newAccounts.value + 1
                        newAccounts.update { $0 += 1 }
                        let who = "new\(n)-\(lane)-\(k)@example.com"
                        _ = try nodes[n].accounts.create(emails: [who])
                        let db = try priv(n, who)
                        noteResult(
                            "new \(who)",
                            try db.modifyRecords(saving: [Record(recordType: "Doc", recordID: RecordID(recordName: "x", zoneID: .default))])
                        )
                        counts.update { $0["newDefault", default: 0] += 1 }
                    } else if roll < 92 {
                        // A zone made, written and deleted.
                        let o = owners.randomElement(using: &rng)!
                        let db = try priv(n, o)
                        let z = try db.saveZone("Tmp\(n)\(lane)").zoneID
                        noteResult("tmp", try db.modifyRecords(saving: [Record(recordType: "Doc", recordID: RecordID(recordName: "t", zoneID: z))]))
                        try db.deleteZone(z)
                        counts.update { $0["tmpZone", default: 0] += 1 }
                    } else {
                        // A record share made and deleted in an owner's zone A, with a viewer.
                        let o = owners.randomElement(using: &rng)!
                        let db = try priv(n, o)
                        let root = Record(recordType: "Doc", recordID: RecordID(recordName: "root\(n)\(lane)", zoneID: zonesOf[o]![3]))
                        let share = Share(rootRecord: root)
                        let r = try db.modifyRecords(saving: [root, share], savePolicy: .allKeys)
                        noteResult("record share", r)
                        if r.errors.isEmpty { noteResult("record share delete", try db.modifyRecords(deleting: [share.recordID])) }
                        counts.update { $0["recordShare", default: 0] += 1 }
                    }
                } catch {
                    note("op \(roll) on node \(n)", error)
                }
            }
        }
    }

    func testThreeNodesManyZonesSharedViewers() throws {
        guard let template = EachDriver.postgresTemplate else { throw XCTSkip("PostgreSQL only") }
        let url = try PostgresStore.makeScratch(template: template)
        defer { PostgresStore.dropScratch(url) }
        let nodes = try (0..<3).map { _ in Engine(store: try Store.open(url)) }
        defer { for node in nodes { node.store.close() } }
        let owners = (1...4).map { "o\($0)@example.com" }
        let viewers = (1...3).map { "v\($0)@example.com" }
        for who in owners + viewers { _ = try nodes[0].accounts.create(emails: [who]) }
        let container = "iCloud.t"
        func priv(_ n: Int, _ who: String) throws -> CloudDatabase { try nodes[n].session(for: who).container(container).privateCloudDatabase }
        func shared(_ n: Int, _ who: String) throws -> CloudDatabase { try nodes[n].session(for: who).container(container).sharedCloudDatabase }

        // Each owner: zones A and B, each shared whole with every viewer (read-write), accepted.
        var zonesOf: [String: [RecordZoneID]] = [:]
        for o in owners {
            let db = try priv(0, o)
            let c = try nodes[0].session(for: o).container(container)
            for name in ["A", "B"] {
                let zone = try db.saveZone(name).zoneID
                zonesOf[o, default: []].append(zone)
                let share = Share(zoneID: zone)
                for v in viewers {
                    let (results, error) = c.fetchShareParticipantResults([LookupRequest(emailAddress: v)])
                    if let error { throw error }
                    let p = try results[0].1.get()
                    p.permission = .readWrite
                    share.addParticipant(p)
                }
                let r = try db.modifyRecords(saving: [share])
                if let e = r.firstError { throw e }
                for v in viewers {
                    let vc = try nodes[0].session(for: v).container(container)
                    let (metas, error) = vc.fetchShareMetadataResults([share.url!])
                    if let error { throw error }
                    let (_, acceptError) = vc.acceptShareResults([try metas[0].1.get()])
                    if let acceptError { throw acceptError }
                }
            }
            zonesOf[o, default: []].append(RecordZoneID.default)
            zonesOf[o, default: []].append(try db.saveZone("C").zoneID)
        }

        let load = Load(nodes: nodes, owners: owners, viewers: viewers, zonesOf: zonesOf, container: container, seconds: 8)
        let errors = load.errors
        let counts = load.counts
        let group = DispatchGroup()
        let deadline = load.deadline
        for n in 0..<3 {
            for lane in 0..<3 {
                group.enter()
                Thread {
                    load.work(n, lane)
                    group.leave()
                }.start()
            }
        }
        // Followers on node 2: each viewer's shared database, each owner's private database.
        let followers = try viewers.map { Follower(try shared(2, $0)) } + owners.map { Follower(try priv(1, $0)) }
        let followerErrors = LockedBox<[String]>([])
        for f in followers {
            group.enter()
            Thread {
                defer { group.leave() }
                while Date() < deadline {
                    do { try f.poll() } catch { followerErrors.update { $0.append("\(error)") } }
                    usleep(20_000)
                }
            }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 300), .success, "a hang")
        for f in followers { try f.poll() }
        // Every kind of write happened at least once (the load is bounded by time, not count).
        XCTAssertEqual(
            Set(counts.value.filter { $0.value > 0 }.keys),
            ["recordShare", "newDefault", "tmpZone", "ownerBatch", "viewerBatch"],
            "\(counts.value)"
        )
        XCTAssertEqual(Array(errors.value.prefix(15)), [], "errors other than stale tags (\(errors.value.count))")
        XCTAssertEqual(followerErrors.value.prefix(10).map { $0 }, [], "follower errors")
        for f in followers {
            let truth = try f.truth()
            for (zone, names) in truth {
                for (name, tag) in names where f.seen[zone]?[name] != tag {
                    XCTFail("follower of \(f.db.databaseScope) missed \(zone.zoneName)/\(name): saw \(f.seen[zone]?[name] ?? "nothing"), is \(tag)")
                }
            }
        }
        // Per zone: positions unique and within the counter.
        let check = try XCTUnwrap(nodes[0].store.driver as? PostgresStore).openSession(statementTimeoutMs: 60_000)
        defer { try? check.connection.close().wait() }
        let dupes = try check.query(
            """
            SELECT zoneID, seq, count(*) FROM (SELECT zoneID, seq FROM record WHERE seq > 0 UNION ALL SELECT zoneID, seq FROM zone_change) x
            GROUP BY zoneID, seq HAVING count(*) > 1
            """,
            []
        )
        XCTAssertEqual(dupes.count, 0, "positions given twice in a zone")
        let over = try check.query(
            """
            SELECT z.id FROM zone z WHERE EXISTS (SELECT 1 FROM record r WHERE r.zoneID = z.id AND r.seq > z.changeSeq)
               OR EXISTS (SELECT 1 FROM zone_change c WHERE c.zoneID = z.id AND c.seq > z.changeSeq)
            """,
            []
        )
        XCTAssertEqual(over.count, 0, "positions past a zone's counter")
        let feedDupes = try check.query("SELECT feedID, seq, count(*) FROM feed_change GROUP BY feedID, seq HAVING count(*) > 1", [])
        XCTAssertEqual(feedDupes.count, 0, "database-feed positions given twice")
    }
}
