import Foundation

/// Apple's upload protocol (SPEC §19 A3), the engine's half: `assets/upload` reserves one
/// single-use URL per token (good for 15 minutes); a POST of the bytes to it gives a receipt
/// (good for `assetGraceSeconds`) that one save of the caller's redeems (`redeemAssetReceipt`);
/// `assets/rereference` hands out receipts for assets the caller may read.
///
/// ```swift
/// let slots = try engine.reserveAssetUploads([.init(recordName: "r1", fieldName: "photo")], zoneName: nil, in: db)
/// // the client POSTs its bytes to <publicURL>/assets/1/upload/<slots[0].secret>
/// ```
extension Engine {
    /// One token of `assets/upload`: the field (and record, and type) the bytes are for.
    package struct AssetUploadRequest: Sendable {
        package var recordType: String?
        package var recordName: String?
        package var fieldName: String
        package init(recordType: String? = nil, recordName: String? = nil, fieldName: String) {
            self.recordType = recordType
            self.recordName = recordName
            self.fieldName = fieldName
        }
    }

    /// A reserved upload: the record name (made when none was given: clients expect one back),
    /// the field, and the secret its URL carries.
    package struct AssetUploadSlot: Sendable {
        package let recordName: String
        package let fieldName: String
        package let secret: String
    }

    /// How long an upload URL waits for its bytes: Apple's 15 minutes.
    package static let assetUploadSeconds: Double = 15 * 60
    /// The most tokens one `assets/upload` reserves (R22's items per request, halved).
    package static let maxAssetUploadTokens = 200
    /// The most uploads one account holds open at once (reserved or uploaded, not yet saved
    /// nor expired): what a client asking in a loop can make the store keep.
    package static let maxOpenAssetUploads = 1000

    /// Reserves an upload for each of `requests`, in order, for the signed-in caller of `database`.
    package func reserveAssetUploads(_ requests: [AssetUploadRequest], zoneName: String?, in database: CloudDatabase) throws -> [AssetUploadSlot] {
        try Engine.requireSignedIn(database)
        guard requests.count <= Engine.maxAssetUploadTokens else {
            throw ShareFlowError(.limitExceeded, "assets/upload takes at most \(Engine.maxAssetUploadTokens) tokens; this one has \(requests.count)")
        }
        if let zoneName { try Naming.check(text: zoneName, "zone name") }
        for (n, r) in requests.enumerated() {
            do {
                try Naming.check(fieldKey: r.fieldName)
                if let name = r.recordName { try Naming.check(recordName: name) }
                if let type = r.recordType { try Naming.check(recordType: type) }
            } catch let e as ShareFlowError {
                throw ShareFlowError.invalid("tokens[\(n)]: \(e.message)")
            }
        }
        let now = EngineClock.seconds
        let account = database.container.session.accountID
        return try transaction(scope: .zones([])) { db in
            // The account's expired ones go first (collection's pass comes only now and then).
            try db.pruneAssetUploads(account: account, expiredAt: now, limit: 2 * Engine.maxAssetUploadTokens)
            let open = try db.openAssetUploads(account: account, now: now).count
            guard open + requests.count <= Engine.maxOpenAssetUploads else {
                throw ShareFlowError(
                    .limitExceeded,
                    "this account has \(open) uploads open (reserved, or uploaded and not saved); at most \(Engine.maxOpenAssetUploads) are: save or let them expire (15 minutes) first"
                )
            }
            return try requests.map { r in
                let secret = AssetReceipts.make()
                var row = Engine.assetUploadRow(secret: secret, in: database, now: now, expiresAt: now + Engine.assetUploadSeconds)
                (row.zoneName, row.recordName, row.fieldName) = (zoneName, r.recordName, r.fieldName)
                try db.insertAssetUpload(row)
                return AssetUploadSlot(recordName: r.recordName ?? RandomIdentifier.uuidString(), fieldName: r.fieldName, secret: secret)
            }
        }
    }

