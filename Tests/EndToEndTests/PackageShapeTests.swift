import Foundation
import ShareFlowTestKit
import XCTest

/// SPEC §16 M6: the engine and the Lua host link no PostgreSQL driver or TLS. PostgreSQL is a
/// driver in a target of its own (`ShareFlowPostgres`), reached through `StoreDriver`.
final class PackageShapeTests: XCTestCase {
    /// What only a database driver or TLS brings.
    private let driverProducts = ["PostgresNIO", "postgres-nio", "NIOSSL", "swift-nio-ssl", "NIOPosix", "ShareFlowPostgres"]

    /// The text of the `.target(name: "NAME", …)` declaration in Package.swift.
    private func target(_ name: String, in manifest: String) throws -> String {
        let start = try XCTUnwrap(
            manifest.range(of: #".target(\#n            name: "\#(name)","#) ?? manifest.range(of: #".target(name: "\#(name)""#),
            "Package.swift declares \(name)"
        )
        var depth = 0
        var end = start.lowerBound
        for index in manifest[start.lowerBound...].indices {
            let c = manifest[index]
            if c == "(" { depth += 1 }
            if c == ")" {
                depth -= 1
                if depth == 0 {
                    end = index
                    break
                }
            }
        }
        return String(manifest[start.lowerBound...end])
    }

    func testTheEngineAndTheLuaHostLinkNoDatabaseDriverOrTLS() throws {
        let manifest = try String(contentsOf: CLI.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        for name in ["ShareFlow", "ShareFlowLua"] {
            let declaration = try target(name, in: manifest)
            for product in driverProducts {
                XCTAssertFalse(declaration.contains("\"\(product)\""), "target \(name) depends on \(product): \(declaration)")
            }
            let folder = CLI.root.appendingPathComponent("Sources/\(name)")
            let files = try XCTUnwrap(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil))
            var swiftFiles = 0
            for case let file as URL in files where file.pathExtension == "swift" {
                swiftFiles += 1
                let text = try String(contentsOf: file, encoding: .utf8)
                for line in text.split(separator: "\n") where line.hasPrefix("import ") || line.hasPrefix("@testable import ") {
                    let module = line.split(separator: " ").last.map(String.init) ?? ""
                    XCTAssertFalse(
                        driverProducts.contains(module) || module.hasPrefix("NIO") || module.hasPrefix("Postgres"),
                        "\(file.lastPathComponent) imports \(module)"
                    )
                }
            }
            XCTAssertGreaterThan(swiftFiles, 10, "read the sources of \(name)")
        }
        // The driver is where PostgreSQL is.
        XCTAssertTrue(try target("ShareFlowPostgres", in: manifest).contains("\"PostgresNIO\""))
    }
}
