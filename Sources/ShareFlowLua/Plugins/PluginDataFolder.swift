import CShareFlowSupport
import Foundation
import ShareFlow

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a plugin's data folder refused, as one line naming the path and the cause.
public struct PluginDataFolderError: Error, CustomStringConvertible {
    /// The refusal, naming the path and the cause.
    public let description: String
    init(_ description: String) { self.description = description }
}

/// A plugin's data folder, `<dataDirectory>/<plugin>/`, behind `ctx.appendFile`.
///
/// The folder is held open and every write walks its path from that descriptor one component
/// at a time without following symlinks (in C, `sf_datafolder_append`), so neither `..` nor a
/// planted or raced-in symlink leads outside it. Bytes are written exactly as given, since
/// plugins write binary and non-UTF-8 data too. A disk quota, counted from what is already on
/// disk when the folder is opened, bounds what a plugin can fill across events and restarts.
///
/// Appends are serialized by a lock, so the quota check and the write are one step even if
/// two states share the folder object.
public final class PluginDataFolder: @unchecked Sendable {  // mutable state behind `lock`
    /// The folder, as given.
    public let path: String
    /// The most bytes the folder's regular files may hold.
    public let quotaBytes: Int
    private let fd: Int32
    private let lock = NSLock()
    private var used: Int

    /// Bytes the folder's regular files hold now.
    public var usedBytes: Int { lock.withLock { used } }

