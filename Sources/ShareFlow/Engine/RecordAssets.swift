import Crypto
import Foundation

/// Assets in a save (SPEC §19 A2–A4): their bytes made durable in the store's blobs before the
/// record's transaction opens, then each asset value turned into the content the store keeps
/// (`Asset.Content.stored`) inside the item's savepoint, so a record never names bytes the
/// store does not hold. A save that fails or rolls back leaves at most a blob nobody refers
/// to, which collection removes after `assetGraceSeconds`.
extension Engine {
    /// Saves the bytes of every new asset (`Asset(fileURL:)`, `Asset(data:)`) the records hold,
    /// outside the write lock (hashing and flushing 15 MiB inside it would hold every writer up).
    /// What each became is kept for the saves (`ingestedAssets`); an item whose bytes could
    /// not be saved fails with the reason, by index.
    func ingestAssets(_ records: [Record]) -> [Int: ShareFlowError] {
        var failures: [Int: ShareFlowError] = [:]
        for (i, record) in records.enumerated() {
            for value in record.fields.values where value.holdsAsset {
                _ = value.mappingAssets { asset in
                    guard failures[i] == nil, ingestedAssets[asset.content] == nil else { return asset }
                    do {
                        ingestedAssets[asset.content] = try ingest(asset)
                    } catch {
                        failures[i] = Engine.assetFailure(error, item: "record \(Naming.printable(record.recordID.recordName))")
                    }
                    return asset
                }
            }
        }
        return failures
    }

    /// The bytes of a new asset saved in the store; nil for any other asset.
    private func ingest(_ asset: Asset) throws -> AssetBlobs.Saved? {
        switch asset.content {
        case .data(let data): return try assets.put(data, maxBytes: options.assetMaxBytes)
        case .file(let url): return try assets.put(contentsOf: url.path, maxBytes: options.assetMaxBytes)
        default: return nil
        }
    }

    /// An asset's bytes that could not be saved, as the item's error: too large is the
    /// caller's (`limitExceeded`); a file it named that cannot be read is its own; a store that
    /// cannot write is an outage for the operator.
    static func assetFailure(_ error: Error, item: String) -> ShareFlowError {
        guard let failure = error as? AssetBlobs.Failure else { return ShareFlowError.wrap(error) }
        if failure.tooLarge { return ShareFlowError(.limitExceeded, "\(item): \(failure.description) (SPEC §19 A2)") }
        if failure.isCallersFile { return ShareFlowError.invalid("\(item): \(failure.description)") }
        return ShareFlowError(.serviceUnavailable, "\(item): the asset's bytes cannot be saved: \(failure.description)").forOperator()
    }

    /// The fields a save writes, each asset value in them made the content the store keeps:
    /// new bytes as ingested, a receipt redeemed, a checksum sent back only where the record
    /// holds those bytes already, a saved asset only where the store holds its bytes.
    /// Values the save does not change are not looked at.
    func resolveAssets(
        _ fields: [String: FieldValue],
        existing: [String: FieldValue]?,
        record: RecordID,
        in database: CloudDatabase,
        caller: Account,
        item: String,
        db: StoreTransaction
    ) throws -> [String: FieldValue] {
        var resolved = fields
        for (key, value) in fields where value.holdsAsset && value != existing?[key] {
            let held = existing?[key]?.storedAssets ?? [:]
            resolved[key] = try value.mappingAssets { asset in
                switch asset.content {
                case .stored(let sum, _):
                    if let size = held[sum] { return Asset(checksum: sum, size: size) }
                    // A saved asset from another record (Swift or Lua copies one): the store
                    // must hold the bytes now, in this transaction (collection runs in one).
                    guard let size = try assets.size(sum) else {
                        throw ShareFlowError.invalid("\(item): field '\(key)' names an asset whose bytes this store does not hold")
                    }
                    return Asset(checksum: sum, size: size)
                case .data, .file:
                    let saved: AssetBlobs.Saved
                    // Ingested before the lock, and still there now that it is held: collection
                    // removes blobs only under the same lock, so what is here now stays.
                    if let ingested = ingestedAssets[asset.content], try assets.size(ingested.checksum) == ingested.size {
                        saved = ingested
                    } else {
                        // Not seen before the transaction (an edit made inside it): saved now.
                        do {
                            saved = try ingest(asset)!
                        } catch {
                            throw Engine.assetFailure(error, item: item)
                        }
                    }
                    return Asset(checksum: saved.checksum, size: saved.size)
                case .claimed(let sum, _):
                    guard let size = held[sum] else {
                        throw ShareFlowError.invalid(
                            "\(item): field '\(key)' names an asset by its checksum alone; upload it (assets/upload) and save its receipt (SPEC §19 A3)"
                        )
                    }
                    return Asset(checksum: sum, size: size)
                case .receipt(let receipt):
                    let saved = try redeemAssetReceipt(receipt, field: key, record: record, in: database, caller: caller, item: item, db: db)
                    return Asset(checksum: saved.checksum, size: saved.size)
                }
            }
        }
        return resolved
    }

