import Foundation
import Hummingbird
import ShareFlow

/// C3: the decision log (SPEC §18 P3) with its filters; each decision with its input (as
/// masked when logged), the policies consulted with their verdicts, reasons and `file:line`,
/// the shadow verdict (P6), and the command that asks it again with a trace (P4).
extension WebConsole {
    func registerDecisions(on router: Router<ServerRequestContext>) {
        page(.decisions, on: router) { call in try await decisionsPage(call) }
    }

    private func decisionsPage(_ call: ConsoleCall) async throws -> ConsolePage {
        let q = call.query
        let point = q.text("point")
        if let point, !PolicySet.points.contains(point) { throw ConsoleProblem("point must be one of \(PolicySet.points.joined(separator: ", "))") }
        let limitText = q.text("limit") ?? "50"
        guard let limit = Int(limitText), (1...1000).contains(limit) else { throw ConsoleProblem("limit must be a whole number from 1 to 1000") }
        let sinceText = q.text("since")
        let since = try sinceText.map { text -> Date in
            guard let d = DecisionFilter.time(text) else {
                throw ConsoleProblem("since must be an ISO 8601 time (2026-11-30T08:00:00Z) or an age (90s, 10m, 2h, 3d)")
            }
            return d
        }
        let denied = q["denied"] == "1"
        let flips = q["shadowFlips"] == "1"
        let callerText = q.text("caller")
        let engine = self.engine
        let decisions = try await thread.run { () -> [PolicyDecision] in
            let caller = try callerText.map { who in try engine.accounts.find(who)?.userRecordID ?? who }
            return engine.policies.decisions(
                DecisionFilter(limit: limit, point: point, denied: denied, since: since, shadowFlips: flips, caller: caller)
            )
        }
        let points =
            [HTML("<option value=\"\">any</option>")]
            + PolicySet.points.map { p -> HTML in "<option\(p == point ? " selected" : "")>\(p)</option>" }
        let rows = decisions.reversed().map(WebConsole.decision)
        return ConsolePage(
            title: "Decisions",
            body: """
                <h1>Policy decisions</h1>
                <form method="get" action="\(ConsoleLink(.decisions))" class="row">
                <label>Point<select name="point">\(points)</select></label>
                <label>Caller<input name="caller" value="\(callerText ?? "")" placeholder="email or userRecordID"></label>
                <label>Since<input name="since" value="\(sinceText ?? "")" placeholder="10m or an ISO time"></label>
                <label>Limit<input name="limit" type="number" min="1" max="1000" value="\(limitText)"></label>
                <label><span>Denied only</span><input type="checkbox" name="denied" value="1"\(denied ? " checked" : "")></label>
                <label><span>Shadow flips</span><input type="checkbox" name="shadowFlips" value="1"\(flips ? " checked" : "")></label>
                <button type="submit">Filter</button></form>
                <p class="muted">\(decisions.count) decisions, newest first.</p>
                \(rows)
                """
        )
    }

    private static func decision(_ d: PolicyDecision) -> HTML {
        let consulted = d.consulted.map { c -> HTML in
            """
            <tr><td>\(Naming.printable(c.policy))</td><td><span class="badge \(c.verdict == "allow" ? "allow" : "deny")">\(c.verdict)</span></td>
            <td>\(Naming.printable(c.reason ?? ""))</td><td><code>\(Naming.printable(c.location ?? ""))</code></td></tr>
            """
        }
        let deciding = d.consulted.last { $0.verdict != "allow" }
        let summary: HTML = """
            #\(d.id) \(WebConsole.time(d.time)) <strong>\(d.point)</strong> <span class="badge \(d.allow ? "allow" : "deny")">\(d.allow ? "allow" : "deny")</span>
            \(d.caller.map { " caller \($0)" } ?? "")\(deciding.map { " by \(Naming.printable($0.policy))\($0.reason.map { ": \(Naming.printable($0))" } ?? "")" } ?? "")
            \(d.shadow.map { s -> HTML in s.allow != d.allow ? " <span class=\"badge\">shadow \(s.allow ? "allow" : "deny")</span>" : HTML.empty } ?? HTML.empty)
            """
        let shadow: HTML =
            d.shadow.map { s -> HTML in
                "<p>Shadow verdict: \(s.allow ? "allow" : "deny")\(s.policy.map { " by \(Naming.printable($0))" } ?? "")\(s.reason.map { ": \(Naming.printable($0))" } ?? "")</p>"
            } ?? .empty
        let input = d.input.map(WebConsole.pretty) ?? ""
        return """
            <details class="decision"><summary>\(summary)</summary>
            <table><thead><tr><th scope="col">Policy</th><th scope="col">Verdict</th><th scope="col">Reason</th><th scope="col">Where</th></tr></thead>
            <tbody>\(consulted)</tbody></table>
            \(shadow)
            <p class="muted">Node \(d.node ?? "this one") · \(String(format: "%.3f", d.duration * 1000)) ms\(d.erased.isEmpty ? "" : " · masked: \(d.erased.joined(separator: ", "))")</p>
            <h3>Input</h3><pre>\(input)</pre>
            <p class="muted">Ask again with a trace: save the input as <code>input.json</code>, then
            <code>shareflow policy eval \(d.point) --input input.json --explain</code></p>
            </details>
            """
    }

    /// JSON text with sorted keys and indentation (as logged when it is not JSON).
    static func pretty(_ text: String) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed])
        else { return text }
        return String(decoding: data, as: UTF8.self)
    }
}