    /// An upload URL's secret's upload still waiting for its bytes (read before the bytes
    /// are: a URL that leads nowhere costs the server no body): its account, and the bytes the
    /// account has uploaded and not yet saved (`assetMaxPendingBytes` bounds them); nil for none.
    package func pendingAssetUpload(secret: String) throws -> (account: Int64, waitingBytes: Int64)? {
        guard secret.utf8.count <= 200 else { return nil }
        let now = EngineClock.seconds
        return try reading { db in
            guard let upload = try db.pendingAssetUpload(secretHash: AssetReceipts.hash(secret), now: now) else { return nil }
            return (upload.accountID, try db.openAssetUploads(account: upload.accountID, now: now).bytes)
        }
    }

    /// The bytes of the upload `secret` names, saved in the store already (`saved`): the
    /// receipt a save redeems, or `unknownItem` when the URL was used meanwhile or expired.
    package func completeAssetUpload(secret: String, saved: AssetBlobs.Saved) throws -> String {
        let now = EngineClock.seconds
        let receipt = AssetReceipts.make()
        let done = try transaction(scope: .zones([])) { db -> Bool in
            guard let upload = try db.pendingAssetUpload(secretHash: AssetReceipts.hash(secret), now: now) else { return false }
            // Checked again as the bytes are taken (another node's uploads count too).
            let waiting = try db.openAssetUploads(account: upload.accountID, now: now).bytes
            guard waiting + saved.size <= options.assetMaxPendingBytes else {
                throw ShareFlowError(
                    .quotaExceeded,
                    "this account has \(waiting) bytes uploaded and not yet saved; at most \(options.assetMaxPendingBytes) wait at once: save them, or let their receipts expire"
                )
            }
            return try db.completeAssetUpload(
                id: upload.id,
                checksum: saved.checksum,
                size: saved.size,
                receiptHash: AssetReceipts.hash(receipt),
                expiresAt: now + options.assetGraceSeconds,
                now: now
            )
        }
        guard done else { throw ShareFlowError.unknown("no such upload") }
        return receipt
    }

    /// An upload's row for the signed-in caller of `database`, its URL's secret kept as its hash.
    private static func assetUploadRow(secret: String, in database: CloudDatabase, now: Double, expiresAt: Double) -> AssetUploadRow {
        AssetUploadRow(
            secretHash: AssetReceipts.hash(secret),
            accountID: database.container.session.accountID,
            container: database.container.containerIdentifier,
            environment: database.container.environment.rawValue,
            scope: database.databaseScope.rawValue,
            createdAt: now,
            expiresAt: expiresAt
        )
    }

    /// `assets/rereference`: for each record and field the caller may read (R12, R15, R37;
    /// others are `unknownItem`), a receipt for the asset it holds, to save in another record.
    package func rereferenceAssets(
        _ items: [(record: RecordID, field: String)],
        in database: CloudDatabase
    ) throws -> [Result<(receipt: String, checksum: String, size: Int64), ShareFlowError>] {
        try Engine.requireSignedIn(database)
        guard items.count <= Engine.maxAssetUploadTokens else {
            throw ShareFlowError(
                .limitExceeded,
                "assets/rereference takes at most \(Engine.maxAssetUploadTokens) assets; this one has \(items.count)"
            )
        }
        let now = EngineClock.seconds
        return items.map { item in
            do {
                let record = try fetchRecord(item.record, in: database)
                guard case .asset(let asset)? = record.fields[item.field], case .stored(let sum, let size) = asset.content else {
                    throw ShareFlowError.invalid("field '\(item.field)' of record \(Naming.printable(item.record.recordName)) holds no asset")
                }
                let receipt = AssetReceipts.make()
                // Its URL's secret is never handed out: the row is uploaded already.
                var row = Engine.assetUploadRow(secret: AssetReceipts.make(), in: database, now: now, expiresAt: now + options.assetGraceSeconds)
                (row.checksum, row.size) = (sum, size)
                try transaction(scope: .zones([])) { db in try db.insertAssetUpload(row, receiptHash: AssetReceipts.hash(receipt)) }
                return .success((receipt, sum, size))
            } catch {
                return .failure(ShareFlowError.wrap(error, store: store))
            }
        }
    }
}
