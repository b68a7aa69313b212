import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where the bytes of assets live beside an SQLite store (SPEC §19 A4): a folder,
/// `<store>.assets/`, one file per distinct content, named by its SHA-256 in hex and sorted
/// into 256 subfolders by its first two digits (`ab/ab12…`). Content-addressed: the same bytes
/// saved twice are one file, and a name says what the file must hold.
///
/// A blob is made whole before anything can refer to it: written to a temporary file in the
/// folder, flushed to the disk (`fsync`), renamed into place and the rename flushed (the
/// subfolder's `fsync`); the record's transaction commits after. A crash in between leaves at
/// most a temporary file or a blob nobody refers to, which a later collection removes — never a
/// record pointing at missing bytes.
///
/// ```swift
/// let blobs = AssetBlobs(folder: URL(fileURLWithPath: "store.sqlite.assets"))
/// let saved = try blobs.put(Data("hello".utf8), maxBytes: 15 << 20)
/// let bytes = try Data(contentsOf: blobs.url(saved.checksum)!)
/// ```
package final class AssetBlobs: AssetStorage {
    /// The folder; made on the first `put`.
    package let folder: URL

    package init(folder: URL) { self.folder = folder }

    /// A blob saved: its content's SHA-256 (hex) and its size in bytes.
    package struct Saved: Hashable, Sendable {
        package let checksum: String
        package let size: Int64
    }

    /// Why a blob could not be saved or read: one line naming the file and the cause.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        /// True when the bytes were more than the bound (`limitExceeded` to a client).
        package let tooLarge: Bool
        /// True when the file the caller named could not be read (the caller's error, not the store's).
        package let isCallersFile: Bool
        init(_ description: String, tooLarge: Bool = false, callersFile: Bool = false) {
            self.description = description
            self.tooLarge = tooLarge
            self.isCallersFile = callersFile
        }
    }

    /// Saves `data`, at most `maxBytes` of it.
    package func put(_ data: Data, maxBytes: Int64) throws -> Saved {
        guard Int64(data.count) <= maxBytes else {
            throw Failure("the asset is \(data.count) bytes; at most \(maxBytes) are kept", tooLarge: true)
        }
        var offset = 0
        return try write {
            let n = min(AssetBlobs.chunkBytes, data.count - offset)
            defer { offset += n }
            return n == 0 ? nil : data.subdata(in: offset..<(offset + n))
        }
    }

    /// Saves the bytes of the file at `path`, at most `maxBytes` (read in chunks: a file past the
    /// bound is refused once the bound is passed, never read whole).
    package func put(contentsOf path: String, maxBytes: Int64) throws -> Saved {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("cannot open \(path) (\(String(cString: strerror(errno))))", callersFile: true) }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG {
            throw Failure("\(path) is not a regular file", callersFile: true)
        }
        var total: Int64 = 0
        return try write {
            var buffer = [UInt8](repeating: 0, count: AssetBlobs.chunkBytes)
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, AssetBlobs.chunkBytes) }
            guard n >= 0 else { throw Failure("cannot read \(path) (\(String(cString: strerror(errno))))", callersFile: true) }
            total += Int64(n)
            guard total <= maxBytes else { throw Failure("\(path) is more than \(maxBytes) bytes, the most an asset holds", tooLarge: true) }
            return n == 0 ? nil : Data(buffer[0..<n])
        }
    }

    /// The file holding the blob named `checksum`, or nil when there is none (or the name is
    /// not a SHA-256 in hex: a name never leads out of the folder).
    package func url(_ checksum: String) -> URL? {
        guard AssetBlobs.isChecksum(checksum) else { return nil }
        let file = path(of: checksum)
        return FileManager.default.fileExists(atPath: file.path) ? file : nil
    }

    /// The size of the blob named `checksum`, or nil when there is none.
    package func size(_ checksum: String) throws -> Int64? {
        guard AssetBlobs.isChecksum(checksum) else { return nil }
        var info = stat()
        guard stat(path(of: checksum).path, &info) == 0 else {
            if errno == ENOENT { return nil }
            throw Failure("cannot read the asset \(path(of: checksum).path) (\(String(cString: strerror(errno))))")
        }
        return Int64(info.st_size)
    }

    /// The blob's bytes, or those in `range` (clamped to the blob).
    package func read(_ checksum: String, range: Range<Int64>?) throws -> Data {
        guard AssetBlobs.isChecksum(checksum) else { throw Failure("\(checksum.prefix(80)) names no asset") }
        let file = path(of: checksum).path
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("cannot open the asset \(file) (\(String(cString: strerror(errno))))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failure("cannot read the asset \(file) (\(String(cString: strerror(errno))))") }
        let size = Int64(info.st_size)
        let wanted = range.map { max(0, min($0.lowerBound, size))..<max(0, min($0.upperBound, size)) } ?? 0..<size
        var data = Data(count: Int(wanted.count))
        var done = 0
        try data.withUnsafeMutableBytes { raw in
            while done < raw.count {
                let n = pread(fd, raw.baseAddress! + done, raw.count - done, off_t(wanted.lowerBound) + off_t(done))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    throw Failure("cannot read the asset \(file) (\(n == 0 ? "it is shorter than it was" : String(cString: strerror(errno))))")
                }
                done += n
            }
        }
        return data
    }

    package var isInDatabase: Bool { false }

    package func temporaryFile() throws -> URL {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw Failure("cannot make the asset folder \(folder.path) (\(AssetBlobs.reason(error)))")
        }
        return folder.appendingPathComponent(".incoming-\(UUID().uuidString)")
    }

    /// Bytes free on the folder's file system (nil where it cannot be told).
    package func freeBytes() -> Int64? {
        var info = statvfs()
        let probe = FileManager.default.fileExists(atPath: folder.path) ? folder.path : folder.deletingLastPathComponent().path
        guard statvfs(probe, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// The file of the blob named `checksum` (see `url`).
    package func fileURL(_ checksum: String) -> URL? { url(checksum) }

    /// When the blob named `checksum` was last put (seconds since 1970): a put of the same bytes
    /// renames a new file over it, so its age is that of its last save.
    package func modified(_ checksum: String) -> Double? {
        guard AssetBlobs.isChecksum(checksum) else { return nil }
        var info = stat()
        guard stat(path(of: checksum).path, &info) == 0 else { return nil }
        return Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
    }

    /// Removes the temporary files of writes that never finished (a crash, a kill) last
    /// touched before `cutoff`; how many.
    @discardableResult
    package func removeUnfinished(before cutoff: Double) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        var removed = 0
        for name in names where name.hasPrefix(".incoming-") {
            let file = folder.appendingPathComponent(name).path
            var info = stat()
            guard stat(file, &info) == 0, Double(info.st_mtim.tv_sec) < cutoff else { continue }
            if unlink(file) == 0 { removed += 1 }
        }
        return removed
    }

    /// Puts the blob named `checksum` into `other` too: a hard link where both folders are on
    /// one file system, else a copy (flushed like any put).
    package func carry(_ checksum: String, to other: AssetBlobs) throws {
        guard AssetBlobs.isChecksum(checksum) else { return }
        let target = other.path(of: checksum)
        if FileManager.default.fileExists(atPath: target.path) { return }
        try? FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        if link(path(of: checksum).path, target.path) == 0 { return }
        let saved = try other.put(contentsOf: path(of: checksum).path, maxBytes: .max)
        guard saved.checksum == checksum else { throw Failure("the asset \(path(of: checksum).path) holds other bytes than its name says") }
    }

    /// Every blob in the folder, by checksum (none when the folder was never made).
    package func checksums() throws -> [String] {
        guard FileManager.default.fileExists(atPath: folder.path) else { return [] }
        var found: [String] = []
        for sub in try FileManager.default.contentsOfDirectory(atPath: folder.path) where sub.count == 2 {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent(sub).path)) ?? []
            found += names.filter { AssetBlobs.isChecksum($0) && $0.hasPrefix(sub) }
        }
        return found.sorted()
    }

    /// Removes the blob named `checksum`; false when there was none.
    @discardableResult
    package func remove(_ checksum: String) -> Bool {
        guard AssetBlobs.isChecksum(checksum) else { return false }
        return unlink(path(of: checksum).path) == 0
    }

    /// A digest in lower-case hex: a blob's name, and how secrets are kept (`AssetReceipts`).
    package static func hex(_ digest: some Sequence<UInt8>) -> String { digest.map { String(format: "%02x", $0) }.joined() }

    /// Whether `text` is a SHA-256 in lower-case hex: the only names the folder holds.
    package static func isChecksum(_ text: String) -> Bool {
        text.utf8.count == 64
            && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    static let chunkBytes = 1 << 20

    private func path(of checksum: String) -> URL {
        folder.appendingPathComponent(String(checksum.prefix(2))).appendingPathComponent(checksum)
    }

    /// Writes what `next` hands out (nil: the end) to a temporary file, hashing it on the way,
    /// then puts it in place under its checksum, flushed.
    private func write(_ next: () throws -> Data?) throws -> Saved {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw Failure("cannot make the asset folder \(folder.path) (\(AssetBlobs.reason(error)))")
        }
        let temporary = folder.appendingPathComponent(".incoming-\(UUID().uuidString)")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure("cannot write in the asset folder \(folder.path) (\(String(cString: strerror(errno))))") }
        var placed = false
        defer {
            close(fd)
            if !placed { unlink(temporary.path) }
        }
        var hash = SHA256()
        var size: Int64 = 0
        while let chunk = try next() {
            hash.update(data: chunk)
            size += Int64(chunk.count)
            try chunk.withUnsafeBytes { raw in
                var done = 0
                while done < raw.count {
                    let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { throw Failure("cannot write \(temporary.path) (\(String(cString: strerror(errno))))") }
                    done += n
                }
            }
        }
        guard fsync(fd) == 0 else { throw Failure("cannot flush \(temporary.path) to the disk (\(String(cString: strerror(errno))))") }
        let checksum = AssetBlobs.hex(hash.finalize())
        let target = path(of: checksum)
        let sub = target.deletingLastPathComponent()
        try? FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        guard rename(temporary.path, target.path) == 0 else {
            throw Failure("cannot put the asset in place at \(target.path) (\(String(cString: strerror(errno))))")
        }
        placed = true
        // The rename is in the subfolder's entries: flushed too, or a crash could lose it.
        for dir in [sub, folder] {
            let d = open(dir.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if d >= 0 {
                _ = fsync(d)
                close(d)
            }
        }
        return Saved(checksum: checksum, size: size)
    }

    private static func reason(_ error: Error) -> String {
        ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.localizedDescription ?? error.localizedDescription
    }
}
