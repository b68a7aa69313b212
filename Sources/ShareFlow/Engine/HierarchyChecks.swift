import Foundation

/// The checks of where a record or share sits in its zone's parent chains: no cycle (R25),
/// no share inside another (R5). The walks are SQL's (`StoreTransaction`), one statement each.
extension Engine {
    /// R25: the parent exists in the zone (saved before, or earlier in this call, which
    /// `saveOrder` arranges), and is neither the record nor one of its descendants.
    func checkParent(_ parentName: String, of name: String, zone: ZoneRow, item: String, db: StoreTransaction) throws {
        guard parentName != name else {
            throw ShareFlowError(
                .referenceViolation,
                "\(item): its parent \(parentName) is the record itself; parent chains never form a cycle (R25)"
            )
        }
        guard try db.recordExists(zone: zone.id, name: parentName) else {
            throw ShareFlowError(
                .referenceViolation,
                "\(item): its parent \(parentName) does not exist in zone \(zone.zoneID.zoneName); save the parent first or in the same call (R25)"
            )
        }
        // Only a record with children can be above its new parent, so a leaf (every new record
        // but one re-made under a deleted name its orphans still name, R34) costs two index
        // seeks whatever its depth; otherwise one walk up in SQL, not a row read per level.
        guard try db.hasChildren(zone: zone.id, name: name), try db.isAncestor(name, of: parentName, zone: zone.id) else { return }
        throw ShareFlowError(.referenceViolation, "\(item): its parent \(parentName) descends from it; parent chains never form a cycle (R25)")
    }

    /// R5: the root is saved in this call, and neither it, its ancestors, its descendants nor
    /// its zone is shared already.
    func checkNotAlreadyShared(_ share: Share, zone: ZoneRow, savedInThisCall: Set<RecordID>, item: String, db: StoreTransaction) throws {
        if let zoneShare = try zoneShareRow(zone: zone, db: db) {
            throw ShareFlowError(.alreadyShared, "\(item): zone \(zone.zoneID.zoneName) is already shared by \(zoneShare.recordName) (R5)")
        }
        guard let rootID = share.rootRecordID else {
            if let any = try db.anySharedRoot(zone: zone.id) {
                throw ShareFlowError(
                    .alreadyShared,
                    "\(item): record \(any) in zone \(zone.zoneID.zoneName) is already shared; a zone share needs an unshared zone (R5)"
                )
            }
            return
        }
        guard savedInThisCall.contains(rootID) else {
            throw ShareFlowError.invalid("\(item) must be saved in the same modifyRecords call as its root record \(rootID.recordName) (R5)")
        }
        if let existing = try shareRow(rootName: rootID.recordName, zone: zone, db: db) {
            throw ShareFlowError(.alreadyShared, "\(item): record \(rootID.recordName) is already shared by \(existing.recordName) (R5)")
        }
        let parentName = try db.parentName(zone: zone.id, name: rootID.recordName)
        if let parentName, let above = try shareCovering(zone: zone, recordName: parentName, db: db) {
            throw ShareFlowError(.alreadyShared, "\(item): an ancestor of \(rootID.recordName) is already shared by \(above.recordName) (R5)")
        }
        if let below = try db.sharedDescendantRoot(zone: zone.id, below: rootID.recordName) {
            throw ShareFlowError(.alreadyShared, "\(item): descendant \(below) of \(rootID.recordName) is already shared (R5)")
        }
    }
}
