import ArgumentParser
import CShareFlowSupport
import Foundation
import ShareFlow
import ShareFlowLua
import ShareFlowPostgres

extension ShareFlowCommand {
    /// `shareflow policy eval|replay` (SPEC §18 P4, P6): ask the configured policies a question
    /// by hand, or ask candidate versions the questions the log kept.
    struct Policy: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "policy",
            abstract: "Ask the policies one question (eval), or replay logged decisions against candidate plugins (replay).",
            subcommands: [Eval.self, Replay.self]
        )

        /// Bad input: one line, exit 2 (SPEC §18 P4).
        static func badInput(_ message: String) -> CLIFailure { CLIFailure(message: message, code: 2) }

        struct Eval: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "eval",
                abstract: "Run the configured policies at POINT on one input, changing nothing: exit 0 allow, 1 deny, 2 bad input.",
                discussion:
                    "The input is a decision's \"input\" as `shareflow decisions --json` prints it (a file, or - for standard input), or made from the store with --as WHO --share URL."
            )
            @OptionGroup var global: GlobalOptions
            @Argument(help: "The decision point: share.accept, participant.add, share.save, share.publicPermission or share.requestAccess.")
            var point: String
            @Option(name: .long, help: "The request as JSON: a file, or - for standard input.")
            var input: String?
            @Option(name: .long, help: "Ask as this account (email, phone or user record ID), about --share.")
            var `as`: String?
            @Option(name: .long, help: "The share's URL, with --as.")
            var share: String?
            @Flag(name: .long, help: "Print every policy consulted, its verdict, the lines it ran and the file:line that decided.")
            var explain = false
            @Flag(name: .long, help: "Ask at the current time, not at the input's \"time\" (when it was logged).")
            var now = false

            func run() throws {
                guard (input == nil) != (`as` == nil) else { throw Policy.badInput("give --input FILE (or -), or --as WHO with --share URL") }
                if `as` != nil, share == nil { throw Policy.badInput("--as needs --share URL") }
                try Policy.requireStore(global)
                guard let decisionPoint = DecisionPoint(name: point) else {
                    throw Policy.badInput(
                        "unknown decision point '\(Naming.printable(point))' (expected one of: \(PolicySet.points.joined(separator: ", ")))"
                    )
                }
                let engine = try global.makeEngine()
                defer { engine.store.close() }
                let request: PolicyRequest
                // A logged input is asked again at the time it was asked (an expiry decides as
                // it did), unless --now.
                defer { TestClock.reset() }
                if let input {
                    let bytes = try Policy.read(input)
                    if !now, let at = PolicyInput.time(of: bytes) { TestClock.set(at) }
                    do {
                        request = try engine.policyRequest(input: bytes, pointName: decisionPoint.name)
                    } catch let error as PolicyInputError {
                        throw Policy.badInput("--input \(input): \(error.message)")
                    }
                } else {
                    let account: Account?
                    do {
                        account = try `as`.flatMap { try engine.accounts.find($0) }
                    } catch let error as ShareFlowError {
                        throw Policy.badInput("--as \(Naming.printable(`as` ?? "")): \(error.message)")
                    }
                    guard let account else {
                        throw Policy.badInput("--as \(Naming.printable(`as` ?? "")): no account has this address in store \(global.store)")
                    }
                    do {
                        request = try engine.policyRequest(decisionPoint, caller: account, shareURL: share ?? "")
                    } catch let error as ShareFlowError where error.code == .unknownItem {
                        throw Policy.badInput("--share: \(error.message)")
                    }
                }
                if explain { Explanation.prepare() }
                // Nothing stays (SPEC §18 P4): the plugins' setup, their policies' writes and any
                // decision they cause are rolled back; their files go to a folder removed after.
                let plugins = try PluginManager(
                    engine: engine,
                    directories: global.pluginSearchPath,
                    config: try global.pluginConfig(),
                    privateDataDirectory: ()
                )
                defer { plugins.unloadAll() }
                let decision = try engine.withoutChanges { () -> (PolicyDecision, [String]) in
                    do {
                        try plugins.loadEnabled()
                    } catch {
                        throw Policy.badInput("the configured plugins do not load: \(error)")
                    }
                    return explain ? Explanation.traced { engine.evaluate(request) } : (engine.evaluate(request), [])
                }
                Policy.show(decision.0, explanation: explain ? decision.1 : nil, json: global.json)
                if !decision.0.allow { throw ExitCode(1) }
            }
        }

        struct Replay: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "replay",
                abstract: "Re-decide logged decisions with candidate plugin versions; list every verdict that flips (exit 1 when any does).",
                discussion:
                    "DIR is a plugins folder with the candidate version of every enabled plugin; the config (which plugins, their settings) is the same. Nothing is changed or logged."
            )
            @OptionGroup var global: GlobalOptions
            @Option(name: .long, help: "The plugins folder of the candidate versions.")
            var candidate: String
            @Option(name: .long, help: "Only decisions since T: an ISO 8601 time or an age (10m, 2h, 3d).")
            var since: String?
            @Option(name: .long, help: "At most N decisions, the latest (1 to 10000).")
            var limit = 1_000

            func validate() throws {
                guard (1...DecisionFilter.maxLimit).contains(limit) else {
                    throw ValidationError("--limit must be a whole number from 1 to \(DecisionFilter.maxLimit), got \(limit)")
                }
                if let since, DecisionFilter.time(since) == nil {
                    throw ValidationError("--since must be an ISO 8601 time or an age (90s, 10m, 2h, 3d), got '\(since)'")
                }
            }

            func run() throws {
                try Policy.requireStore(global)
                var isFolder: ObjCBool = false
                guard FileManager.default.fileExists(atPath: candidate, isDirectory: &isFolder), isFolder.boolValue else {
                    throw Policy.badInput("--candidate \(candidate): no such folder")
                }
                let engine = try global.makeEngine()
                defer { engine.store.close() }
                let config = try global.pluginConfig()
                // The candidate set is loaded whole before anything is asked: a plugin that
                // does not load is named, never a partial replay.
                let candidates = try PluginManager(engine: engine, directories: [candidate], config: config, privateDataDirectory: ())
                defer { candidates.unloadAll() }
                // Read before anything is asked: nothing the candidates do is logged anyway.
                let logged = engine.policies.decisions(DecisionFilter(limit: limit, since: since.flatMap { DecisionFilter.time($0) }))
                try engine.withoutChanges {
                    do {
                        try candidates.loadEnabled()
                    } catch {
                        throw Policy.badInput("--candidate \(candidate): \(error)")
                    }
                }
                var flips: [[String: Any]] = []
                var asked = 0
                var skipped = 0
                defer { TestClock.reset() }
                for d in logged {
                    guard let input = d.input else { continue }
                    // Asked again at the time it was asked: a policy reading the clock decides as it did.
                    TestClock.set(PolicyInput.time(of: Array(input.utf8)) ?? d.time)
                    let request: PolicyRequest
                    do {
                        request = try engine.policyRequest(input: Array(input.utf8))
                    } catch {
                        skipped += 1
                        continue
                    }
                    asked += 1
                    let again = engine.evaluate(request)
                    guard again.allow != d.allow else { continue }
                    flips.append([
                        "id": d.id, "point": d.point, "caller": d.caller ?? "", "was": d.allow ? "allow" : "deny",
                        "wasReason": d.reasons.first ?? "allowed", "now": again.allow ? "allow" : "deny",
                        "nowReason": again.reasons.first ?? "allowed",
                    ])
                }
                if global.json {
                    printJSON(["asked": asked, "skipped": skipped, "flips": flips])
                } else {
                    for f in flips {
                        print(
                            "#\(f["id"]!) \(f["point"]!) caller=\(f["caller"]!): \(f["was"]!) -> \(f["now"]!)  was: \(f["wasReason"]!)  now: \(f["nowReason"]!)"
                        )
                    }
                    print(
                        "\(asked) decisions replayed, \(flips.count) would flip\(skipped > 0 ? ", \(skipped) without a readable input skipped" : "")"
                    )
                }
                // A decision that could not be asked again might flip: the replay is not a pass.
                if !flips.isEmpty || skipped > 0 { throw ExitCode(1) }
            }
        }

        /// A store that is not there is named (exit 2), never made empty to answer from.
        static func requireStore(_ global: GlobalOptions) throws {
            guard !PostgresLocation.isURL(global.store), global.store != ":memory:" else { return }
            guard FileManager.default.fileExists(atPath: global.store) else {
                throw badInput("no store at \(global.store) (--store names an existing store)")
            }
        }

        static func read(_ input: String) throws -> [UInt8] {
            if input == "-" {
                var bytes: [UInt8] = []
                while bytes.count <= PolicyInput.maxBytes, let chunk = try? FileHandle.standardInput.read(upToCount: 65_536), !chunk.isEmpty {
                    bytes += chunk
                }
                return bytes
            }
            guard let handle = FileHandle(forReadingAtPath: input) else { throw badInput("--input \(input): cannot read it") }
            defer { try? handle.close() }
            return Array((try? handle.read(upToCount: PolicyInput.maxBytes + 1)) ?? Data())
        }

        static func show(_ d: PolicyDecision, explanation: [String]?, json: Bool) {
            if json {
                var o = DecisionText.json(d)
                o["input"] = nil
                if let explanation { o["trace"] = explanation }
                printJSON(o)
                return
            }
            let deciding = d.consulted.last { $0.verdict != "allow" }
            let shown = DecisionText.shown
            if d.allow {
                print("allow\(d.consulted.isEmpty ? " (no policy at \(d.point))" : "")")
            } else {
                print("deny by \(shown(deciding?.policy ?? "?")): \(shown(deciding?.reason ?? d.reasons.first ?? "denied"))")
            }
            if let explanation {
                for c in d.consulted {
                    print(
                        "  \(shown(c.policy)): \(c.verdict)\(c.reason.map { " (\(shown($0)))" } ?? "")\(c.location.map { " at \(shown($0))" } ?? "")"
                    )
                }
                for line in explanation { print("  " + line) }
            }
        }
    }
}

