import Foundation
import XCTest
@testable import ShareFlow

/// A property of R21: whatever order saves (from fresh and stale copies), participant changes
/// and accepts come in, a share's saved object and the store never disagree about who is on
/// it, and a refused save changes nothing.
final class ShareInterleavingTests: XCTestCase {
    /// A small deterministic generator (SplitMix64), so a failure names a seed that replays it.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
    }

    /// Who is on the share in the store, by address, with permission and status (removed ones left out).
    private func stored(_ w: World, _ url: String) throws -> Set<String> {
        let audit = try XCTUnwrap(w.engine.auditShares().first { $0.url == url })
        return Set(audit.participants.filter { $0.acceptanceStatus != .removed }
            .map { "\($0.lookupInfo.value)/\($0.permission.rawValue)" })
    }

    private func shown(_ share: Share) -> Set<String> {
        Set(share.participants.filter { $0.acceptanceStatus != .removed }.map { p in
            "\(p.userIdentity.lookupInfo?.value ?? p.userIdentity.userRecordID ?? "?")/\(p.permission.rawValue)"
        })
    }

    func testRandomInterleavingsNeverSplitObjectAndStore() throws {
        for seed: UInt64 in [1, 7, 42, 2026, 31337] {
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
            let s = g.below(3), k = g.below(2)
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
}
