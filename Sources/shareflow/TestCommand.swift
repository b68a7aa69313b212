import ArgumentParser
import Foundation
import ShareFlow
import ShareFlowLua
import ShareFlowPostgres

extension ShareFlowCommand {
    struct Test: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test",
            abstract: "Run *_test.lua files, each test on a fresh in-memory store (or, with --store postgres://…, a fresh PostgreSQL database).",
            discussion: "A test file calls test(name, fn); expect.eq/truthy/falsy/code/raises/contains check values. Ends with 'N passed, N failed'."
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: "Test files or folders (default: Plugins and Scripts).")
        var paths: [String] = []

        @Option(name: .long, help: "Seconds one test may run before it fails as timed out (0: no limit).")
        var timeout: Double = 10

        func validate() throws {
            guard timeout.isFinite, timeout >= 0, timeout <= 86_400 else {
                throw ValidationError("--timeout must be a number of seconds from 0 (no limit) to 86400, got \(timeout)")
            }
        }

        func run() throws {
            let searched = paths.isEmpty ? ["Plugins", "Scripts"] : paths
            // The default folders only where they are (run outside a checkout, there may be none).
            let files = LuaTestRunner.testFiles(in: paths.isEmpty ? searched.filter { FileManager.default.fileExists(atPath: $0) } : paths)
            guard !files.isEmpty else {
                throw CLIFailure(message: "no tests found in \(searched.joined(separator: ", ")) (test files are named *_test.lua)")
            }
            var passed = 0
            var failed = 0
            var results: [[String: Any]] = []
            var runner = LuaTestRunner()
            runner.pluginDirectories = global.pluginSearchPath
            if PostgresLocation.isURL(global.store) { runner.storeTemplate = global.store }
            runner.faults = try global.pluginConfig().faults
            runner.timeout = timeout == 0 ? nil : timeout
            LuaTestRunner.catchInterrupts()
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
                    // Each result as it comes, even into a pipe: a stuck test shows where it is.
                    fflush(nil)
                    results.append([
                        "file": outcome.file, "name": outcome.name, "passed": outcome.failure == nil,
                        "failure": outcome.failure ?? NSNull(),
                    ])
                }
            }
            if runner.interrupted && !global.json { print("interrupted (Ctrl-C): the tests after this one did not run") }
            if global.json {
                var object: [String: Any] = ["passed": passed, "failed": failed, "tests": results]
                if runner.interrupted { object["interrupted"] = true }
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print("\(passed) passed, \(failed) failed")
            }
            if runner.interrupted { throw ExitCode(130) }
            if failed > 0 { throw ExitCode(1) }
        }
    }
}
