import Crypto
import Foundation

/// Download URLs for assets (SPEC §19 A3): each names one field of one record as one account
/// read it, sealed with the store's key (AES-GCM; the same on every node) so it says nothing
/// of the record and cannot be altered, good for `assetURLSeconds`. A download reads the
/// record again as that account: a URL outlives neither the account's access (R12, R15, R37)
/// nor the record, nor the field's content.
///
/// ```swift
/// let token = try engine.assetDownloadToken(for: photo, field: "photo", record: trip.recordID, in: db)
/// let found = try engine.assetDownload(token)          // or unknownItem
/// ```
extension Engine {
    /// What a download URL stands for.
    package struct AssetDownloadGrant: Codable, Equatable, Sendable {
        var a: Int64  // the reader's account
        var c: String  // container
        var e: String  // environment
        var s: String  // database scope
        var z: String  // zone name
        var o: String  // zone owner
        var r: String  // record name
        var f: String  // field key
        var h: String  // checksum
        var x: Double  // expires at
    }

    /// An asset a download found: its bytes' name and size, and where to read them.
    package struct AssetDownload: Sendable {
        package let checksum: String
        package let size: Int64
        package let storage: any AssetStorage
    }

    /// Who a download URL is for: the signed-in caller of a database.
    package struct AssetReader: Sendable {
        let accountID: Int64
        let container: String
        let environment: CloudEnvironment
        let scope: DatabaseScope
        package init(accountID: Int64, container: String, environment: CloudEnvironment, scope: DatabaseScope) {
            self.accountID = accountID
            self.container = container
            self.environment = environment
            self.scope = scope
        }
        package init(_ database: CloudDatabase) {
            accountID = database.container.session.accountID
            container = database.container.containerIdentifier
            environment = database.container.environment
            scope = database.databaseScope
        }
    }

    /// The token of a download URL for `checksum`, held by field `field` of `record`, as
    /// `reader` read it.
    package func assetDownloadToken(checksum: String, field: String, record: RecordID, for reader: AssetReader) throws -> String {
        let grant = AssetDownloadGrant(
            a: reader.accountID,
            c: reader.container,
            e: reader.environment.rawValue,
            s: reader.scope.rawValue,
            z: record.zoneID.zoneName,
            o: record.zoneID.ownerName,
            r: record.recordName,
            f: field,
            h: checksum,
            x: (EngineClock.seconds + options.assetURLSeconds).rounded(.up)
        )
        let plain = Array(try JSONEncoder().encode(grant))
        guard let box = try? AES.GCM.seal(plain, using: try assetURLKey()), let combined = box.combined else {
            throw ShareFlowError(.serviceUnavailable, "a download URL could not be sealed").forOperator()
        }
        return Base64URL.encode([1] + Array(combined))
    }

    /// The asset a download token names, read again as its account now; `unknownItem` for a
    /// token this store did not make, one expired, or one whose record, access or content is
    /// gone (all alike: a URL tells a stranger nothing).
    package func assetDownload(_ token: String) throws -> AssetDownload {
        let gone = ShareFlowError.unknown("no such asset")
        guard token.utf8.count <= 4096, let bytes = Base64URL.decode(token), bytes.count > 29, bytes[0] == 1,
            let box = try? AES.GCM.SealedBox(combined: bytes[1...]),
            let plain = try? AES.GCM.open(box, using: try assetURLKey()),
            let grant = try? JSONDecoder().decode(AssetDownloadGrant.self, from: plain),
            grant.x > EngineClock.seconds,
            let environment = CloudEnvironment(rawValue: grant.e), let scope = DatabaseScope(rawValue: grant.s),
            // The public reader (R30) reads the public database only.
            let account = grant.a == Account.publicReader.id ? (scope == .public ? Account.publicReader : nil) : try accounts.account(id: grant.a)
        else { throw gone }
        let database = try session(for: account).container(grant.c, environment: environment).database(scope)
        let record: Record
        do {
            record = try fetchRecord(RecordID(recordName: grant.r, zoneID: RecordZoneID(zoneName: grant.z, ownerName: grant.o)), in: database)
        } catch let e as ShareFlowError where !e.isOutage {
            throw gone
        }
        guard let size = record.fields[grant.f]?.storedAssets[grant.h] else { throw gone }
        return AssetDownload(checksum: grant.h, size: size, storage: assets)
    }

    /// The key download URLs are sealed with: derived from the store's change-token key, so
    /// every node of one database makes and opens the same URLs.
    private func assetURLKey() throws -> SymmetricKey {
        if let key = assetKeys.get() { return SymmetricKey(data: key) }
        let root = SymmetricKey(data: try reading { try $0.changeTokenKey() })
        let key = SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: Array("shareflow asset url: seal".utf8), using: root)))
        assetKeys.set(key.withUnsafeBytes { Array($0) })
        return key
    }
}

/// The engine's derived key for download URLs, once read.
final class AssetURLKeys: Sendable {
    private let key = Locked<[UInt8]?>(nil)
    func get() -> [UInt8]? { key.withLock { $0 } }
    func set(_ new: [UInt8]) { key.withLock { $0 = new } }
}
