import CLua
import CShareFlowSupport
import Foundation
import ShareFlow
import ShareFlowLua

/// The ShareFlow console (`shareflow repl`): evaluates Lua as the standalone `lua` does (an
/// expression prints its value; incomplete input continues), pretty-prints tables and
/// ShareFlow objects, completes names, and takes `:commands`.
public final class Console {
    public let host: ScriptHost
    public var historyFile: String?
    private var eventsOn = false
    private var failures = 0

    public enum Evaluation: Equatable {
        case incomplete
        case done(output: [String])
        case failed(String)
    }

    public init(host: ScriptHost) throws {
        self.host = host
        host.lua.trackCoroutines()
        try host.run(Console.prelude, chunkName: "=[console]")
        host.lua.push(function: "__console_members") { [unowned host] call in
            guard lua_getmetatable(call.L, 1) != 0 else { return 0 }
            call.state.push(static: "__name")
            lua_rawget(call.L, -2)
            let name = call.state.string(at: -1) ?? ""
            call.state.pop(2)
            let members = host.apiSurface[name] ?? []
            let methods = Set(host.methodNames[name] ?? [])
            call.state.push(strings: members)
            call.state.push(strings: members.filter { methods.contains($0) })
            return 2
        }
        host.lua.setGlobal("__console_members")
    }

    /// Who the console acts as, shown in the prompt.
    public var actingAs: String? { host.defaultSession }

    public var prompt: String { "shareflow\(actingAs.map { "(\($0))" } ?? "")> " }
    public let continuationPrompt = ">> "

    // MARK: Evaluating

    /// Evaluates a chunk: an expression prints its values; a statement runs.
    /// `line` is where the chunk starts in the input, so an error names the input's line.
    public func evaluate(_ source: String, line: Int = 1) -> Evaluation {
        let lua = host.lua
        let base = lua.top
        defer { lua.top = base }
        let lead = String(repeating: "\n", count: max(line - 1, 0))
        do {
            do {
                try lua.load(lead + "return " + source, chunkName: "=stdin")
            } catch let e as LuaError where e.kind == .syntax {
                do {
                    try lua.load(lead + source, chunkName: "=stdin")
                } catch let e as LuaError where e.kind == .syntax {
                    if e.message.hasSuffix("<eof>") { return .incomplete }
                    return .failed(e.message)
                }
            }
            lua.clearInterrupt()
            _ = sf_take_sigint()
            sf_set_interrupt_target(lua.limits)
            defer {
                sf_set_interrupt_target(nil)
                lua.clearInterrupt()
            }
            try lua.call(arguments: 0)
            let count = lua.top - base
            guard count > 0 else { return .done(output: []) }
            lua.getGlobal("__console_show_all")
            clua_insert(lua.L, base + 1)
            try lua.call(arguments: count, results: 1)
            return .done(output: [lua.string(at: -1) ?? ""])
        } catch let e as LuaError {
            return .failed(e.message.hasSuffix("interrupted") ? "interrupted" : e.description)
        } catch {
            return .failed("\(error)")
        }
    }

    /// Completion for the text before the cursor.
    public func complete(_ before: String) -> (start: Int, candidates: [String]) {
        let lua = host.lua
        let base = lua.top
        defer { lua.top = base }
        lua.getGlobal("__console_complete")
        lua.push(string: before)
        guard (try? lua.call(arguments: 1, results: 2)) != nil,
            case .integer(let start) = (try? lua.value(at: -2)) ?? .nil,
            case .table(let t) = (try? lua.value(at: -1)) ?? .nil
        else { return (before.count, []) }
        return (Int(start), t.array.compactMap(\.stringValue))
    }

    // MARK: Commands

    static let help = """
        Lua 5.4 with ShareFlow: `shareflow` (also `sf`) is loaded.
          an expression prints its value     1 + 1,  sf.accounts.list()
          a statement runs                   x = 10  (each entry is its own chunk: `local` ends with it)
          incomplete input continues on a >> prompt; Tab completes names; Up/Down browse history,
          Ctrl-R searches it; emacs keys edit the line (libedit; ~/.editrc is read)
          Ctrl-C interrupts a running statement; Ctrl-D (or :quit) leaves
        Commands:
          :help             this text
          :as WHO           act as WHO (email, phone or userRecordID) for sf.container(id)
          :plugins          the plugins found and which are loaded
          :reload [NAME]    reload the loaded plugins (or one) from disk, keeping the store
          :events           start or stop printing every event as it happens
          :decisions [N]    the last N policy decisions (default 10)
          :quit             leave
        """

