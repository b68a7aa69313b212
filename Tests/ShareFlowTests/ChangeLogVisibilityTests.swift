import Foundation
import ShareFlowEngineTestKit
import XCTest

@testable import ShareFlow

/// SPEC §16 M6: the change log's "who sees which record" (R12, R37) has one definition. The
/// SQL predicate the log filters participants with is generated from `SharingRules`, and here
/// held against it cell by cell, evaluated by the store the suite runs on (SQLite, or
/// PostgreSQL with SHAREFLOW_TEST_POSTGRES).
class ChangeLogVisibilityTests: XCTestCase {
    func testTheLogsVisibilityIsTheReadRuleInEveryCell() throws {
        let store = try TestStore.make()
        defer { store.close() }
        var checked = 0
        for role in ParticipantRole.allCases {
            for permission in ParticipantPermission.allCases {
                for status in ParticipantAcceptanceStatus.allCases {
                    let sql = "SELECT 1 FROM (SELECT ? AS status, ? AS role, ? AS permission) p WHERE \(StoreTransaction.sees)"
                    let sees =
                        try store.read { tx in
                            try tx.fetchOne(sql, [status.rawValue, role.rawValue, permission.rawValue], table: "participant", keyAt: 0) { _ in true }
                        } ?? false
                    // The owner reads their private database: no shared view of their own share.
                    let expected =
                        role != .owner
                        && SharingRules.decide(.readRecords, role: role, permission: permission, status: status, isPublicShare: false).isAllowed
                    XCTAssertEqual(sees, expected, "role \(role), permission \(permission), status \(status)")
                    checked += 1
                }
            }
        }
        XCTAssertEqual(checked, ParticipantRole.allCases.count * ParticipantPermission.allCases.count * ParticipantAcceptanceStatus.allCases.count)
    }

    /// R12's readable cells are a product of three lists, so the predicate is three tests, one
    /// a column, naming neither the owner nor an unknown role; no `IN` of more than two
    /// constants (SQLite would build a temporary table of them each time a statement runs).
    func testThePredicateIsAProductNamingNoOwnerNorUnknownRole() {
        XCTAssertTrue(
            StoreTransaction.sees.hasPrefix("p.status IN ('accepted') AND (p.role = 'administrator' OR p.role = "),
            StoreTransaction.sees
        )
        XCTAssertTrue(StoreTransaction.sees.hasSuffix("AND p.permission IN ('readOnly', 'readWrite')"), StoreTransaction.sees)
        XCTAssertFalse(StoreTransaction.sees.contains("'owner'"))
        XCTAssertFalse(
            StoreTransaction.sees.contains("'unknown'"),
            "a participant of unknown role reads nothing (SharingRules), so the log shows them nothing"
        )
    }
}
