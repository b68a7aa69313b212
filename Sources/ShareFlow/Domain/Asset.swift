import Foundation

/// A file a record holds (SPEC §19 A2), as CloudKit's `CKAsset`: saved with its record, outside
/// the record's 1 MB of fields (R22), at most `Engine.Options.assetMaxBytes` bytes.
///
/// ```swift
/// trip["photo"] = .asset(Asset(fileURL: URL(fileURLWithPath: "lisbon.jpg")))
/// _ = try db.modifyRecords(saving: [trip])
/// let again = try db.fetchRecord(trip.recordID)
/// if case .asset(let photo)? = again["photo"] { print(photo.fileURL!.path, try photo.read().count) }
/// ```
///
/// A new asset names its bytes (a file, or bytes in memory); the save copies them into the
/// store, and from then on the asset is its content's SHA-256 and size. Two assets are equal
/// when they name the same bytes the same way: a saved asset equals the same content fetched
/// again, wherever its bytes are read from.
public struct Asset: Hashable, Sendable, CustomStringConvertible {
    /// What the asset holds, or where its bytes come from.
    package enum Content: Hashable, Sendable {
        /// Bytes in a file, read when the record is saved (Swift's `Asset(fileURL:)`, a trusted
        /// script's `sf.Asset{ path = }`).
        case file(URL)
        /// Bytes in memory (`sf.Asset{ data = }`).
        case data(Data)
        /// An upload's receipt (`assets/upload`, SPEC §19 A3), redeemed by the save.
        case receipt(String)
        /// A checksum a client sent back without a receipt: what it read of this record's field,
        /// accepted only where the record holds that content already (a client cannot attach
        /// bytes by naming their checksum).
        case claimed(checksum: String, size: Int64?)
        /// Saved: the content's SHA-256 in lower-case hex and its size.
        case stored(checksum: String, size: Int64)
    }

    package let content: Content
    /// Where a saved asset's bytes are read from: set on the assets of records the engine hands
    /// out; not part of equality.
    package var source: (any AssetStorage)?

    /// An asset holding the bytes of the file at `fileURL`, read when its record is saved.
    public init(fileURL: URL) { content = .file(fileURL) }

    /// An asset holding `data`.
    public init(data: Data) { content = .data(data) }

    package init(_ content: Content, source: (any AssetStorage)? = nil) {
        self.content = content
        self.source = source
    }

    /// A saved asset's content, as the store keeps it.
    package init(checksum: String, size: Int64) { content = .stored(checksum: checksum, size: size) }

    /// The file holding the bytes: the file given, or, once saved and fetched, the store's copy
    /// (a saved asset's file is never written to; read it, do not change it). Nil for bytes
    /// given in memory, or where the store no longer has the bytes.
    public var fileURL: URL? {
        switch content {
        case .file(let url): return url
        case .stored(let checksum, _): return source?.fileURL(checksum)
        case .data, .receipt, .claimed: return nil
        }
    }

    /// The SHA-256 of the bytes in lower-case hex, once saved.
    public var checksum: String? {
        switch content {
        case .stored(let sum, _), .claimed(let sum, _): sum
        default: nil
        }
    }

    /// The number of bytes, where known without reading a file.
    public var size: Int64? {
        switch content {
        case .stored(_, let n): n
        case .claimed(_, let n): n
        case .data(let d): Int64(d.count)
        default: nil
        }
    }

    /// Whether the bytes are in the store already (fetched, or returned by a save).
    public var isSaved: Bool { if case .stored = content { true } else { false } }

    /// The bytes, at most `maxBytes` of them (nil: no bound): past it, `limitExceeded`, and
    /// nothing past the bound is read.
    public func read(maxBytes: Int64? = nil) throws -> Data {
        let bound = maxBytes ?? Int64.max
        func tooLarge(_ n: Int64) -> ShareFlowError {
            ShareFlowError(.limitExceeded, "the asset holds \(n) bytes; at most \(bound) were asked for")
        }
        switch content {
        case .data(let d):
            guard Int64(d.count) <= bound else { throw tooLarge(Int64(d.count)) }
            return d
        case .file(let url):
            do {
                return try BoundedFile.read(url.path, maxBytes: Int(min(bound, 1 << 40)))
            } catch let failure as BoundedFile.Failure {
                throw ShareFlowError(failure.tooLarge ? .limitExceeded : .invalidArguments, failure.description)
            }
        case .stored(let checksum, let size):
            guard size <= bound else { throw tooLarge(size) }
            guard let source else {
                throw ShareFlowError(.invalidArguments, "the asset \(checksum.prefix(12))… was not read from a store; fetch its record to read it")
            }
            return try source.read(checksum, range: nil)
        case .receipt, .claimed:
            throw ShareFlowError(.invalidArguments, "the asset is an upload's receipt, read once its record is saved and fetched")
        }
    }

    /// Whether two assets name the same bytes the same way (where their bytes are read from
    /// does not count).
    public static func == (a: Asset, b: Asset) -> Bool { a.content == b.content }
    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) { hasher.combine(content) }

    /// `Asset(1a2b3c4d5e6f…, 12 bytes)` once saved; `Asset(file: path)` or `Asset(12 bytes)` before.
    public var description: String {
        switch content {
        case .stored(let sum, let size): "Asset(\(sum.prefix(12))…, \(size) bytes)"
        case .claimed(let sum, _): "Asset(\(sum.prefix(12))…, claimed)"
        case .file(let url): "Asset(file: \(url.path))"
        case .data(let d): "Asset(\(d.count) bytes, unsaved)"
        case .receipt: "Asset(upload receipt)"
        }
    }
}

/// Where a store keeps assets' bytes (SPEC §19 A4): a folder of files beside an SQLite store
/// (`AssetBlobs`), the database of a driver's. Blobs are named by their content's SHA-256.
package protocol AssetStorage: AnyObject, Sendable {
    /// Saves `data` (at most `maxBytes`), durably, before anything refers to it.
    func put(_ data: Data, maxBytes: Int64) throws -> AssetBlobs.Saved
    /// Saves the bytes of the file at `path`, at most `maxBytes`.
    func put(contentsOf path: String, maxBytes: Int64) throws -> AssetBlobs.Saved
    /// Whether the blob named `checksum` is kept, and its size.
    func size(_ checksum: String) throws -> Int64?
    /// A file holding the blob's bytes, or nil when there is none.
    func fileURL(_ checksum: String) -> URL?
    /// The blob's bytes (in `range` only, when given).
    func read(_ checksum: String, range: Range<Int64>?) throws -> Data
    /// A new temporary file an upload's body is written to before it is saved (`put(contentsOf:)`),
    /// where the store's own blobs are (the same file system, so the copy is cheap): removed by
    /// the caller; one left by a killed process goes with the next collection.
    func temporaryFile() throws -> URL
    /// Whether the bytes are in the store's database, read and written through the engine's
    /// connections (on its threads), rather than files any thread reads.
    var isInDatabase: Bool { get }
}
