import Foundation

/// A fresh, empty temporary folder named `<prefix>-<UUID>`; the caller removes it.
public func makeTemporaryFolder(_ prefix: String = "shareflow-test") throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
