import Crypto
import Foundation

/// Assets' bytes in a driver's database (SPEC §19 A4: PostgreSQL), so every node serves every
/// blob: chunks of 1 MiB in `asset_chunk` under their blob's row in `asset_blob`, each saved
/// in a committed write of its own before any record names it. Reads and writes go through
/// the engine (`reading`, `transaction`), which puts them on the thread's own connection: a
/// write on the engine's thread, a read beside it on a reading thread's.
///
/// A saved asset's `fileURL` is a copy in a folder of the process's own (content-addressed,
/// so never stale), made on first ask.
final class DatabaseAssets: AssetStorage, @unchecked Sendable {
    private unowned let engine: Engine
    private let cache: AssetBlobs
    static let chunkBytes = 1 << 20

    init(engine: Engine) {
        self.engine = engine
        cache = AssetBlobs(
            folder: FileManager.default.temporaryDirectory.appendingPathComponent("shareflow-assets-\(ProcessInfo.processInfo.processIdentifier)")
        )
    }

    var isInDatabase: Bool { true }

    /// `data` in the chunks a blob's rows hold.
    static func chunks(of data: Data) -> [Data] {
        stride(from: 0, to: data.count, by: chunkBytes).map { data.subdata(in: $0..<min($0 + chunkBytes, data.count)) }
    }

    func temporaryFile() throws -> URL { try cache.temporaryFile() }

    func put(_ data: Data, maxBytes: Int64) throws -> AssetBlobs.Saved {
        guard Int64(data.count) <= maxBytes else {
            throw AssetBlobs.Failure("the asset is \(data.count) bytes; at most \(maxBytes) are kept", tooLarge: true)
        }
        let checksum = AssetBlobs.hex(SHA256.hash(data: data))
        let now = EngineClock.seconds
        try engine.transaction(scope: .zones([])) { db in
            try db.putAssetBlob(checksum: checksum, size: Int64(data.count), chunks: DatabaseAssets.chunks(of: data), at: now)
        }
        return AssetBlobs.Saved(checksum: checksum, size: Int64(data.count))
    }

    func put(contentsOf path: String, maxBytes: Int64) throws -> AssetBlobs.Saved {
        let data: Data
        do {
            data = try BoundedFile.read(path, maxBytes: Int(min(maxBytes, 1 << 40)))
        } catch let failure as BoundedFile.Failure {
            throw AssetBlobs.Failure(failure.description, tooLarge: failure.tooLarge, callersFile: !failure.tooLarge)
        }
        return try put(data, maxBytes: maxBytes)
    }

    func size(_ checksum: String) throws -> Int64? {
        guard AssetBlobs.isChecksum(checksum) else { return nil }
        return try engine.reading { try $0.assetBlob(checksum: checksum)?.size }
    }

    func fileURL(_ checksum: String) -> URL? {
        if let copy = cache.url(checksum) { return copy }
        guard let bytes = try? read(checksum, range: nil), let saved = try? cache.put(bytes, maxBytes: .max), saved.checksum == checksum
        else { return nil }
        return cache.url(checksum)
    }

    func read(_ checksum: String, range: Range<Int64>?) throws -> Data {
        try engine.reading { db in
            guard AssetBlobs.isChecksum(checksum), let blob = try db.assetBlob(checksum: checksum) else {
                throw AssetBlobs.Failure("the asset \(checksum.prefix(12))… is not in the store")
            }
            let wanted = range.map { max(0, min($0.lowerBound, blob.size))..<max(0, min($0.upperBound, blob.size)) } ?? 0..<blob.size
            guard !wanted.isEmpty else { return Data() }
            let per = Int64(DatabaseAssets.chunkBytes)
            let first = Int(wanted.lowerBound / per)
            let last = Int((wanted.upperBound - 1) / per)
            var data = Data()
            for chunk in try db.assetChunks(checksum: checksum, range: first..<(last + 1)) { data.append(chunk) }
            let skip = Int(wanted.lowerBound - Int64(first) * per)
            guard data.count >= skip + wanted.count else {
                throw AssetBlobs.Failure("the asset \(checksum.prefix(12))… is damaged: chunks are missing")
            }
            return data.subdata(in: skip..<(skip + Int(wanted.count)))
        }
    }
}
