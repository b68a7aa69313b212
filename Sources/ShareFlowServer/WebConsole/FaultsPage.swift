import Foundation
import Hummingbird
import ShareFlow

/// C3: fault rules (SPEC §15) from a page: arm one from a form named by §15's keys, list the
/// armed rules, remove one or clear those armed at run time (never the config file's), and
/// read the last injections. Rules armed here are the admin route's (`.runtime`).
extension WebConsole {
    func registerFaults(on router: Router<ServerRequestContext>) {
        page(.faults, on: router) { call in try faultsPage(call) }
        let back: @Sendable (ConsoleCall) -> ConsoleLink = { _ in ConsoleLink(.faults) }
        action(.faultsArm, on: router, back: back) { call in
            var fields: [String: FaultRule.Value] = [:]
            for key in FaultRule.keys {
                guard let v = call.form.text(key) else { continue }
                fields[key] = WebConsole.numericKeys.contains(key) ? .number(try WebConsole.number(v, key: key)) : .string(v)
            }
            let rule: FaultRule
            do { rule = try FaultRule(fields, name: "the rule") } catch let e as ShareFlowError { throw ConsoleProblem(e.message) }
            let id: Int
            do { id = try engine.faults.add(rule) } catch let e as ShareFlowError { throw ConsoleProblem(e.message) }
            return ActionOutcome("Armed rule \(id).")
        }
        action(.faultsRemove, on: router, back: back) { call in
            guard let id = Int(try call.required("id")) else { throw ConsoleProblem("id must be a rule's number") }
            if engine.faults.list().contains(where: { $0.id == id && $0.owner == .config }) {
                throw ConsoleProblem("rule \(id) is the config file's: it lasts as long as the server")
            }
            guard engine.faults.remove(id: id) else { throw ConsoleProblem("no armed rule has id \(id)") }
            return ActionOutcome("Removed rule \(id).")
        }
        action(.faultsClear, on: router, back: back) { _ in
            ActionOutcome("Cleared \(engine.faults.clear()) rules armed at run time.")
        }
    }

    /// The keys whose values are numbers.
    static let numericKeys: Set<String> = ["retryAfter", "probability", "seed", "after", "count", "latencyMs"]

    static func number(_ text: String, key: String) throws -> Double {
        guard let n = Double(text), n.isFinite else {
            throw ConsoleProblem("\(key) must be a number, got '\(Naming.printable(String(text.prefix(40))))'")
        }
        return n
    }

    private func faultsPage(_ call: ConsoleCall) throws -> ConsolePage {
        let armed = engine.faults.list().map { a -> HTML in
            let fields = a.rule.fields.compactMap { key, value -> HTML? in
                switch value {
                case .string(let s): return "<code>\(key)</code> = \(s)<br>"
                case .number(let n): return "<code>\(key)</code> = \(n == n.rounded() && abs(n) < 9e15 ? String(Int64(n)) : String(n))<br>"
                case .boolean(let b): return "<code>\(key)</code> = \(b ? "true" : "false")<br>"
                case .other: return nil
                }
            }
            let owner: String
            switch a.owner {
            case .config: owner = "config file"
            case .runtime: owner = "run time"
            case .plugin(let name): owner = "plugin \(name)"
            }
            let remove: HTML =
                a.owner == .config
                ? "<span class=\"muted\">kept</span>"
                : """
                <form method="post" action="\(ConsoleLink(.faultsRemove))" class="inline">\(call.csrfField)
                <input type="hidden" name="id" value="\(a.id)"><button type="submit" class="danger">Remove</button></form>
                """
            return "<tr><td>\(a.id)</td><td>\(owner)</td><td>\(fields)</td><td>\(remove)</td></tr>"
        }
        let history = engine.faults.history().suffix(100).reversed().map { i -> HTML in
            """
            <tr><td>\(WebConsole.time(Date(timeIntervalSince1970: i.time)))</td><td>\(i.rule)</td><td>\(i.fault?.rawValue ?? "latency")</td>
            <td>\(i.operation)</td><td>\(i.caller ?? "")</td><td>\(i.zone ?? "")</td><td>\(i.recordName ?? "")</td></tr>
            """
        }
        func select(_ key: String, _ options: [String], blank: String = "any") -> HTML {
            let items = [HTML("<option value=\"\">\(blank)</option>")] + options.map { o -> HTML in "<option>\(o)</option>" }
            return "<div class=\"field\"><label for=\"rule-\(key)\">\(key)</label><select id=\"rule-\(key)\" name=\"\(key)\">\(items)</select></div>"
        }
        func text(_ key: String, _ hint: String = "") -> HTML {
            "<div class=\"field\"><label for=\"rule-\(key)\">\(key)</label><input id=\"rule-\(key)\" name=\"\(key)\" placeholder=\"\(hint)\"></div>"
        }
        func number(_ key: String) -> HTML {
            "<div class=\"field\"><label for=\"rule-\(key)\">\(key)</label><input id=\"rule-\(key)\" name=\"\(key)\" inputmode=\"decimal\"></div>"
        }
        let operations = FaultRule.operations + FaultRule.subpaths.keys.sorted()
        return ConsolePage(
            title: "Faults",
            body: """
                <h1>Fault rules</h1>
                <h2>Arm a rule</h2>
                <form method="post" action="\(ConsoleLink(.faultsArm))" class="grid">\(call.csrfField)
                \(select("operation", operations))\(select("fault", FaultRule.Fault.allCases.map(\.rawValue), blank: "latency only"))
                \(select("environment", ["development", "production"]))\(select("database", ["private", "shared", "public"]))
                \(text("container", "glob"))\(text("zone", "glob"))\(text("recordType", "glob"))\(text("recordName", "glob"))\(text("caller", "email or userRecordID"))
                \(select("itemCode", FaultRule.ItemCode.allCases.map(\.rawValue)))\(select("when", FaultRule.When.allCases.map(\.rawValue)))
                \(number("retryAfter"))\(number("probability"))\(number("seed"))\(number("after"))\(number("count"))\(number("latencyMs"))
                <div><button type="submit">Arm</button></div></form>
                <h2>Armed</h2>
                <table><thead><tr><th scope="col">Id</th><th scope="col">Armed by</th><th scope="col">Rule</th><th scope="col">Action</th></tr></thead>
                <tbody>\(armed)</tbody></table>
                <form method="post" action="\(ConsoleLink(.faultsClear))" class="inline">\(call.csrfField)<button type="submit" class="quiet">Clear the rules armed at run time</button></form>
                <h2>Injected (newest first)</h2>
                <table><thead><tr><th scope="col">Time</th><th scope="col">Rule</th><th scope="col">Fault</th><th scope="col">Operation</th>
                <th scope="col">Caller</th><th scope="col">Zone</th><th scope="col">Record</th></tr></thead><tbody>\(history)</tbody></table>
                """
        )
    }
}
