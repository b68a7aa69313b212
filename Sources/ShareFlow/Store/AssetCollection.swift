import Foundation

/// What `collectOrphanAssets` did.
public struct AssetCollection: Sendable, Codable, Equatable {
    /// Blobs removed: no record named them, no unexpired receipt either, and they were older than the grace.
    public var removed = 0
    /// Blobs no record names that are kept: younger than the grace (a save may be about to name them).
    public var waiting = 0
    /// Blobs records name.
    public var referenced = 0
}

/// Assets' blobs kept exactly while something names them (SPEC §19 A3–A4): a record's field,
/// or an upload's receipt not yet redeemed or expired. Everything else is an orphan — the bytes
/// of a save that failed, rolled back or was killed, or of a record changed or deleted since —
/// and is removed once older than the grace.
extension Store {
    /// Every checksum a record names, and every unexpired receipt's, read in `db`.
    func namedAssetChecksums(_ db: StoreTransaction, now: Double) throws -> Set<String> {
        var named = try db.pendingAssetChecksums(now: now)
        try forEachStoredAsset(db) { _, _, sum, _ in named.insert(sum) }
        return named
    }

    /// Every saved asset a record's field names (the record's row, the field, the checksum and
    /// size), read page by page.
    private func forEachStoredAsset(_ db: StoreTransaction, _ body: (Int64, String, String, Int64) throws -> Void) throws {
        var after: Int64 = 0
        while true {
            let page = try db.recordsHoldingAssets(after: after, limit: 500)
            guard let last = page.last else { return }
            after = last.id
            for (id, fields) in page {
                for (key, value) in fields where value.holdsAsset {
                    for (sum, size) in value.storedAssets { try body(id, key, sum, size) }
                }
            }
        }
    }

    /// Removes the blobs nothing names that are older than `grace` seconds, and the expired
    /// reservations and receipts; in one write of the whole store, so no save can name a blob
    /// between the look and the removal (a save checks its blobs are there under the same lock).
    /// `store compact` runs it; so does `serve`, every quarter of the grace.
    ///
    /// ```swift
    /// let done = try store.collectOrphanAssets(grace: 3600)   // done.removed, done.waiting
    /// ```
    public func collectOrphanAssets(grace: Double, now: Double = EngineClock.seconds) throws -> AssetCollection {
        var done = AssetCollection()
        let cutoff = now - grace
        try write(scope: .wholeStore) { db in
            let named = try namedAssetChecksums(db, now: now)
            try db.pruneAssetUploads(expiredAt: now, limit: 100_000)
            if let files = fileAssets {
                for sum in try files.checksums() {
                    if named.contains(sum) {
                        done.referenced += 1
                    } else if let age = files.modified(sum), age < cutoff {
                        if files.remove(sum) { done.removed += 1 }
                    } else {
                        done.waiting += 1
                    }
                }
            } else {
                let old = Set(try db.assetBlobs(savedBefore: cutoff, limit: 100_000))
                for sum in old where !named.contains(sum) {
                    try db.removeAssetBlob(checksum: sum)
                    done.removed += 1
                }
                let all = try db.fetchInteger("SELECT COUNT(*) FROM asset_blob") ?? 0
                done.referenced = named.count
                done.waiting = max(0, Int(all) - named.count)
            }
        }
        fileAssets?.removeUnfinished(before: cutoff)
        return done
    }

    /// `store check`'s view of assets: problems (a record naming bytes the store lacks) and
    /// notes (blobs nothing names, collected once past the grace).
    func checkAssets(_ db: StoreTransaction, problems: inout [String], notes: inout [String]) throws {
        let now = EngineClock.seconds
        var missing: [String] = []
        try forEachStoredAsset(db) { id, key, sum, size in
            let kept: Int64?
            if let files = fileAssets { kept = try files.size(sum) } else { kept = try db.assetBlob(checksum: sum)?.size }
            if kept != size {
                missing.append(
                    "record row \(id): field '\(key)' names asset \(sum.prefix(12))… (\(size) bytes), \(kept == nil ? "missing" : "\(kept!) bytes") in the store"
                )
            }
        }
        problems += missing.prefix(100)
        if missing.count > 100 { problems.append("… and \(missing.count - 100) more assets missing") }
        let named = try namedAssetChecksums(db, now: now)
        let kept: [String]
        if let files = fileAssets { kept = try files.checksums() } else { kept = try db.assetBlobs(savedBefore: .infinity, limit: 1_000_000) }
        let orphans = kept.filter { !named.contains($0) }.count
        if orphans > 0 {
            notes.append(
                "\(orphans) asset blob\(orphans == 1 ? "" : "s") no record names (removed by `store compact` once older than assets.graceSeconds)"
            )
        }
    }
}
