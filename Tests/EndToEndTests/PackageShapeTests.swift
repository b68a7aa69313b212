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

    /// The engine's folders depend on no operation: operations call the engine (and the
    /// container's queue runs them), never the other way (issue 41's "arrows run one way").
    /// No code line outside `Operations/` names a type declared there.
    func testOnlyOperationsNameOperationTypes() throws {
        let library = CLI.root.appendingPathComponent("Sources/ShareFlow")
        func swiftFiles(_ folder: URL) throws -> [URL] {
            let files = try XCTUnwrap(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil))
            return files.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        }
        let declaration = try NSRegularExpression(
            pattern: #"^\s*(?:public |package |open )?(?:final )?(?:class|struct|enum|protocol) ([A-Z]\w*)"#,
            options: .anchorsMatchLines
        )
        var operationTypes = Set<String>()
        for file in try swiftFiles(library.appendingPathComponent("Operations")) {
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in declaration.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                operationTypes.insert(String(text[Range(match.range(at: 1), in: text)!]))
            }
        }
        XCTAssertTrue(operationTypes.isSuperset(of: ["CloudOperation", "ContainerQueue", "ModifyRecordsOperation"]), "\(operationTypes)")
        let word = try NSRegularExpression(pattern: #"\b[A-Z]\w*\b"#)
        for folder in ["Engine", "Faults", "Domain", "Store", "Events", "Files", "Metrics"] {
            for file in try swiftFiles(library.appendingPathComponent(folder)) {
                let text = try String(contentsOf: file, encoding: .utf8)
                for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    // Code only: a comment may name an operation (what a rule mirrors).
                    let code = String(line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                    for match in word.matches(in: code, range: NSRange(code.startIndex..., in: code)) {
                        let name = String(code[Range(match.range, in: code)!])
                        XCTAssertFalse(
                            operationTypes.contains(name),
                            "\(folder)/\(file.lastPathComponent):\(n + 1) names \(name), a type of Operations/"
                        )
                    }
                }
            }
        }
    }

    /// Locks are ones ThreadSanitizer sees (`Locked`, `NSLock`): a contended
    /// `Synchronization.Mutex` is handed between threads inside the kernel, and `make tsan`
    /// reported what it guarded as races (CI, 2026-12). No code line in Sources makes one.
    func testNoSourceLocksWithAMutexThreadSanitizerCannotSee() throws {
        let sources = CLI.root.appendingPathComponent("Sources")
        let files = try XCTUnwrap(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        let mutex = try NSRegularExpression(pattern: #"\bMutex\s*[<(]|\bMutex\s*\.|:\s*Mutex\b"#)
        var read = 0
        for case let file as URL in files where file.pathExtension == "swift" {
            read += 1
            let text = try String(contentsOf: file, encoding: .utf8)
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = String(line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                XCTAssertNil(
                    mutex.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)),
                    "\(file.path.replacingOccurrences(of: sources.path + "/", with: "")):\(n + 1) makes a Synchronization.Mutex; use Locked"
                )
            }
        }
        XCTAssertGreaterThan(read, 100, "read the sources")
    }
}
