import XCTest

@testable import ShareFlow

/// Every cell of role × permission × status × action against the rules as the SPEC states
/// them (R9, R10, R12, R13, R14, R18), restated here independently of `SharingRules`.
final class AuthorizationMatrixTests: XCTestCase {
    func expected(
        _ action: SharingRules.Action,
        _ role: ParticipantRole,
        _ permission: ParticipantPermission,
        _ status: ParticipantAcceptanceStatus,
        isPublic: Bool
    ) -> Bool {
        if role == .owner { return true }
        if role == .unknown { return false }
        let canRead = permission == .readOnly || permission == .readWrite
        switch action {
        case .readRecords: return status == .accepted && canRead  // R12
        case .modifyRecords: return status == .accepted && permission == .readWrite  // R13
        case .deleteRootRecord: return false  // R13
        case .manageParticipants, .changePublicPermission, .changeAccessRequests: return role == .administrator && status == .accepted  // R9, R38
        case .accept:  // R10, R18
            if status == .pending || status == .accepted { return true }
            return isPublic
        case .deleteShare: return status == .accepted || status == .pending  // R14
        }
    }

    func testEveryCell() {
        var cells = 0
        for action in SharingRules.Action.allCases {
            for role in ParticipantRole.allCases {
                for permission in ParticipantPermission.allCases {
                    for status in ParticipantAcceptanceStatus.allCases {
                        for isPublic in [false, true] {
                            let decision = SharingRules.decide(action, role: role, permission: permission, status: status, isPublicShare: isPublic)
                            XCTAssertEqual(
                                decision.isAllowed,
                                expected(action, role, permission, status, isPublic: isPublic),
                                "\(action) by \(role)/\(permission)/\(status) public=\(isPublic)"
                            )
                            if case let .denied(code, reason) = decision {
                                XCTAssertEqual(code, .permissionFailure)
                                XCTAssertTrue(reason.contains("(R") || role == .unknown, "denial cites its rule: \(reason)")
                            }
                            cells += 1
                        }
                    }
                }
            }
        }
        XCTAssertEqual(cells, SharingRules.Action.allCases.count * 5 * 4 * 4 * 2)
        XCTAssertEqual(SharingRules.Action.allCases.count, 8)
    }
}
