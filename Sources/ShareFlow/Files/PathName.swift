import Foundation

/// A path's parts, as text. Foundation's `NSString.deletingLastPathComponent` traps on any
/// one-character path on Linux (`"-"`, `"."`, `"a"`: swift-corelibs-foundation 6.3), which
/// made `shareflow run -` and `shareflow test .` die with SIGILL; every folder-of-a-path in
/// ShareFlow goes through here instead.
///
/// ```swift
/// PathName.folder(of: "Plugins/gate/init.lua")  // "Plugins/gate"
/// PathName.folder(of: "init.lua")               // ""
/// ```
public enum PathName {
    /// The system's temporary folder, ending in one `/`: TMPDIR when it names a folder, else
    /// /tmp/ (what `NSTemporaryDirectory` answers). Read here because Foundation's reads it
    /// through a URL, whose first use instantiates a Set<UInt8> and so scans every protocol
    /// conformance in the binary: 0.6M instructions of a cold start (issue 48).
    public static var temporaryFolder: String {
        if let value = getenv("TMPDIR"), value.pointee != 0 {
            let path = String(cString: value)
            var st = stat()
            if stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR { return path.hasSuffix("/") ? path : path + "/" }
        }
        return "/tmp/"
    }

    /// The path without its last component, as `deletingLastPathComponent` answers: `""` for a
    /// bare name, `"/"` for a name at the root, trailing slashes ignored.
    public static func folder(of path: String) -> String {
        var bytes = Array(path.utf8)
        while bytes.count > 1, bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        var end = slash
        while end > 0, bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
        return end == 0 ? "/" : String(decoding: bytes[..<end], as: UTF8.self)
    }

    /// The last component, trailing slashes ignored (`"/"` for the root).
    public static func lastComponent(of path: String) -> String {
        var bytes = Array(path.utf8)
        while bytes.count > 1, bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        guard bytes.count > 1, let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: bytes[(slash + 1)...], as: UTF8.self)
    }
}
