import Foundation

/// Questions asked of the policies by hand (SPEC §18 P4): `shareflow policy eval --as WHO
/// --share URL`. The request is made from the store as the engine would make it for `point`,
/// and nothing is changed.
extension Engine {
    /// The request `point` would get from `caller` about the share at `url`: the share as
    /// stored (as `caller` sees it for an accept, as its owner sees it otherwise), and for the
    /// points that change a share, the same share as `proposed` (a question by hand proposes
    /// nothing: edit the input to ask about a change).
    public func policyRequest(
        _ point: DecisionPoint,
        caller: Account,
        shareURL url: String,
        environment: CloudEnvironment = .default
    ) throws
        -> PolicyRequest
    {
        try reading { db in
            guard let (row, zone) = try shareAndZone(url: url, environment: environment, db: db) else {
                throw ShareFlowError.unknown("no share has the URL \(Naming.printable(url)) in \(environment.rawValue)")
            }
            let owner = try owner(of: zone, db: db)
            let viewer = point == .shareAccept ? caller : owner
            let share = try makeShare(row, zone: zone, caller: viewer, db: db)
            let mine = try participantRow(share: row.id, account: caller.id, db: db)
            let participant = try mine.map { try participantObject($0, db: db) }
            var metadata: ShareMetadata?
            if point == .shareAccept {
                metadata = ShareMetadata(
                    containerID: zone.container,
                    share: share,
                    url: url,
                    ownerIdentity: try ownerIdentity(of: zone, db: db).identity(lookupInfo: nil),
                    hierarchicalRootRecordID: share.rootRecordID,
                    rootRecord: nil,
                    participantRole: mine?.role ?? .publicUser,
                    participantStatus: mine?.status ?? .unknown,
                    participantPermission: mine?.permission ?? row.publicPermission
                )
            }
            let changes = point != .shareAccept
            let objects = PolicyRequest.Objects(
                share: { share },
                participant: { participant },
                metadata: metadata,
                proposed: { changes ? share.proposed(over: share, owner: nil, asShown: true) : nil }
            )
            objects.environment = zone.container.environment.rawValue
            if point == .shareRequestAccess {
                objects.url = url
                objects.requester = Engine.requester(caller)
            }
            return PolicyRequest(point: point, caller: caller, container: zone.container.identifier, objects: objects)
        }
    }

    /// The request a logged decision's input (`shareflow decisions --json`, `eval --input`)
    /// describes, its caller's row found by user record ID (SPEC §18 P4). Throws
    /// `PolicyInputError` naming the field.
    public func policyRequest(input: [UInt8], pointName: String? = nil) throws -> PolicyRequest {
        try PolicyInput.request(from: input, pointName: pointName) { id in (try? accounts.get(userRecordID: id)) ?? nil }
    }

    /// Asks the policies `request` without changing anything: what they write is rolled back
    /// and no decision is logged, theirs or any they cause (SPEC §18 P4).
    public func evaluate(_ request: PolicyRequest) -> PolicyDecision {
        var decision: PolicyDecision?
        _ = try? withoutChanges { decision = policies.evaluate(request) }
        return decision ?? policies.evaluate(request)
    }

    /// Runs `body` so that nothing it does stays: its writes (a plugin's setup, a policy's own
    /// saves) are rolled back, its events never delivered, its decisions never logged —
    /// `policy eval` and `policy replay` (SPEC §18 P4, P6). What `body` returns is kept.
    public func withoutChanges<T>(_ body: () throws -> T) throws -> T {
        var result: Result<T, Error>?
        policies.silenced += 1
        defer { policies.silenced -= 1 }
        do {
            try transaction { _ in
                result = Result { try body() }
                throw RolledBack()
            }
        } catch is RolledBack {
        }
        return try result!.get()
    }
}

/// What ends `withoutChanges`'s transaction: its body's work is undone.
private struct RolledBack: Error {}
