import Foundation
import ShareFlowEngineTestKit
import ShareFlowTestKit
import XCTest

@testable import ShareFlow

/// What the feed convergence walks (SPEC §14 S6) start from and check alike: Alice's zones
/// Trips and Second, Bob and Carol as her guests, each reader's copy kept by following the
/// feeds, and the names the walk has made in each zone.
final class ConvergenceWalk {
    let world: World
    let owner: CloudDatabase
    let guests: [(Account, Container)]
    let zones: [RecordZoneID]
    var names: [RecordZoneID: [String]]
    let ownerReplica: FeedReplica
    let guestReplicas: [FeedReplica]
    /// How many records the guests have fetched, over the checks: a walk that never shared
    /// anything must fail instead of passing.
    private(set) var sightings = 0

    /// The codes of a step the rules refuse: it changes nothing, and the copies must still match.
    static let refusals: [ShareFlowError.Code] = [
        .permissionFailure, .invalidArguments, .serverRecordChanged, .alreadyShared, .unknownItem, .partialFailure, .batchRequestFailed,
    ]

    init() throws {
        world = try World()
        owner = world.c.privateCloudDatabase
        guests = [(world.bob, world.bc), (world.carol, world.cc)]
        zones = [world.zone.zoneID, try owner.saveZone("Second").zoneID]
        names = [zones[0]: [], zones[1]: []]
        ownerReplica = FeedReplica(owner)
        guestReplicas = guests.map { FeedReplica($0.1.sharedCloudDatabase) }
    }

    /// The owner's records of the zone now (a name deleted since is skipped).
    func allRecords(_ zone: RecordZoneID) -> [Record] {
        names[zone, default: []].compactMap { try? owner.fetchRecord(RecordID(recordName: $0, zoneID: zone)) }
    }

    /// A step's zone, picked at random; the owner's records there now, and the plain ones
    /// (Item) among them.
    func pickZone(using rng: inout SeededRandom) -> (zone: RecordZoneID, existing: [Record], plain: [Record]) {
        let zone = zones[Int.random(in: 0..<zones.count, using: &rng)]
        let existing = allRecords(zone)
        return (zone, existing, existing.filter { $0.recordType == "Item" })
    }

    /// A guest of one of `existing`'s shares goes: the owner removes them, or they leave.
    func removeOrLeave(_ existing: [Record], using rng: inout SeededRandom) throws {
        guard let share = existing.compactMap({ $0 as? Share }).randomElement(using: &rng),
            let guest = share.participants.first(where: { $0.role != .owner && $0.acceptanceStatus != .removed })
        else { return }
        if Bool.random(using: &rng) {
            share.removeParticipant(guest)
            _ = try owner.modifyRecords(saving: [share])
        } else if let (_, container) = guests.first(where: { $0.0.userRecordID == guest.userIdentity.userRecordID }) {
            _ = try container.sharedCloudDatabase.modifyRecords(deleting: [share.recordID])
        }
    }

    /// Each guest follows the feeds `limit` changes a page; then each zone's copy must hold
    /// what the guest's shared database fetches (`expected`: name → change tag), no more.
    /// `inspect` sees each zone's copy and fetch first, for the walk's own counts and checks;
    /// `context` starts each failure's message.
    func checkGuestCopies(
        limit: Int,
        _ context: String,
        inspect: (_ copy: [String: FeedReplica.Copy]?, _ fetched: [String: Record], _ expected: [String: String]) -> Void
    ) throws {
        for ((account, container), replica) in zip(guests, guestReplicas) {
            try replica.follow(limit: limit)
            for zone in zones {
                var fetched: [String: Record] = [:]
                for name in names[zone, default: []] {
                    if let r = try? container.sharedCloudDatabase.fetchRecord(RecordID(recordName: name, zoneID: zone)) { fetched[name] = r }
                }
                let expected = fetched.compactMapValues(\.recordChangeTag)
                inspect(replica.zones[zone]?.records, fetched, expected)
                sightings += expected.count
                let copy = replica.zones[zone]?.records.mapValues(\.tag)
                if expected.isEmpty {
                    XCTAssertTrue(copy?.isEmpty ?? true, "\(context): \(account.emails[0]) keeps \(copy ?? [:]) of \(zone.zoneName)")
                } else {
                    XCTAssertEqual(copy ?? [:], expected, "\(context): \(account.emails[0])'s copy of \(zone.zoneName)")
                }
            }
        }
    }
}
