import ArgumentParser
import Foundation
import ShareFlow

extension ShareFlowCommand {
    /// `shareflow decisions`: the policy decision log of every process on the store (SPEC §18 P3).
    struct Decisions: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "decisions",
            abstract: "Read the policy decision log every process on the store writes (run, serve, every node).",
            discussion:
                "Newest last. --since takes an ISO 8601 time or an age (90s, 10m, 2h, 3d). --json prints each decision whole, its input in the shape `policy eval --input` reads."
        )
        @OptionGroup var global: GlobalOptions
        @Option(
            name: .long,
            help: "Only decisions at this point (share.accept, participant.add, share.save, share.publicPermission, share.requestAccess)."
        )
        var point: String?
        @Flag(name: .long, help: "Only denials.")
        var denied = false
        @Option(name: .long, help: "Only decisions since T: an ISO 8601 time, or an age such as 10m, 2h, 3d.")
        var since: String?
        @Option(name: .long, help: "Only this caller's decisions: an email, phone or user record ID.")
        var caller: String?
        @Flag(name: .long, help: "Only decisions where the shadow candidates (policies.shadow) disagreed.")
        var shadowFlips = false
        @Option(name: .long, help: "At most N decisions, the latest (1 to 10000).")
        var limit = 20

        func validate() throws {
            guard (1...DecisionFilter.maxLimit).contains(limit) else {
                throw ValidationError("--limit must be a whole number from 1 to \(DecisionFilter.maxLimit), got \(limit)")
            }
            if let point, DecisionPoint(name: point) == nil {
                throw ValidationError("--point: unknown decision point '\(point)' (expected one of: \(PolicySet.points.joined(separator: ", ")))")
            }
            if let since, DecisionFilter.time(since) == nil {
                throw ValidationError(
                    "--since must be an ISO 8601 time (2026-11-30T08:00:00Z) or an age (90s, 10m, 2h, 3d up to 100 years), got '\(since)'"
                )
            }
        }

        func run() throws {
            try Policy.requireStore(global)
            let engine = try global.makeEngine()
            defer { engine.store.close() }
            // An address names its account's user record ID, as --as does elsewhere.
            let callerID = try caller.map { who in try engine.accounts.find(who)?.userRecordID ?? who }
            let filter = DecisionFilter(
                limit: limit,
                point: point,
                denied: denied,
                since: since.flatMap { DecisionFilter.time($0) },
                shadowFlips: shadowFlips,
                caller: callerID
            )
            let found = engine.policies.decisions(filter)
            if global.json {
                printJSON(["decisions": found.map(DecisionText.json)])
                return
            }
            if found.isEmpty { print("no decisions match") }
            for d in found { print(DecisionText.line(d)) }
        }
    }
}

/// A decision as the CLI shows it: one line, or JSON.
enum DecisionText {
    /// Text a policy or a caller wrote (a reason may quote a title), on one line with no
    /// control characters: it cannot forge a line of the log or steer the terminal.
    static func shown(_ text: String) -> String { Naming.printable(text) }

    static func line(_ d: PolicyDecision) -> String {
        let time = ISO8601DateFormatter().string(from: d.time)
        var line = "#\(d.id) \(time) \(d.point) \(d.allow ? "allow" : "DENY")"
        if let caller = d.caller { line += " caller=\(caller)" }
        if let share = d.share { line += " share=\(share.recordName)@\(share.zoneName)" }
        if let deciding = d.consulted.last(where: { $0.verdict != "allow" }) {
            line += " by \(shown(deciding.policy))"
            if let location = deciding.location { line += " (\(shown(location)))" }
            if let reason = deciding.reason { line += ": \(shown(reason))" }
        }
        if let shadow = d.shadow, shadow.allow != d.allow {
            line += " [shadow: \(shadow.allow ? "allow" : "deny")\(shadow.reason.map { ": \(shown($0))" } ?? "")]"
        }
        return line
    }

    static func json(_ d: PolicyDecision) -> [String: Any] {
        var o: [String: Any] = [
            "id": d.id, "point": d.point, "allow": d.allow, "reasons": d.reasons, "policies": d.policies,
            "duration": d.duration, "time": ISO8601DateFormatter().string(from: d.time),
            "consulted": d.consulted.map { c -> [String: Any] in
                var o: [String: Any] = ["policy": c.policy, "verdict": c.verdict]
                if let r = c.reason { o["reason"] = r }
                if let l = c.location { o["location"] = l }
                return o
            },
        ]
        if let v = d.caller { o["caller"] = v }
        if let v = d.container { o["container"] = v }
        if let v = d.environment { o["environment"] = v }
        if let v = d.node { o["node"] = v }
        if let s = d.share { o["share"] = ["recordName": s.recordName, "zoneName": s.zoneName, "ownerName": s.ownerName] }
        if let input = d.input, let object = try? JSONSerialization.jsonObject(with: Data(input.utf8)) { o["input"] = object }
        if !d.erased.isEmpty { o["erased"] = d.erased }
        if let s = d.shadow {
            var shadow: [String: Any] = ["allow": s.allow]
            if let p = s.policy { shadow["policy"] = p }
            if let r = s.reason { shadow["reason"] = r }
            o["shadow"] = shadow
        }
        return o
    }
}
