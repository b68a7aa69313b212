import Crypto
import Foundation
import XCTest

@testable import ShareFlow

/// The asset folder beside an SQLite store (SPEC §19 A4): content-addressed, whole or absent.
final class AssetBlobsTests: XCTestCase {
    private var dir: URL!
    private var blobs: AssetBlobs!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("sf-blobs-\(UUID().uuidString)")
        blobs = AssetBlobs(folder: dir.appendingPathComponent("store.sqlite.assets"))
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    private static func hex(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

    /// What is left in the folder besides blobs: nothing, after any failure.
    private func strays() throws -> [String] {
        guard FileManager.default.fileExists(atPath: blobs.folder.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: blobs.folder.path).filter { $0.count != 2 }
    }

    func testTheSameBytesAreOneBlobNamedByTheirSHA256() throws {
        let data = Data("hello, assets".utf8)
        let a = try blobs.put(data, maxBytes: 1 << 20)
        let b = try blobs.put(data, maxBytes: 1 << 20)
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.checksum, Self.hex(data))
        XCTAssertEqual(a.size, Int64(data.count))
        XCTAssertEqual(try Data(contentsOf: try XCTUnwrap(blobs.url(a.checksum))), data)
        XCTAssertEqual(try blobs.checksums(), [a.checksum])
        XCTAssertEqual(try strays(), [])
        // Empty bytes are an asset too.
        let empty = try blobs.put(Data(), maxBytes: 1)
        XCTAssertEqual(empty.size, 0)
        XCTAssertEqual(try blobs.checksums().count, 2)
        XCTAssertTrue(blobs.remove(empty.checksum))
        XCTAssertFalse(blobs.remove(empty.checksum))
        XCTAssertNil(blobs.url(empty.checksum))
    }

    func testAFileIsCopiedInChunksAndItsBoundHoldsWhileReading() throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var generator = SystemRandomNumberGenerator()
        let data = Data((0..<(3 * AssetBlobs.chunkBytes + 17)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let file = dir.appendingPathComponent("photo.bin")
        try data.write(to: file)
        let saved = try blobs.put(contentsOf: file.path, maxBytes: 4 << 20)
        XCTAssertEqual(saved.checksum, Self.hex(data))
        XCTAssertEqual(try Data(contentsOf: try XCTUnwrap(blobs.url(saved.checksum))), data)
        // Past the bound: refused, nothing left behind, the data and the file alike.
        XCTAssertThrowsError(try blobs.put(contentsOf: file.path, maxBytes: 1 << 20)) { error in
            XCTAssertTrue((error as? AssetBlobs.Failure)?.tooLarge == true, "\(error)")
        }
        XCTAssertThrowsError(try blobs.put(data, maxBytes: 10)) { XCTAssertTrue(($0 as? AssetBlobs.Failure)?.tooLarge == true) }
        XCTAssertEqual(try strays(), [])
        XCTAssertEqual(try blobs.checksums(), [saved.checksum])
        // A device that never ends is no file to keep.
        XCTAssertThrowsError(try blobs.put(contentsOf: "/dev/zero", maxBytes: 1 << 20)) {
            XCTAssertTrue("\($0)".contains("not a regular file"), "\($0)")
        }
        XCTAssertThrowsError(try blobs.put(contentsOf: dir.appendingPathComponent("missing").path, maxBytes: 1)) {
            XCTAssertTrue("\($0)".contains("cannot open"), "\($0)")
        }
    }

    /// A name is a SHA-256 in hex or nothing: no path leads out of the folder.
    func testANameNeverLeadsOutOfTheFolder() throws {
        _ = try blobs.put(Data("x".utf8), maxBytes: 10)
        for name in ["../../etc/passwd", "", "AB" + String(repeating: "0", count: 62), String(repeating: "g", count: 64), "/etc/passwd"] {
            XCTAssertNil(blobs.url(name), name)
            XCTAssertFalse(blobs.remove(name), name)
        }
    }

    /// A folder that cannot be made is one line naming it.
    func testAFolderThatCannotBeMadeIsNamed() throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("not-a-folder")
        try Data("x".utf8).write(to: file)
        let blocked = AssetBlobs(folder: file.appendingPathComponent("assets"))
        XCTAssertThrowsError(try blocked.put(Data("y".utf8), maxBytes: 10)) { error in
            XCTAssertTrue("\(error)".contains(file.appendingPathComponent("assets").path), "\(error)")
        }
    }
}
