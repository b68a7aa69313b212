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
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The first 16 bytes of a file (fewer if it is shorter): a store's header.
    static func read16(_ path: String) throws -> Data {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: String(cString: strerror(errno))) }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 16)
        var got = 0
        while got < 16 {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + got, 16 - got) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw Failure(description: String(cString: strerror(errno))) }
            if n == 0 { break }
            got += n
        }
        return Data(buffer[0..<got])
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
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(description: "cannot read \(path) (\(String(cString: strerror(errno))))")
            }
            if n == 0 { return data }
            guard data.count + n <= maxBytes else {
                throw Failure(description: "\(path) is larger than \(maxBytes >= 1 << 20 ? "\(maxBytes >> 20) MiB" : "\(maxBytes) bytes")")
            }
            data.append(contentsOf: buffer[0..<n])
        }
    }
}
