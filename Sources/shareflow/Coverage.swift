import CShareFlowSupport
import Foundation
import ShareFlow

/// What `shareflow test --coverage` reports: the lines of each plugin and script file the tests
/// ran, beside the lines that hold code (coverage.c records and compiles; this sorts and
/// prints).
///
/// A file counts when the tests ran any of it, except the tests themselves: `*_test.lua`, and
/// the helper modules beside them (any file in a test file's folder that is not a plugin's
/// folder, one with an `init.lua`, such as Tests/lua/helpers.lua). The host's own chunks are
/// not files and never count.
struct CoverageReport {
    struct File {
        var path: String
        /// The lines that hold code, sorted.
        var lines: [Int]
        /// Those of `lines` that ran.
        var run: Set<Int>

        var covered: Int { lines.count { run.contains($0) } }

        /// The lines that did not run, as ranges: lines with no code between two do not split
        /// a range (`40-42` may step over a comment).
        var notRun: [ClosedRange<Int>] {
            var ranges: [ClosedRange<Int>] = []
            var open: ClosedRange<Int>?
            for line in lines {
                if run.contains(line) {
                    if let o = open { ranges.append(o) }
                    open = nil
                } else {
                    open = open.map { $0.lowerBound...line } ?? line...line
                }
            }
            if let o = open { ranges.append(o) }
            return ranges
        }
    }

    var files: [File] = []
    /// Files the tests ran that cannot be measured (gone, or no longer compiling), with why.
    var unmeasured: [(path: String, reason: String)] = []

    var lines: Int { files.reduce(0) { $0 + $1.lines.count } }
    var covered: Int { files.reduce(0) { $0 + $1.covered } }

    /// Starts recording: every Lua state made from now on (the tests' own and every plugin's)
    /// records the lines it runs. Before the first state a test makes.
    static func start() { sf_coverage_start() }

    /// What the states recorded so far, less the tests of `testFiles` and their helpers.
    static func gather(testFiles: [String]) -> CoverageReport {
        let fm = FileManager.default
        let testFolders = Set(
            testFiles.map { PathName.folder(of: normalized($0)) }.filter {
                !fm.fileExists(atPath: ($0 as NSString).appendingPathComponent("init.lua"))
            }
        )
        var report = CoverageReport()
        for index in 0..<sf_coverage_file_count() {
            guard let source = sf_coverage_source(index).map({ String(cString: $0) }), source.hasPrefix("@") else { continue }
            let path = String(source.dropFirst())
            let name = normalized(path)
            if name.hasSuffix("_test.lua") || testFolders.contains(PathName.folder(of: name)) { continue }
            var count: Int32 = 0
            var message = [CChar](repeating: 0, count: 512)
            guard let found = sf_coverage_executable_lines(path, &count, &message, message.count) else {
                report.unmeasured.append((path, String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
                continue
            }
            defer { free(found) }
            let lines = (0..<Int(count)).map { Int(found[$0]) }
            let run = Set(lines.filter { sf_coverage_hit(index, Int32($0)) != 0 })
            report.files.append(File(path: path, lines: lines, run: run))
        }
        report.files.sort { $0.path < $1.path }
        report.unmeasured.sort { $0.path < $1.path }
        return report
    }

    /// `./Plugins/x/init.lua` and `Plugins/x/init.lua` are one file.
    private static func normalized(_ path: String) -> String {
        (path as NSString).standardizingPath
    }

    /// Percent with one decimal, rounded down: 99.96% is not shown as 100.0%.
    static func percent(_ covered: Int, of lines: Int) -> String {
        guard lines > 0 else { return "100.0%" }
        let tenths = covered * 1000 / lines
        return "\(tenths / 10).\(tenths % 10)%"
    }

    /// One line a file (`path  95.0%  (19/20)  not run: 31, 40-42`), then the total.
    var text: String {
        let width = max(files.map(\.path.count).max() ?? 0, "total".count)
        func pad(_ s: String) -> String { s + String(repeating: " ", count: max(width - s.count, 0)) }
        var out = files.map { file in
            let ranges = file.notRun.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)" }
            let head = "\(pad(file.path))  \(CoverageReport.percent(file.covered, of: file.lines.count))  (\(file.covered)/\(file.lines.count))"
            return ranges.isEmpty ? head : head + "  not run: " + ranges.joined(separator: ", ")
        }
        out += unmeasured.map { "\(pad($0.path))  not measured: \($0.reason)" }
        out.append("\(pad("total"))  \(CoverageReport.percent(covered, of: lines))  (\(covered)/\(lines))")
        return out.joined(separator: "\n")
    }

    /// An lcov tracefile (geninfo's format): a record per file, each line with code listed
    /// (DA:line,1 when it ran, DA:line,0 when not), then the counts.
    var lcov: String {
        var out = ""
        for file in files {
            out += "TN:\nSF:\(file.path)\n"
            for line in file.lines { out += "DA:\(line),\(file.run.contains(line) ? 1 : 0)\n" }
            out += "LF:\(file.lines.count)\nLH:\(file.covered)\nend_of_record\n"
        }
        return out
    }

    /// For `--json`.
    var json: [String: Any] {
        [
            "files": files.map { file in
                [
                    "file": file.path, "lines": file.lines.count, "covered": file.covered,
                    "notRun": file.lines.filter { !file.run.contains($0) },
                ] as [String: Any]
            },
            "unmeasured": unmeasured.map { ["file": $0.path, "reason": $0.reason] },
            "lines": lines, "covered": covered,
        ]
    }

    /// Whether the total reaches `threshold` percent (exactly: no rounding lets 99.96% pass 100).
    func reaches(_ threshold: Double) -> Bool {
        Double(covered) * 100 >= threshold * Double(lines)
    }
}