    /// Runs a `:command`; returns the output, or nil for `:quit`.
    public func command(_ line: String) -> String? {
        let parts = line.dropFirst().split(separator: " ", maxSplits: 1).map(String.init)
        let name = parts.first ?? ""
        let argument = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : nil
        switch name {
        case "quit", "q", "exit": return nil
        case "help", "h", "?": return Console.help
        case "as":
            guard let who = argument, !who.isEmpty else {
                return actingAs.map { "acting as \($0)" } ?? "not acting as anyone; :as WHO"
            }
            do {
                guard let account = try host.engine.accounts.find(who) else { return fail("no account for '\(who)'") }
                host.defaultSession = account.email ?? account.phones.first ?? account.userRecordID
                return "acting as \(host.defaultSession!)"
            } catch { return fail("\(error)") }
        case "plugins":
            guard let plugins = host.plugins else { return "no plugins are managed here" }
            let infos = plugins.info()
            if infos.isEmpty { return "no plugins in \(plugins.directories.joined(separator: ", "))" }
            return infos.map { "\($0.loaded ? "●" : "○") \($0.name) \($0.version ?? "?")  \($0.description ?? "")" }.joined(separator: "\n")
        case "reload":
            guard let plugins = host.plugins else { return "no plugins are managed here" }
            do {
                let names = try plugins.reload(argument)
                return names.isEmpty ? "no plugins are loaded" : "reloaded: \(names.joined(separator: ", "))"
            } catch { return fail("\(error)") }
        case "events":
            eventsOn.toggle()
            if eventsOn {
                for event in EventKind.allCases {
                    host.engine.events.observe(event, priority: Int.min, label: "console:events") { ev in
                        Swift.print("  · \(Console.describe(ev))")
                        fflush(nil)
                    }
                }
                return "printing events (:events again to stop)"
            }
            host.engine.events.removeAll(labelPrefix: "console:events")
            return "events off"
        case "decisions":
            var limit = 10
            if let argument {
                guard let n = Int(argument), n > 0 else { return fail(":decisions takes a count of 1 or more, not '\(argument)'") }
                limit = n
            }
            let decisions = host.engine.policies.decisions(limit: limit)
            if decisions.isEmpty { return "no policy decisions yet" }
            return decisions.map { d in
                let ms = String(format: "%.2f", d.duration * 1000)
                return "#\(d.id) \(d.point) \(d.allow ? "allow" : "deny") by \(d.policies.joined(separator: ", ")) in \(ms) ms"
                    + (d.reasons.isEmpty ? "" : " — " + d.reasons.joined(separator: "; "))
            }.joined(separator: "\n")
        default:
            return fail("unknown command ':\(name)' (:help lists them)")
        }
    }

    private var lastCommandFailed = false
    private func fail(_ message: String) -> String {
        lastCommandFailed = true
        return "error: " + message
    }

    static func describe(_ ev: Event) -> String {
        var parts = [ev.name]
        if let c = ev.caller { parts.append("by \(c.email ?? c.userRecordID)") }
        if let s = ev.share { parts.append("share \"\(s.title ?? s.recordID.recordName)\"") }
        if let p = ev.participant {
            parts.append(
                "participant \(p.userIdentity.lookupInfo?.value ?? "?") (\(p.role.rawValue), \(p.permission.rawValue), \(p.acceptanceStatus.rawValue))"
            )
        }
        if let r = ev.reason { parts.append("reason \(r)") }
        if let f = ev.from, let t = ev.to { parts.append("\(f) → \(t)") }
        if let i = ev.identity { parts.append("identity \(i)") }
        if let o = ev.operation { parts.append("\(o): \(ev.items ?? 0) items, \(ev.failed ?? 0) failed") }
        return parts.joined(separator: " ")
    }

    // MARK: Loops

