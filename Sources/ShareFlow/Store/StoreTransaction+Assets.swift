import Foundation

/// Asset uploads and, in a driver's database, assets' bytes (SPEC §19 A3–A4).
extension StoreTransaction {
    // MARK: Uploads

    /// Records an upload: a reservation (`assets/upload`: its URL's secret known only by its
    /// hash, no bytes yet), or a receipt for bytes kept already (`assets/rereference`, with
    /// `receiptHash` and the row's checksum and size).
    package func insertAssetUpload(_ upload: AssetUploadRow, receiptHash: String? = nil) throws {
        try run(
            """
            INSERT INTO asset_upload (secretHash, receiptHash, accountID, container, environment, scope, zoneName, recordName, fieldName,
                checksum, size, createdAt, expiresAt)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                upload.secretHash, receiptHash, upload.accountID, upload.container, upload.environment, upload.scope, upload.zoneName,
                upload.recordName, upload.fieldName, upload.checksum, upload.size, upload.createdAt, upload.expiresAt,
            ]
        )
    }

    /// The upload reserved under the secret whose hash is `secretHash`, still waiting for its
    /// bytes and not expired at `now`; nil otherwise.
    package func pendingAssetUpload(secretHash: String, now: Double) throws -> AssetUploadRow? {
        try fetchOne(
            "SELECT \(StoreTransaction.assetUploadColumns) FROM asset_upload WHERE secretHash = ? AND checksum IS NULL AND expiresAt > ?",
            [secretHash, now],
            table: "asset_upload",
            keyAt: 0,
            StoreTransaction.assetUploadRow
        )
    }

    /// Records the bytes of the pending upload `id` and its receipt's hash, the receipt good
    /// until `expiresAt`; false when the upload is no longer pending (used, or expired at `now`).
    package func completeAssetUpload(id: Int64, checksum: String, size: Int64, receiptHash: String, expiresAt: Double, now: Double) throws -> Bool {
        try run(
            """
            UPDATE asset_upload SET checksum = ?, size = ?, receiptHash = ?, expiresAt = ?
            WHERE id = ? AND checksum IS NULL AND expiresAt > ?
            """,
            [checksum, size, receiptHash, expiresAt, id, now]
        ) == 1
    }

    /// The uploaded, unexpired upload whose receipt hashes to `receiptHash`.
    package func assetReceipt(receiptHash: String, now: Double) throws -> AssetUploadRow? {
        try fetchOne(
            "SELECT \(StoreTransaction.assetUploadColumns) FROM asset_upload WHERE receiptHash = ? AND checksum IS NOT NULL AND expiresAt > ?",
            [receiptHash, now],
            table: "asset_upload",
            keyAt: 0,
            StoreTransaction.assetUploadRow
        )
    }

    /// Uses the upload `id` up; false when another save used it first.
    package func useAssetUpload(id: Int64) throws -> Bool {
        try run("DELETE FROM asset_upload WHERE id = ?", [id]) == 1
    }

    /// An account's uploads still good at `now`: how many, and the bytes of those uploaded
    /// and waiting for their save.
    package func openAssetUploads(account: Int64, now: Double) throws -> (count: Int, bytes: Int64) {
        try fetchOne(
            "SELECT COUNT(*), CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM asset_upload WHERE accountID = ? AND expiresAt > ?",
            [account, now],
            table: "asset_upload",
            keyAt: 0
        ) { (Int(try $0.integer(0, "COUNT")), try $0.integer(1, "SUM")) } ?? (0, 0)
    }

    /// Removes an account's uploads expired at `now`, at most `limit`.
    package func pruneAssetUploads(account: Int64, expiredAt now: Double, limit: Int) throws {
        try run(
            "DELETE FROM asset_upload WHERE id IN (SELECT id FROM asset_upload WHERE accountID = ? AND expiresAt <= ? LIMIT ?)",
            [account, now, Int64(limit)]
        )
    }

    /// Removes uploads expired at `now`, at most `limit`; how many.
    @discardableResult
    package func pruneAssetUploads(expiredAt now: Double, limit: Int) throws -> Int {
        try run(
            "DELETE FROM asset_upload WHERE id IN (SELECT id FROM asset_upload WHERE expiresAt <= ? ORDER BY expiresAt LIMIT ?)",
            [now, Int64(limit)]
        )
    }

    /// The checksums of uploads still good at `now`: their bytes are kept for the save to come.
    package func pendingAssetChecksums(now: Double) throws -> Set<String> {
        Set(
            try fetchAll(
                "SELECT checksum FROM asset_upload WHERE checksum IS NOT NULL AND expiresAt > ?",
                [now],
                table: "asset_upload",
                keyAt: 0
            ) { try $0.text(0, "checksum") }
        )
    }

    /// Every record's stored fields that may hold an asset (the stored form's `"f":"` appears
    /// in no other value: a quote inside a string is escaped), after row `after`, at most
    /// `limit`: (row ID, fields).
    package func recordsHoldingAssets(after: Int64, limit: Int) throws -> [(id: Int64, fields: [String: FieldValue])] {
        try fetchAll(
            // LIKE, on both stores; `"F":"` (SQLite's LIKE ignores case) is in no value either.
            #"SELECT id, fields FROM record WHERE id > ? AND fields LIKE '%"f":"%' ORDER BY id LIMIT ?"#,
            [after, Int64(limit)],
            table: "record",
            keyAt: 0
        ) { (try $0.integer(0, "id"), try $0.fields(1, "fields")) }
    }

    static let assetUploadColumns =
        "id, secretHash, accountID, container, environment, scope, zoneName, recordName, fieldName, checksum, size, createdAt, expiresAt"

    static func assetUploadRow(_ row: StoredRow) throws -> AssetUploadRow {
        AssetUploadRow(
            id: try row.integer(0, "id"),
            secretHash: try row.text(1, "secretHash"),
            accountID: try row.integer(2, "accountID"),
            container: try row.text(3, "container"),
            environment: try row.text(4, "environment"),
            scope: try row.text(5, "scope"),
            zoneName: try row.optionalText(6, "zoneName"),
            recordName: try row.optionalText(7, "recordName"),
            fieldName: try row.optionalText(8, "fieldName"),
            checksum: try row.optionalText(9, "checksum"),
            size: try row.optionalInteger(10, "size"),
            createdAt: try row.real(11, "createdAt"),
            expiresAt: try row.real(12, "expiresAt")
        )
    }

    // MARK: Blobs in a driver's database

    /// Saves a blob's chunks, unless the blob is kept already (then only its age is renewed,
    /// as a file's rename renews it). Its own transaction, committed before any record names it.
    package func putAssetBlob(checksum: String, size: Int64, chunks: [Data], at now: Double) throws {
        let inserted = try run(
            "INSERT INTO asset_blob (checksum, size, chunks, createdAt) VALUES (?, ?, ?, ?) ON CONFLICT (checksum) DO NOTHING",
            [checksum, size, Int64(chunks.count), now]
        )
        guard inserted == 1 else {
            try run("UPDATE asset_blob SET createdAt = ? WHERE checksum = ?", [now, checksum])
            return
        }
        for (n, chunk) in chunks.enumerated() {
            try run("INSERT INTO asset_chunk (checksum, n, data) VALUES (?, ?, ?)", [checksum, Int64(n), chunk.base64EncodedString()])
        }
    }

    /// A blob's size and chunk count, or nil when it is not kept.
    package func assetBlob(checksum: String) throws -> (size: Int64, chunks: Int)? {
        try fetchOne("SELECT size, chunks FROM asset_blob WHERE checksum = ?", [checksum], table: "asset_blob", keyAt: 0) {
            (try $0.integer(0, "size"), Int(try $0.integer(1, "chunks")))
        }
    }

    /// Chunks `range` of a blob, in order.
    package func assetChunks(checksum: String, range: Range<Int>) throws -> [Data] {
        try fetchAll(
            "SELECT data FROM asset_chunk WHERE checksum = ? AND n >= ? AND n < ? ORDER BY n",
            [checksum, Int64(range.lowerBound), Int64(range.upperBound)],
            table: "asset_chunk",
            keyAt: 0
        ) { row in
            guard let data = Data(base64Encoded: try row.text(0, "data")) else { throw row.damaged("data", "not base64") }
            return data
        }
    }

    /// Blobs saved before `cutoff`, by checksum, at most `limit`.
    package func assetBlobs(savedBefore cutoff: Double, limit: Int) throws -> [String] {
        try fetchAll(
            "SELECT checksum FROM asset_blob WHERE createdAt < ? ORDER BY createdAt LIMIT ?",
            [cutoff, Int64(limit)],
            table: "asset_blob",
            keyAt: 0
        ) { try $0.text(0, "checksum") }
    }

    /// Removes a blob and its chunks.
    package func removeAssetBlob(checksum: String) throws {
        try run("DELETE FROM asset_blob WHERE checksum = ?", [checksum])
    }
}

/// One row of `asset_upload`: a reservation, or the receipt of its bytes.
package struct AssetUploadRow: Sendable {
    package var id: Int64 = 0
    package var secretHash: String
    package var accountID: Int64
    package var container: String
    package var environment: String
    package var scope: String
    package var zoneName: String?
    /// The record the upload named, if it named one (the receipt is then for it alone).
    package var recordName: String?
    /// The field the upload named; nil for a rereferenced asset (any field).
    package var fieldName: String?
    package var checksum: String?
    package var size: Int64?
    package var createdAt: Double
    package var expiresAt: Double
}