    /// Creates the folder (and missing parents, 0700) if needed, opens it and measures what
    /// it holds. The last component must be a real folder, not a symlink; the parents are the
    /// operator's choice and may be symlinks.
    public init(path: String, quotaBytes: Int) throws {
        precondition(quotaBytes >= 0, "quotaBytes must not be negative")
        self.path = path
        self.quotaBytes = quotaBytes
        try Self.makeFolders(path)
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let err = errno
            var st = stat()
            if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFLNK {
                throw PluginDataFolderError("plugin data folder '\(path)' is a symbolic link; refusing to follow it")
            }
            throw PluginDataFolderError("plugin data folder '\(path)': cannot open: \(Self.message(err))")
        }
        var bytes: UInt64 = 0
        let err = sf_datafolder_usage(fd, &bytes)
        guard err == 0 else {
            close(fd)
            throw PluginDataFolderError("plugin data folder '\(path)': cannot measure its size: \(Self.message(err))")
        }
        self.fd = fd
        self.used = Int(clamping: bytes)
    }

    deinit { close(fd) }

    /// Appends `bytes` to `relativePath` inside the folder and returns the full path written.
    /// A write that would pass the quota is refused whole, so a plugin never leaves half a
    /// record behind because of it.
    @discardableResult
    public func append(_ bytes: UnsafeRawBufferPointer, to relativePath: String) throws -> String {
        let full = (path as NSString).appendingPathComponent(relativePath)
        let utf8 = Array(relativePath.utf8)
        try lock.withLock {
            var written = 0
            var failedLength = 0
            // Entries the write will create (the file, missing folders) cost a block each: a
            // plugin cannot fill the disk with empty files or folders either.
            let created = newEntries(relativePath)
            let needed = bytes.count + created * Int(SF_DF_ENTRY_COST)
            if needed > 0, used > quotaBytes || needed > quotaBytes - used {
                // A path that could never be written is the mistake to report, not the quota.
                let err = utf8.withUnsafeBytes { p in
                    sf_datafolder_check_path(p.baseAddress?.assumingMemoryBound(to: CChar.self), p.count, &failedLength)
                }
                if err != 0 { throw refusal(err, relativePath, utf8: utf8, failedLength: failedLength) }
                throw fail(
                    relativePath,
                    "would pass the plugin's disk quota of \(Self.size(quotaBytes)) (\(Self.size(used, roundingDown: true)) used)"
                )
            }
            let err = utf8.withUnsafeBytes { p in
                sf_datafolder_append(
                    fd,
                    p.baseAddress?.assumingMemoryBound(to: CChar.self),
                    p.count,
                    bytes.baseAddress,
                    bytes.count,
                    &written,
                    &failedLength
                )
            }
            used += written + (err == 0 ? created * Int(SF_DF_ENTRY_COST) : 0)
            if err != 0 { throw refusal(err, relativePath, utf8: utf8, failedLength: failedLength) }
        }
        return full
    }

    /// Moves file `name` (at the folder's top level) to `name.1`, replacing the `.1` there, when
    /// it holds at least `atLeast` bytes (any size when nil): a log rotated at half the quota
    /// keeps going forever, its newest part kept. Returns whether it moved.
    @discardableResult
    public func rotate(_ name: String, atLeast: Int? = nil) throws -> Bool {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != "..", !name.utf8.contains(0), name.utf8.count <= 200 else {
            throw PluginDataFolderError("\(String(name.prefix(80))): a file to rotate is named by a plain file name at the top of the data folder")
        }
        return try lock.withLock {
            var st = stat()
            guard fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return false }
            guard st.st_mode & S_IFMT == S_IFREG else {
                throw PluginDataFolderError("\(name): only a regular file is rotated")
            }
            if let atLeast, Int(st.st_size) < atLeast { return false }
            var freed = 0
            var old = stat()
            if fstatat(fd, name + ".1", &old, AT_SYMLINK_NOFOLLOW) == 0 {
                guard old.st_mode & S_IFMT == S_IFREG else { throw PluginDataFolderError("\(name).1: only a regular file is replaced") }
                freed = Int(old.st_size) + Int(SF_DF_ENTRY_COST)
            }
            guard renameat(fd, name, fd, name + ".1") == 0 else {
                throw PluginDataFolderError("\(name): cannot rotate: \(Self.message(errno))")
            }
            used = max(0, used - freed)
            return true
        }
    }

    /// How many of the path's components do not exist yet below the folder.
    private func newEntries(_ relativePath: String) -> Int {
        var prefix = ""
        var missing = 0
        for component in relativePath.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += prefix.isEmpty ? String(component) : "/" + component
            var st = stat()
            if missing > 0 || fstatat(fd, prefix, &st, AT_SYMLINK_NOFOLLOW) != 0 { missing += 1 }
        }
        return missing
    }

    /// Makes a new folder only this user can enter (mkdtemp, 0700) under the system temporary
    /// directory and returns its path. For a `:memory:` store: each process gets its own, so
    /// runs and users never see or fill each other's plugin data.
    public static func makePrivate(prefix: String) throws -> String {
        guard !prefix.contains("/"), !prefix.utf8.contains(0) else {
            throw PluginDataFolderError("private data folder: prefix '\(prefix)' must be a plain name")
        }
        var base = PathName.temporaryFolder
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        var template = Array((base + "/" + prefix + "XXXXXX").utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw PluginDataFolderError("private data folder in '\(base)': \(message(errno))")
        }
        return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Removes `path` and everything below it, best effort, never following a symlink (one
    /// inside is removed as a link; its target is left alone). For the owner of a
    /// `makePrivate` folder, at exit.
    public static func removeTree(_ path: String) {
        var path = path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }  // "link/" would follow
        let name = PathName.lastComponent(of: path)
        let parent = PathName.folder(of: path)
        guard !name.isEmpty, name != "/", name != ".", name != ".." else { return }
        let dir = open(parent.isEmpty ? "." : parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dir >= 0 else { return }
        defer { close(dir) }
        _ = sf_datafolder_remove(dir, name)
    }

    // MARK: Messages

    private func fail(_ relativePath: String, _ cause: String) -> PluginDataFolderError {
        PluginDataFolderError("appendFile: '\(Self.shown(relativePath))' \(cause)")
    }

    private func refusal(_ err: Int32, _ relativePath: String, utf8: [UInt8], failedLength: Int) -> PluginDataFolderError {
        // The component at fault, when it is not the whole path: "'a/b.log': 'a' is ...".
        let prefix = Self.shown(String(decoding: utf8.prefix(failedLength), as: UTF8.self))
        let shown = Self.shown(relativePath)
        let subject = prefix.isEmpty || prefix == shown ? "'\(shown)'" : "'\(shown)': '\(prefix)'"
        switch err {
        case SF_DF_OUTSIDE:
            return fail(relativePath, "must stay inside the plugin's data folder")
        case SF_DF_BAD_NAME:
            if utf8.isEmpty { return PluginDataFolderError("appendFile: the path is empty") }
            if utf8.contains(0) { return fail(relativePath, "contains a NUL byte") }
            return fail(relativePath, "has an empty or '.' component")
        case SF_DF_TOO_DEEP:
            return fail(relativePath, "has more than \(SF_DF_MAX_COMPONENTS) components")
        case SF_DF_SYMLINK:
            return PluginDataFolderError("appendFile: \(subject) is a symbolic link; refusing to follow it")
        case SF_DF_NOT_FILE:
            return PluginDataFolderError("appendFile: \(subject) is not a regular file")
        case SF_DF_NOT_DIR:
            return PluginDataFolderError("appendFile: \(subject) is not a folder")
        default:
            return PluginDataFolderError("appendFile: cannot write '\(shown)': \(Self.message(err))")
        }
    }

    private static func message(_ err: Int32) -> String {
        String(cString: strerror(err))
    }

    /// The path with control characters escaped, so an error stays one readable line.
    static func shown(_ path: String) -> String {
        var out = ""
        for scalar in path.unicodeScalars {
            switch scalar {
            case "\0": out += "\\0"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "'": out += "\\'"
            case "\\": out += "\\\\"
            default:
                if scalar.properties.generalCategory == .control {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// `64 MiB`, `63.9 MiB`, `512 bytes`. Rounded down when `used` is shown beside a quota,
    /// so a folder short of it never reads as full.
    static func size(_ bytes: Int, roundingDown: Bool = false) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB"]
        guard bytes >= 1024 else { return bytes == 1 ? "1 byte" : "\(bytes) bytes" }
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        var tenths = (value * 10).rounded(roundingDown ? .down : .toNearestOrAwayFromZero)
        if tenths >= 10240, unit < units.count - 1 {
            tenths = (tenths / 1024).rounded(.down)
            unit += 1
        }
        let whole = Int(tenths) / 10
        let fraction = Int(tenths) % 10
        return fraction == 0 ? "\(whole) \(units[unit])" : "\(whole).\(fraction) \(units[unit])"
    }

    /// mkdir -p with 0700 for each folder made; folders already there are left as they are.
    private static func makeFolders(_ path: String) throws {
        guard !path.isEmpty else { throw PluginDataFolderError("plugin data folder: the path is empty") }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + component
            if mkdir(prefix, 0o700) != 0 {
                let err = errno
                var st = stat()
                // There already (mkdir may say EACCES or EROFS rather than EEXIST): open decides.
                if err == EEXIST || stat(prefix, &st) == 0 { continue }
                throw PluginDataFolderError("plugin data folder '\(path)': cannot create '\(prefix)': \(message(err))")
            }
        }
    }
}
