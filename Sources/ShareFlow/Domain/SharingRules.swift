/// Who may do what with a share: the one place the engine asks, by role, permission and
/// acceptance status (R9, R10, R12, R13, R14, R18).
///
/// ```swift
/// SharingRules.decide(.modifyRecords, role: .privateUser, permission: .readOnly,
///                     status: .accepted, isPublicShare: false)
/// // .denied(.permissionFailure, "readOnly participants may not modify shared records (R13)")
/// ```
public enum SharingRules {
    /// What someone asks to do with a share or its records.
    public enum Action: String, Sendable, CaseIterable {
        /// See the shared records in the shared database (R12).
        case readRecords
        /// Save or delete records of the share other than the root (R13).
        case modifyRecords
        /// Delete a hierarchy share's root record (R13: owner only).
        case deleteRootRecord
        /// Add or remove participants, change permissions (R9).
        case manageParticipants
        /// Change the share's `publicPermission` (R11).
        case changePublicPermission
        /// Change whether the share takes access requests (R38: the owner or an administrator).
        case changeAccessRequests
        /// Accept the share (R10, R18).
        case accept
        /// Delete the share: the owner ends it, anyone else leaves it (R14).
        case deleteShare
    }

    /// The answer: allowed, or the error code and reason of the refusal.
    public enum Decision: Equatable, Sendable {
        /// The action may go ahead.
        case allowed
        /// Refused, with the error's code and a reason naming the rule.
        case denied(ShareFlowError.Code, String)

        /// Whether the decision is `allowed`.
        public var isAllowed: Bool { self == .allowed }
    }

    /// Whether someone of `role`, `permission` and `status` on a share may do `action`. The owner may do
    /// anything, someone of `unknown` role nothing; `isPublicShare` matters only to `accept` (R10, R18).
    public static func decide(
        _ action: Action,
        role: ParticipantRole,
        permission: ParticipantPermission,
        status: ParticipantAcceptanceStatus,
        isPublicShare: Bool
    ) -> Decision {
        if role == .owner { return .allowed }
        if role == .unknown {
            return .denied(.permissionFailure, "a participant of unknown role may not \(action.phrase)")
        }
        let accepted = status == .accepted
        switch action {
        case .readRecords:
            guard accepted else {
                return .denied(.permissionFailure, "only accepted participants see the shared records; this one is \(status.rawValue) (R12)")
            }
            guard permission == .readOnly || permission == .readWrite else {
                return .denied(.permissionFailure, "participants with permission \(permission.rawValue) may not read the shared records (R12)")
            }
            return .allowed
        case .modifyRecords:
            guard accepted else {
                return .denied(.permissionFailure, "only accepted participants may modify shared records; this one is \(status.rawValue) (R12, R13)")
            }
            guard permission == .readWrite else {
                return .denied(.permissionFailure, "\(permission.rawValue) participants may not modify shared records (R13)")
            }
            return .allowed
        case .deleteRootRecord:
            return .denied(.permissionFailure, "only the owner may delete a shared hierarchy's root record (R13)")
        case .manageParticipants, .changePublicPermission, .changeAccessRequests:
            let rule = action == .changeAccessRequests ? "R38" : "R9"
            guard role == .administrator else {
                return .denied(.permissionFailure, "only the owner or an administrator may \(action.phrase) (\(rule))")
            }
            guard accepted else {
                return .denied(.permissionFailure, "an administrator must have accepted the share to \(action.phrase) (\(rule))")
            }
            return .allowed
        case .accept:
            switch status {
            case .pending, .accepted: return .allowed
            case .removed:
                return isPublicShare
                    ? .allowed
                    : .denied(.permissionFailure, "a removed participant of a private share cannot accept until the owner adds them again (R18)")
            case .unknown:
                return isPublicShare
                    ? .allowed
                    : .denied(.permissionFailure, "a private share can be accepted only by participants the owner added (R10)")
            }
        case .deleteShare:
            guard status == .accepted || status == .pending else {
                return .denied(.permissionFailure, "a \(status.rawValue) participant has no share to leave (R14)")
            }
            return .allowed
        }
    }

    /// R10, R18: whether accepting changes nothing for a caller of this role and status: the
    /// owner, or a participant who accepted already. Such an accept answers the share as it
    /// is, asking no policy and sending no event.
    public static func acceptChangesNothing(role: ParticipantRole?, status: ParticipantAcceptanceStatus?) -> Bool {
        role == .owner || status == .accepted
    }

    /// Throws the denial as a `ShareFlowError` naming `item`.
    /// `decide` for where `participant` stands on the share.
    static func decide(_ action: Action, of participant: some ParticipantStanding, isPublicShare: Bool) -> Decision {
        decide(action, role: participant.role, permission: participant.permission, status: participant.status, isPublicShare: isPublicShare)
    }

    /// `require` for where `participant` stands on the share.
    static func require(_ action: Action, of participant: some ParticipantStanding, isPublicShare: Bool, item: String) throws {
        try require(
            action,
            role: participant.role,
            permission: participant.permission,
            status: participant.status,
            isPublicShare: isPublicShare,
            item: item
        )
    }

    static func require(
        _ action: Action,
        role: ParticipantRole,
        permission: ParticipantPermission,
        status: ParticipantAcceptanceStatus,
        isPublicShare: Bool,
        item: String
    ) throws {
        if case let .denied(code, reason) = decide(action, role: role, permission: permission, status: status, isPublicShare: isPublicShare) {
            throw ShareFlowError(code, "\(item): \(reason)")
        }
    }
}

extension SharingRules.Action {
    var phrase: String {
        switch self {
        case .readRecords: return "read the shared records"
        case .modifyRecords: return "modify shared records"
        case .deleteRootRecord: return "delete the root record"
        case .manageParticipants: return "add, remove or change participants"
        case .changePublicPermission: return "change the public permission"
        case .changeAccessRequests: return "change whether the share takes access requests"
        case .accept: return "accept the share"
        case .deleteShare: return "delete the share"
        }
    }
}

/// Where a participant stands on a share: what the rules read of it (a stored participant's row).
protocol ParticipantStanding {
    var role: ParticipantRole { get }
    var permission: ParticipantPermission { get }
    var status: ParticipantAcceptanceStatus { get }
}
