import Foundation

/// The package's root folder (the one holding Package.swift), found from this file.
public let packageRoot: URL = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
        url.deleteLastPathComponent()
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
    }
    fatalError("package root not found above \(#filePath)")
}()

/// A fresh, empty temporary folder named `<prefix>-<UUID>`; the caller removes it.
public func makeTemporaryFolder(_ prefix: String = "shareflow-test") throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
