import CShareFlowSupport
import Foundation
import XCTest

@testable import ShareFlowLua

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plugin's data folder keeps its bytes exact, stays inside the folder whatever the path or
/// the symlinks planted in it, and holds no more than its quota, across restarts.
final class DataFolderTests: XCTestCase {
    var root: String!  // scratch for each test
    var folderPath: String!  // the plugin's data folder, inside root
    var outside: String!  // a folder a plugin must never touch

    override func setUpWithError() throws {
        root = try PluginDataFolder.makePrivate(prefix: "sf-datafolder-test-")
        folderPath = root + "/data/plugin"
        outside = root + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let root { PluginDataFolder.removeTree(root) }
    }

    // MARK: Helpers

    @discardableResult
    func append(_ folder: PluginDataFolder, _ bytes: [UInt8], to path: String) throws -> String {
        try bytes.withUnsafeBytes { try folder.append($0, to: path) }
    }

    func append(_ folder: PluginDataFolder, _ text: String, to path: String) throws {
        try append(folder, Array(text.utf8), to: path)
    }

    /// The error `body` throws, as the one line a plugin would see.
    func refusal(_ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            try body()
            XCTFail("expected a refusal", file: file, line: line)
            return ""
        } catch {
            let text = "\(error)"
            XCTAssertFalse(text.contains("\n"), "one line: \(text)", file: file, line: line)
            return text
        }
    }

    func contents(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }

    func mode(_ path: String) -> Int {
        var st = stat()
        XCTAssertEqual(lstat(path, &st), 0, path)
        return Int(st.st_mode) & 0o7777
    }

    func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Everything below `path` (relative names), so a refusal can be shown to create nothing.
    func listing(_ path: String) -> [String] {
        ((try? FileManager.default.subpathsOfDirectory(atPath: path)) ?? []).sorted()
    }

    func symlink(_ at: String, to destination: String) throws {
        try FileManager.default.createSymbolicLink(atPath: at, withDestinationPath: destination)
    }

    // MARK: Bytes

    func testBytesRoundTripExactly() throws {
        let folder = try PluginDataFolder(path: folderPath, quotaBytes: 1 << 20)
        let first: [UInt8] = [0x61, 0x00, 0x62, 0xFF, 0xFE, 0x0D, 0x0A]  // a NUL b, invalid UTF-8, CRLF
        let second: [UInt8] = [0x00, 0x00, 0xC3, 0x28, 0x0D, 0x0D, 0x0A, 0x80]
        let full = try append(folder, first, to: "a.bin")
        try append(folder, second, to: "a.bin")
        try append(folder, [], to: "a.bin")
        XCTAssertEqual(full, folderPath + "/a.bin")
        XCTAssertEqual(contents(full), first + second)
        XCTAssertEqual(mode(full), 0o600)
        XCTAssertEqual(folder.usedBytes, first.count + second.count + Int(SF_DF_ENTRY_COST), "the bytes and the file's block")
    }

    func testEmptyAppendCreatesTheFile() throws {
        let folder = try PluginDataFolder(path: folderPath, quotaBytes: Int(SF_DF_ENTRY_COST))  // the file's block
        try append(folder, [], to: "empty.log")
        XCTAssertEqual(contents(folderPath + "/empty.log"), [])
    }

    func testLargeAppendIsWrittenWhole() throws {
        let folder = try PluginDataFolder(path: folderPath, quotaBytes: 8 << 20)
        let bytes = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        try append(folder, bytes, to: "big.bin")
        XCTAssertEqual(contents(folderPath + "/big.bin"), bytes)
    }

    func testNestedFoldersAreCreated() throws {
        let folder = try PluginDataFolder(path: folderPath, quotaBytes: 1 << 20)
        let full = try append(folder, Array("hello\n".utf8), to: "logs/2024/01/a.log")
        XCTAssertEqual(full, folderPath + "/logs/2024/01/a.log")
        XCTAssertEqual(contents(full), Array("hello\n".utf8))
        for dir in ["logs", "logs/2024", "logs/2024/01"] { XCTAssertEqual(mode(folderPath + "/" + dir), 0o700, dir) }
        try append(folder, "again\n", to: "logs/2024/01/a.log")
        try append(folder, "other\n", to: "logs/2024/b.log")
        XCTAssertEqual(contents(full), Array("hello\nagain\n".utf8))
        XCTAssertEqual(listing(folderPath), ["logs", "logs/2024", "logs/2024/01", "logs/2024/01/a.log", "logs/2024/b.log"])
    }

    // MARK: Paths

    func testPathsLeavingTheFolderAreRefused() throws {
        let folder = try PluginDataFolder(path: folderPath, quotaBytes: 1 << 20)
        for path in ["..", "../x", "logs/../x", "logs/../../outside/x", "a/b/..", outside + "/x", "/etc/passwd", "//x"] {
            let message = refusal { try self.append(folder, "x", to: path) }
            XCTAssertEqual(message, "appendFile: '\(path)' must stay inside the plugin's data folder")
        }
        XCTAssertEqual(listing(folderPath), [], "a refused path creates no folder")
        XCTAssertEqual(listing(outside), [])
    }

    func testMalformedPathsAreRefused() throws {
        let folder = try PluginDataFolder(path: folderPath, quotaBytes: 1 << 20)
        XCTAssertEqual(refusal { try self.append(folder, "x", to: "") }, "appendFile: the path is empty")
        for path in ["a//b", "a/", "./a", "a/./b", ".", "logs/"] {
            XCTAssertEqual(
                refusal { try self.append(folder, "x", to: path) },
                "appendFile: '\(path)' has an empty or '.' component"
            )
        }
        for path in ["a\u{0}b", "\u{0}", "logs/a.log\u{0}.txt"] {
            let message = refusal { try self.append(folder, "x", to: path) }
            XCTAssertTrue(message.hasSuffix("contains a NUL byte"), message)
            XCTAssertFalse(message.contains("\u{0}"), "the NUL is shown escaped")
        }
        XCTAssertEqual(
            refusal { try self.append(folder, "x", to: "a\u{0}/../../x") },
            "appendFile: 'a\\0/../../x' contains a NUL byte"
        )
        let deep = Array(repeating: "d", count: 33).joined(separator: "/")
        XCTAssertEqual(refusal { try self.append(folder, "x", to: deep) }, "appendFile: '\(deep)' has more than 32 components")
        let long = String(repeating: "n", count: 256)
        XCTAssertEqual(
            refusal { try self.append(folder, "x", to: "logs/" + long) },
            "appendFile: cannot write 'logs/\(long)': File name too long"
        )
        XCTAssertEqual(listing(folderPath), [])
        // 32 components is still fine.
        try append(folder, "x", to: Array(repeating: "d", count: 32).joined(separator: "/"))
    }

    // MARK: Symlinks and other files

    func testSymlinkAsTheFileIsRefused() throws {
        let folder = try PluginDataFolder(path: folderPath, quotaBytes: 1 << 20)
        try Data("secret\n".utf8).write(to: URL(fileURLWithPath: outside + "/target"))
        try symlink(folderPath + "/link.log", to: outside + "/target")
        try symlink(folderPath + "/dangling.log", to: outside + "/created")
        try symlink(folderPath + "/relative.log", to: "../../outside/target")
        for name in ["link.log", "dangling.log", "relative.log"] {
            XCTAssertEqual(
                refusal { try self.append(folder, "pwned\n", to: name) },
                "appendFile: '\(name)' is a symbolic link; refusing to follow it"
            )
        }
        XCTAssertEqual(contents(outside + "/target"), Array("secret\n".utf8))
        XCTAssertFalse(exists(outside + "/created"))
        XCTAssertEqual(folder.usedBytes, 0)
    }

    func testSymlinkAsAFolderIsRefused() throws {
        let folder = try PluginDataFolder(path: folderPath, quotaBytes: 1 << 20)
        try symlink(folderPath + "/sub", to: outside)
        try FileManager.default.createDirectory(atPath: folderPath + "/real", withIntermediateDirectories: true)
        try symlink(folderPath + "/real/deeper", to: outside)
        XCTAssertEqual(
            refusal { try self.append(folder, "pwned", to: "sub/x.log") },
            "appendFile: 'sub/x.log': 'sub' is a symbolic link; refusing to follow it"
        )
        XCTAssertEqual(
            refusal { try self.append(folder, "pwned", to: "sub/new/x.log") },
            "appendFile: 'sub/new/x.log': 'sub' is a symbolic link; refusing to follow it"
        )
        XCTAssertEqual(
            refusal { try self.append(folder, "pwned", to: "real/deeper/x.log") },
            "appendFile: 'real/deeper/x.log': 'real/deeper' is a symbolic link; refusing to follow it"
        )
        XCTAssertEqual(listing(outside), [], "nothing written outside")
    }

    func testOtherKindsOfFileAreRefused() throws {
        let folder = try PluginDataFolder(path: folderPath, quotaBytes: 1 << 20)
        try FileManager.default.createDirectory(atPath: folderPath + "/dir", withIntermediateDirectories: true)
        XCTAssertEqual(refusal { try self.append(folder, "x", to: "dir") }, "appendFile: 'dir' is not a regular file")
        // A FIFO would block an open for writing with no reader: refused without opening it.
        XCTAssertEqual(mkfifo(folderPath + "/fifo", 0o600), 0)
        XCTAssertEqual(refusal { try self.append(folder, "x", to: "fifo") }, "appendFile: 'fifo' is not a regular file")
        try append(folder, "x", to: "file")
        XCTAssertEqual(refusal { try self.append(folder, "x", to: "file/y.log") }, "appendFile: 'file/y.log': 'file' is not a folder")
        XCTAssertEqual(refusal { try self.append(folder, "x", to: "fifo/y.log") }, "appendFile: 'fifo/y.log': 'fifo' is not a folder")
    }

    // MARK: Quota

    /// Each file and folder costs a block (SF_DF_ENTRY_COST) besides its bytes.
    let block = Int(SF_DF_ENTRY_COST)

    func testQuotaRefusesTheWriteThatWouldPassIt() throws {
        let folder = try PluginDataFolder(path: folderPath, quotaBytes: block + 100)
        try append(folder, [UInt8](repeating: 1, count: 60), to: "a.log")
        XCTAssertEqual(folder.usedBytes, block + 60)
        XCTAssertTrue(
            refusal { try self.append(folder, [UInt8](repeating: 2, count: 1), to: "b/c.log") }
                .hasPrefix("appendFile: 'b/c.log' would pass the plugin's disk quota of"),
            "two new entries cost two blocks"
        )
        XCTAssertFalse(exists(folderPath + "/b"), "a refused write creates nothing")
        try append(folder, [UInt8](repeating: 3, count: 40), to: "a.log")  // exactly the quota
        XCTAssertEqual(folder.usedBytes, block + 100)
        XCTAssertTrue(
            refusal { try self.append(folder, [4], to: "a.log") }
                .hasPrefix("appendFile: 'a.log' would pass the plugin's disk quota of")
        )
        XCTAssertEqual(
            refusal { try self.append(folder, [4], to: "../a.log") },
            "appendFile: '../a.log' must stay inside the plugin's data folder",
            "the worse mistake first"
        )
        try append(folder, [], to: "a.log")  // nothing to add is fine
        XCTAssertEqual(contents(folderPath + "/a.log"), [UInt8](repeating: 1, count: 60) + [UInt8](repeating: 3, count: 40))
        XCTAssertTrue(
            refusal { try self.append(folder, [], to: "new.log") }
                .hasPrefix("appendFile: 'new.log' would pass"),
            "an empty file is not free"
        )
    }

    func testQuotaCountsWhatIsAlreadyThereAtInit() throws {
        do {
            let first = try PluginDataFolder(path: folderPath, quotaBytes: 10 * block)
            try append(first, [UInt8](repeating: 1, count: 50), to: "a.log")
            try append(first, [UInt8](repeating: 2, count: 30), to: "logs/old/b.log")
            XCTAssertEqual(first.usedBytes, 4 * block + 80)
        }
        // What symlinks point at is not the plugin's: not counted, not followed (the links
        // themselves are entries).
        try Data(count: 10_000).write(to: URL(fileURLWithPath: outside + "/big"))
        try symlink(folderPath + "/big.log", to: outside + "/big")
        try symlink(folderPath + "/logs/elsewhere", to: outside)

        let restarted = try PluginDataFolder(path: folderPath, quotaBytes: 6 * block + 100)
        XCTAssertEqual(restarted.usedBytes, 6 * block + 80)
        XCTAssertTrue(
            refusal { try self.append(restarted, [UInt8](repeating: 3, count: 21), to: "a.log") }
                .hasPrefix("appendFile: 'a.log' would pass the plugin's disk quota of")
        )
        try append(restarted, [UInt8](repeating: 3, count: 20), to: "a.log")
        XCTAssertEqual(restarted.usedBytes, 6 * block + 100)

        // A lower quota than what is there: nothing more is written.
        let lowered = try PluginDataFolder(path: folderPath, quotaBytes: 10)
        XCTAssertTrue(
            refusal { try self.append(lowered, [1], to: "a.log") }
                .hasPrefix("appendFile: 'a.log' would pass the plugin's disk quota of 10 bytes")
        )
    }

    func testQuotaMessageInMiB() throws {
        try FileManager.default.createDirectory(atPath: folderPath, withIntermediateDirectories: true)
        // 63.95 MiB, sparse: the quota counts file sizes, what appendFile added.
        XCTAssertTrue(FileManager.default.createFile(atPath: folderPath + "/a.log", contents: nil))
        XCTAssertEqual(truncate(folderPath + "/a.log", off_t(63.95 * 1_048_576)), 0)
        let folder = try PluginDataFolder(path: folderPath, quotaBytes: 64 << 20)
        XCTAssertEqual(
            refusal { try self.append(folder, [UInt8](repeating: 0, count: 1 << 20), to: "a.log") },
            "appendFile: 'a.log' would pass the plugin's disk quota of 64 MiB (63.9 MiB used)"
        )
        XCTAssertEqual(PluginDataFolder.size(1), "1 byte")
        XCTAssertEqual(PluginDataFolder.size(1023), "1023 bytes")
        XCTAssertEqual(PluginDataFolder.size(1536), "1.5 KiB")
        XCTAssertEqual(PluginDataFolder.size((1 << 20) - 1), "1 MiB")
        XCTAssertEqual(PluginDataFolder.size((1 << 20) - 1, roundingDown: true), "1023.9 KiB")
        XCTAssertEqual(PluginDataFolder.size(3 << 30), "3 GiB")
    }

    // MARK: The folder itself

    func testInitCreatesTheFolderPrivately() throws {
        let folder = try PluginDataFolder(path: folderPath, quotaBytes: 1)
        XCTAssertEqual(folder.path, folderPath)
        XCTAssertEqual(mode(root + "/data"), 0o700)
        XCTAssertEqual(mode(folderPath), 0o700)
        XCTAssertEqual(folder.usedBytes, 0)
    }

    func testInitRefusesASymlinkedFolder() throws {
        try FileManager.default.createDirectory(atPath: root + "/data", withIntermediateDirectories: true)
        try symlink(folderPath, to: outside)
        XCTAssertEqual(
            refusal { _ = try PluginDataFolder(path: self.folderPath, quotaBytes: 1) },
            "plugin data folder '\(folderPath!)' is a symbolic link; refusing to follow it"
        )
    }

    // MARK: Private folders

    func testMakePrivateGivesDistinctPrivateFolders() throws {
        let a = try PluginDataFolder.makePrivate(prefix: "sf-private-test-")
        let b = try PluginDataFolder.makePrivate(prefix: "sf-private-test-")
        defer {
            PluginDataFolder.removeTree(a)
            PluginDataFolder.removeTree(b)
        }
        XCTAssertNotEqual(a, b)
        var temporary = NSTemporaryDirectory()
        while temporary.count > 1, temporary.hasSuffix("/") { temporary.removeLast() }
        for path in [a, b] {
            XCTAssertEqual(mode(path), 0o700)
            XCTAssertTrue((path as NSString).lastPathComponent.hasPrefix("sf-private-test-"))
            XCTAssertEqual((path as NSString).deletingLastPathComponent, temporary)
        }
        XCTAssertThrowsError(try PluginDataFolder.makePrivate(prefix: "a/b"))

        let folder = try PluginDataFolder(path: a + "/plugin", quotaBytes: 1 << 20)
        try append(folder, "x", to: "logs/deep/a.log")
        PluginDataFolder.removeTree(a)
        XCTAssertFalse(exists(a))
        XCTAssertTrue(exists(b))
    }

    func testRemoveTreeDoesNotFollowSymlinks() throws {
        let target = outside + "/keep"
        try FileManager.default.createDirectory(atPath: target + "/inner", withIntermediateDirectories: true)
        try Data("keep\n".utf8).write(to: URL(fileURLWithPath: target + "/inner/file"))
        try Data("keep\n".utf8).write(to: URL(fileURLWithPath: outside + "/file"))

        let tree = try PluginDataFolder.makePrivate(prefix: "sf-private-test-")
        try FileManager.default.createDirectory(atPath: tree + "/a/b", withIntermediateDirectories: true)
        try Data("gone".utf8).write(to: URL(fileURLWithPath: tree + "/a/b/f"))
        try symlink(tree + "/a/dirlink", to: target)
        try symlink(tree + "/a/b/filelink", to: outside + "/file")
        try symlink(tree + "/dangling", to: outside + "/nothing")
        XCTAssertEqual(mkfifo(tree + "/a/fifo", 0o600), 0)
        PluginDataFolder.removeTree(tree)
        XCTAssertFalse(exists(tree))
        XCTAssertEqual(contents(target + "/inner/file"), Array("keep\n".utf8))
        XCTAssertEqual(contents(outside + "/file"), Array("keep\n".utf8))

        // A symlink given as the tree itself is removed as a link, with or without a slash.
        for path in [root + "/link", root + "/link2/"] {
            try symlink(String(path.dropLast(path.hasSuffix("/") ? 1 : 0)), to: target)
            PluginDataFolder.removeTree(path)
            XCTAssertFalse(exists(String(path.dropLast(path.hasSuffix("/") ? 1 : 0))))
        }
        XCTAssertEqual(contents(target + "/inner/file"), Array("keep\n".utf8))
        PluginDataFolder.removeTree(root + "/nothing-here")  // missing: no effect, no crash
    }
}
