import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A file read whole, up to a bound, through `read(2)`: a device that never ends (`/dev/zero`),
/// a pipe, or a file whose read fails (EIO: a failing disk, `/proc/self/mem`) is an error
/// naming the file, never memory without end nor a trap (Foundation's `readData(ofLength:)`
/// traps on a failed read).
///
/// ```swift
/// let text = try BoundedFile.read("notes.lua", maxBytes: 64 << 20)
/// ```
public enum BoundedFile {
    /// Why a file could not be read, as one line for the person who named it.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong: `read` names the file and the reason (cannot open, cannot read, larger than the bound).
        public let description: String
        /// True when the file was readable and held more than the bound.
        public var tooLarge = false
    }

    /// The first 16 bytes of a file (fewer if it is shorter): a store's header.
    static func read16(_ path: String) throws -> Data {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: String(cString: strerror(errno))) }
        defer { close(fd) }
        return try read(fd, upTo: 16) { String(cString: strerror($0)) }.data
    }

    /// The file's bytes; `maxBytes` more is "larger than", a folder or a failed read is said.
    /// `path` "-" is standard input.
    public static func read(_ path: String, maxBytes: Int) throws -> Data {
        let fd = path == "-" ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: "cannot open \(path) (\(String(cString: strerror(errno))))") }
        defer { if path != "-" { close(fd) } }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            throw Failure(description: "cannot open \(path) (Is a directory)")
        }
        let (data, more) = try read(fd, upTo: maxBytes) { "cannot read \(path) (\(String(cString: strerror($0))))" }
        guard !more else {
            throw Failure(
                description: "\(path) is larger than \(maxBytes >= 1 << 20 ? "\(maxBytes >> 20) MiB" : "\(maxBytes) bytes")",
                tooLarge: true
            )
        }
        return data
    }

    /// At most `limit` bytes of `fd`, and whether it holds more; a failed read is `failure(errno)`.
    private static func read(_ fd: Int32, upTo limit: Int, failure: (Int32) -> String) throws -> (data: Data, more: Bool) {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: min(limit + 1, 64 << 10))
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, min($0.count, limit + 1 - data.count)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(description: failure(errno))
            }
            if n == 0 { return (data, false) }
            data.append(contentsOf: buffer[0..<n])
            if data.count > limit { return (data.prefix(limit), true) }
        }
    }
}