    /// The interactive console on a terminal. Returns the exit code.
    public func runInteractive(banner: Bool = true) -> Int32 {
        let editor = EditLineReader(history: loadHistory())
        editor.completer = { [unowned self] in complete($0) }
        sf_install_sigint()
        if banner {
            Swift.print("ShareFlow \(ShareFlowModule.version) console — Lua 5.4. :help for help, Ctrl-D to leave.")
        }
        var chunk = ""
        while true {
            fflush(nil)
            switch editor.readLine(prompt: chunk.isEmpty ? prompt : continuationPrompt) {
            case .endOfFile:
                return 0
            case .interrupt:
                chunk = ""
                continue
            case .line(let line):
                if chunk.isEmpty {
                    if line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
                    appendHistory(line)
                    if line.hasPrefix(":") {
                        guard let out = command(line.trimmingCharacters(in: .whitespaces)) else { return 0 }
                        Swift.print(out)
                        continue
                    }
                } else {
                    appendHistory(line)
                }
                chunk += (chunk.isEmpty ? "" : "\n") + line
                switch evaluate(chunk) {
                case .incomplete: continue
                case .done(let output): for line in output { Swift.print(line) }
                // The terminal echoed ^C: the word goes after it, spaced.
                case .failed(let message): Swift.print(message == "interrupted" ? " interrupted" : message)
                }
                chunk = ""
            }
        }
    }

    /// Piped standard input: no prompts, each statement's results printed, errors on standard
    /// error; exit code 1 if any statement failed.
    /// Piped with `json`: one JSON object per statement or command on standard output,
    /// `{"line":N,"ok":true,"output":[…]}` or `{"line":N,"ok":false,"error":"…"}`.
    public var jsonOutput = false

    private func emitJSON(line: Int, ok: Bool, output: [String] = [], error: String? = nil) {
        var object: [String: Any] = ["line": line, "ok": ok]
        if let error { object["error"] = error } else { object["output"] = output }
        if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) {
            Swift.print(String(decoding: data, as: UTF8.self))
        }
    }

    public func runScripted(lines: AnySequence<String>) -> Int32 {
        var chunk = ""
        var failed = false
        var number = 0
        var chunkStart = 1
        for line in lines {
            number += 1
            if chunk.isEmpty {
                chunkStart = number
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty { continue }
                if trimmed.hasPrefix(":") {
                    lastCommandFailed = false
                    guard let out = command(trimmed) else { break }
                    if jsonOutput {
                        if lastCommandFailed { failed = true }
                        emitJSON(
                            line: number,
                            ok: !lastCommandFailed,
                            output: lastCommandFailed ? [] : [out],
                            error: lastCommandFailed ? String(out.dropFirst(7)) : nil
                        )
                    } else if lastCommandFailed {
                        failed = true
                        FileHandle.standardError.write(Data((out + "\n").utf8))
                    } else {
                        Swift.print(out)
                    }
                    continue
                }
            }
            chunk += (chunk.isEmpty ? "" : "\n") + line
            switch evaluate(chunk, line: chunkStart) {
            case .incomplete: continue
            case .done(let output) where jsonOutput: emitJSON(line: chunkStart, ok: true, output: output)
            case .failed(let message) where jsonOutput:
                failed = true
                emitJSON(line: chunkStart, ok: false, error: message)
            case .done(let output): for line in output { Swift.print(line) }
            case .failed(let message):
                failed = true
                fflush(nil)
                FileHandle.standardError.write(Data((message + "\n").utf8))
            }
            fflush(nil)
            chunk = ""
        }
        if !chunk.isEmpty {
            failed = true
            FileHandle.standardError.write(Data("incomplete input at end: \(chunk.split(separator: "\n").first ?? "")\n".utf8))
        }
        fflush(nil)
        return failed ? 1 : 0
    }

    // MARK: History

    func loadHistory() -> [String] {
        guard let file = historyFile, let text = try? String(contentsOfFile: file, encoding: .utf8) else { return [] }
        return Array(text.split(separator: "\n").map(String.init).suffix(1000))
    }

    func appendHistory(_ line: String) {
        guard let file = historyFile else { return }
        if !FileManager.default.fileExists(atPath: file) {
            try? FileManager.default.createDirectory(atPath: PathName.folder(of: file), withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: file, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        guard let handle = FileHandle(forWritingAtPath: file) else { return }
        defer { try? handle.close() }
        _ = try? handle.seekToEnd()
        try? handle.write(contentsOf: Data((line + "\n").utf8))
    }
}