    /// The record's fields, each asset able to read its bytes from this store.
    func sourcingAssets(_ fields: [String: FieldValue]) -> [String: FieldValue] {
        let source = assets
        return fields.mapValues { value in
            guard value.holdsAsset else { return value }
            return value.mappingAssets { asset in
                var a = asset
                a.source = source
                return a
            }
        }
    }
}

// MARK: Receipts (SPEC §19 A3)

extension Engine {
    /// The bytes an upload's receipt stands for, the receipt used up: only by the account it
    /// was handed to, in the container, environment and database it was asked in, for the
    /// field (and record, and zone) the upload named, once, before it expires. A receipt this
    /// caller was not given reads as one that does not exist.
    func redeemAssetReceipt(
        _ receipt: String,
        field: String,
        record: RecordID,
        in database: CloudDatabase,
        caller: Account,
        item: String,
        db: StoreTransaction
    ) throws -> AssetBlobs.Saved {
        let now = EngineClock.seconds
        let what = "\(item): field '\(field)'"
        guard receipt.utf8.count <= 200, let upload = try db.assetReceipt(receiptHash: AssetReceipts.hash(receipt), now: now),
            upload.accountID == caller.id,
            upload.container == database.container.containerIdentifier,
            upload.environment == database.container.environment.rawValue,
            upload.scope == database.databaseScope.rawValue,
            let checksum = upload.checksum, let size = upload.size
        else {
            throw ShareFlowError.invalid(
                "\(what) holds an asset receipt this account was not given, or one used or expired; upload the file again (SPEC §19 A3)"
            )
        }
        if let named = upload.fieldName, named != field {
            throw ShareFlowError.invalid(
                "\(what) holds the receipt of an upload for field '\(named)'; save it there, or upload for this field (SPEC §19 A3)"
            )
        }
        if let named = upload.recordName, named != record.recordName {
            throw ShareFlowError.invalid("\(what) holds the receipt of an upload for record \(Naming.printable(named)) (SPEC §19 A3)")
        }
        if let zone = upload.zoneName, zone != record.zoneID.zoneName {
            throw ShareFlowError.invalid("\(what) holds the receipt of an upload for zone \(zone) (SPEC §19 A3)")
        }
        // Collection keeps an unexpired receipt's bytes; a store that lost them is the operator's.
        guard try assets.size(checksum) == size else {
            throw ShareFlowError(.serviceUnavailable, "\(what): the uploaded bytes \(checksum) are missing from \(store.path)'s assets").forOperator()
        }
        guard try db.useAssetUpload(id: upload.id) else {
            throw ShareFlowError.invalid("\(what) holds an asset receipt used by another save (SPEC §19 A3)")
        }
        return AssetBlobs.Saved(checksum: checksum, size: size)
    }
}

/// How upload secrets and receipts are made and kept: 32 random bytes, base64url; the store
/// keeps only their SHA-256, so its rows cannot be replayed as URLs or receipts.
package enum AssetReceipts {
    /// A new secret or receipt.
    package static func make() -> String { Base64URL.encode(RandomIdentifier.bytes(32)) }
    /// What the store keeps of one.
    package static func hash(_ secret: String) -> String {
        AssetBlobs.hex(SHA256.hash(data: Data(secret.utf8)))
    }
}
