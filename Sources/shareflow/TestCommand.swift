import ArgumentParser
import Foundation
import ShareFlow
import ShareFlowLua

extension ShareFlowCommand {
    struct Test: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run *_test.lua files, each test on a fresh in-memory store.",
            discussion: "A test file calls test(name, fn); expect.eq/truthy/falsy/code/raises/contains check values. Ends with 'N passed, N failed'."
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: "Test files or folders (default: Plugins and Scripts).")
        var paths: [String] = []

        func run() throws {
            _ = try global.validateLogLevel()
            let files = LuaTestRunner.testFiles(in: paths.isEmpty ? ["Plugins", "Scripts"] : paths)
            var passed = 0, failed = 0
            var results: [[String: Any]] = []
            let runner = LuaTestRunner()
            for file in files {
                runner.run(file: file) { outcome in
                    if let failure = outcome.failure {
                        failed += 1
                        if !global.json {
                            print("FAIL \(outcome.file): \(outcome.name)")
                            print(failure.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n"))
                        }
                    } else {
                        passed += 1
                        if !global.json { print("ok   \(outcome.file): \(outcome.name)") }
                    }
                    results.append(["file": outcome.file, "name": outcome.name, "passed": outcome.failure == nil,
                                    "failure": outcome.failure ?? NSNull()])
                }
            }
            if global.json {
                let object: [String: Any] = ["passed": passed, "failed": failed, "tests": results]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print("\(passed) passed, \(failed) failed")
            }
            if failed > 0 || (files.isEmpty && !paths.isEmpty) { throw ExitCode(1) }
        }
    }
}
