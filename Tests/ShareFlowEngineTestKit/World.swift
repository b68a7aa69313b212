import Foundation
import ShareFlow

/// Alice owns a Trips zone with a trip and a day under it; Bob and Carol have accounts.
public struct World {
    public let engine: Engine
    public let alice: Account, bob: Account, carol: Account
    public let c: Container, bc: Container, cc: Container
    public let zone: RecordZone
    public let trip: Record, day: Record

    public static let containerID = "iCloud.com.example.trips"

    public init(engine: Engine? = nil) throws {
        let engine = try engine ?? Engine(store: TestStore.make())
        self.engine = engine
        alice = try engine.accounts.create(emails: ["alice@example.com"], name: NameComponents(givenName: "Alice"), discoverable: true)
        bob = try engine.accounts.create(
            emails: ["bob@example.com"],
            phones: ["+1 415 555 0101"],
            name: NameComponents(givenName: "Bob"),
            discoverable: true
        )
        carol = try engine.accounts.create(emails: ["carol@example.com"], name: NameComponents(givenName: "Carol"))
        c = try engine.session(for: alice).container(World.containerID)
        bc = try engine.session(for: bob).container(World.containerID)
        cc = try engine.session(for: carol).container(World.containerID)
        zone = try c.privateCloudDatabase.saveZone("Trips")
        trip = Record(recordType: "Trip", recordID: RecordID(recordName: "lisbon", zoneID: zone.zoneID), fields: ["title": .string("Lisbon")])
        day = Record(recordType: "Day", recordID: RecordID(recordName: "day1", zoneID: zone.zoneID), parent: trip.recordID)
    }

    public func participant(_ who: String, permission: ParticipantPermission = .readOnly) throws -> Participant {
        let (results, error) = c.fetchShareParticipantResults([LookupRequest(emailAddress: who)])
        if let error { throw error }
        let p = try results[0].1.get()
        p.permission = permission
        return p
    }

    /// Saves trip, day and a share of the trip with `people`.
    @discardableResult
    public func share(_ people: [String] = [], permission: ParticipantPermission = .readOnly) throws -> Share {
        let share = Share(rootRecord: trip)
        share.title = "Lisbon trip"
        for who in people { share.addParticipant(try participant(who, permission: permission)) }
        let result = try c.privateCloudDatabase.modifyRecords(saving: [trip, day, share])
        if let e = result.error { throw e }
        return share
    }

    /// Fetches the metadata and accepts, as `container`'s user.
    @discardableResult
    public func accept(_ url: String, in container: Container) throws -> Share {
        let (metas, error) = container.fetchShareMetadataResults([url])
        if let error { throw error.partialErrors.first?.error ?? error }
        let (shares, acceptError) = container.acceptShareResults([try metas[0].1.get()])
        if let acceptError { throw acceptError.partialErrors.first?.error ?? acceptError }
        return try shares[0].1.get()
    }
}

extension ModifyResult {
    /// The first item error that is not another item's `batchRequestFailed` (R22).
    public var firstError: ShareFlowError? { errors.first { $0.error.code != .batchRequestFailed }?.error ?? errors.first?.error }

    public func error(for record: Record) -> ShareFlowError? {
        errors.first { $0.item == record.recordID.description }?.error
    }
}
