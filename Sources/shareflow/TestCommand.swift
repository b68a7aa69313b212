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
            discussion: """
                A test file calls test(name, fn) or test.cases(name, rows, fn); expect.eq/truthy/falsy/code/raises/contains/allowed/denied \
                check values. Ends with 'N passed, N failed'. --coverage lists, before that line, the lines of plugin and script files \
                the tests ran, per file, with those not run (test files and the helpers beside them do not count).
                """
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: "Test files or folders (default: Plugins and Scripts).")
        var paths: [String] = []

        @Option(name: .long, help: "Seconds one test may run before it fails as timed out (0: no limit).")
        var timeout: Double = 10

        @Option(name: .long, help: "Run only the tests whose name contains PATTERN (plain text, case-sensitive).")
        var filter: String?

        @Flag(name: .long, help: "List the lines of plugin and script files the tests ran, per file, with the lines not run, and the total.")
        var coverage = false

        // Two values (a format, then a file): up to the next option, and what follows them is
        // more paths to test (`--coverage-report lcov out.info Plugins`).
        @Option(
            name: .long,
            parsing: .upToNextOption,
            help: ArgumentHelp(
                "Also write the coverage to FILE in FORMAT (only lcov: an lcov tracefile). Implies --coverage.",
                valueName: "FORMAT FILE"
            )
        )
        var coverageReport: [String] = []

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Fail (exit 1) when the lines run, over all covered files together, are below N percent (0-100). Implies --coverage.",
                valueName: "N"
            )
        )
        var coverageThreshold: Double?

        func validate() throws {
            guard timeout.isFinite, timeout >= 0, timeout <= 86_400 else {
                throw ValidationError("--timeout must be a number of seconds from 0 (no limit) to 86400, got \(timeout)")
            }
        }

        /// The coverage options' own errors exit 2, as bad input (SPEC §18 P5).
        private func coverageOutput() throws -> String? {
            guard !coverageReport.isEmpty else { return nil }
            guard coverageReport.count >= 2 else {
                throw CLIFailure(message: "--coverage-report takes a format and a file (--coverage-report lcov FILE)", code: 2)
            }
            guard coverageReport[0] == "lcov" else {
                throw CLIFailure(message: "--coverage-report: unknown format '\(coverageReport[0])' (the only format is lcov)", code: 2)
            }
            return coverageReport[1]
        }

        func run() throws {
            if filter?.isEmpty == true { throw CLIFailure(message: "--filter needs some text of the test names to run", code: 2) }
            let reportFile = try coverageOutput()
            if let threshold = coverageThreshold, !(0...100).contains(threshold) {
                throw CLIFailure(message: "--coverage-threshold must be a percentage from 0 to 100, got \(Self.number(threshold))", code: 2)
            }
            let measuring = coverage || reportFile != nil || coverageThreshold != nil
            let paths = self.paths + coverageReport.dropFirst(2)
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
            runner.filter = filter
            LuaTestRunner.catchInterrupts()
            // After the config's own state: only the tests' states (and their plugins') record.
            if measuring { CoverageReport.start() }
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
            if let filter, runner.matched == 0, failed == 0, !runner.interrupted {
                throw CLIFailure(message: "no tests match --filter \(filter)")
            }
            if runner.interrupted && !global.json { print("interrupted (Ctrl-C): the tests after this one did not run") }
            let report = measuring ? CoverageReport.gather(testFiles: files) : nil
            if let report, !global.json { print(report.text) }
            if global.json {
                var object: [String: Any] = ["passed": passed, "failed": failed, "tests": results]
                if runner.interrupted { object["interrupted"] = true }
                if let report { object["coverage"] = report.json }
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print("\(passed) passed, \(failed) failed")
            }
            if let report, let reportFile {
                do {
                    try Data(report.lcov.utf8).write(to: URL(fileURLWithPath: reportFile))
                } catch {
                    throw CLIFailure(message: "cannot write the coverage report to \(reportFile): \(error.localizedDescription)")
                }
            }
            if runner.interrupted { throw ExitCode(130) }
            if let report, let threshold = coverageThreshold, !report.reaches(threshold) {
                // After the summary: the line that says why the run failed is the last.
                fflush(nil)
                throw CLIFailure(
                    message: "coverage \(CoverageReport.percent(report.covered, of: report.lines)) (\(report.covered)/\(report.lines) lines) "
                        + "is below --coverage-threshold \(Self.number(threshold))%"
                )
            }
            if failed > 0 { throw ExitCode(1) }
        }

        static func number(_ x: Double) -> String {
            x == x.rounded() && abs(x) < 1e15 ? "\(Int(x))" : "\(x)"
        }
    }
}