/// `--explain`'s trace of the lines a decision ran (SPEC §18 P4), from line coverage
/// (coverage.c): started before the plugins load, paused while they do, recording only while
/// the question is asked. Off, no state has a line hook: a decision costs nothing more.
enum Explanation {
    /// Starts recording for the states made from now on (call before the plugins load), paused.
    static func prepare() {
        sf_coverage_start()
        sf_coverage_pause(1)
    }

    /// Runs `body` recording the lines it runs; returns its decision and one line per file run:
    /// `ran PATH: 12, 14-16`.
    static func traced(_ body: () -> PolicyDecision) -> (PolicyDecision, [String]) {
        sf_coverage_pause(0)
        let decision = body()
        sf_coverage_pause(1)
        var lines: [String] = []
        for file in 0..<sf_coverage_file_count() {
            guard let source = sf_coverage_source(file).map({ String(cString: $0) }), source.hasPrefix("@") else { continue }
            let path = String(source.dropFirst())
            var count: Int32 = 0
            var message = [CChar](repeating: 0, count: 256)
            guard let code = sf_coverage_executable_lines(path, &count, &message, message.count) else { continue }
            defer { free(code) }
            let ran = (0..<Int(count)).map { Int(code[$0]) }.filter { sf_coverage_hit(file, Int32($0)) != 0 }
            guard !ran.isEmpty else { continue }
            lines.append("ran \(path): \(ranges(ran))")
        }
        return (decision, lines)
    }

    /// `1, 3-5` for [1, 3, 4, 5].
    static func ranges(_ lines: [Int]) -> String {
        var parts: [String] = []
        var start = lines[0]
        var end = lines[0]
        for line in lines.dropFirst() {
            if line == end + 1 {
                end = line
                continue
            }
            parts.append(start == end ? "\(start)" : "\(start)-\(end)")
            (start, end) = (line, line)
        }
        parts.append(start == end ? "\(start)" : "\(start)-\(end)")
        return parts.joined(separator: ", ")
    }
}
