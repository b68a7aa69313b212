import ArgumentParser
import Foundation
import ShareFlow
import ShareFlowConsole
import ShareFlowLua

extension ShareFlowCommand {
    struct Repl: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "repl",
            abstract: "The ShareFlow console: Lua with the engine loaded.",
            discussion:
                "On a terminal: line editing, history, Tab completion, Ctrl-C interrupts. With standard input piped: runs the lines as a script console, printing each result; exit 1 if any statement failed."
        )

        @OptionGroup var global: GlobalOptions

        @Option(name: .long, help: "Act as this user (email, phone or userRecordID) for shareflow.container(id).")
        var `as`: String?

        @Option(name: .long, help: "History file (default: $XDG_STATE_HOME/shareflow/history, else $HOME/.shareflow_history).")
        var history: String?

        @Flag(name: .long, help: "Keep no history.")
        var noHistory = false

        /// `$XDG_STATE_HOME/shareflow/history` when that is set, else `$HOME/.shareflow_history`
        /// (the environment's home, not the password file's).
        static func defaultHistoryFile() -> String {
            let env = ProcessInfo.processInfo.environment
            if let state = env["XDG_STATE_HOME"], state.hasPrefix("/") {
                return (state as NSString).appendingPathComponent("shareflow/history")
            }
            let home = env["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
            return (home as NSString).appendingPathComponent(".shareflow_history")
        }

        /// The console on a host a script ran in (`run -i`): interactive on a terminal, the
        /// lines of standard input otherwise. Its exit code.
        static func console(on host: ScriptHost) throws -> Int32 {
            let console = try Console(host: host)
            return isatty(STDIN_FILENO) != 0
                ? console.runInteractive()
                : console.runScripted(lines: AnySequence { AnyIterator { readLine(strippingNewline: true) } })
        }

        func run() throws {
            let engine: Engine
            engine = try global.makeEngine()
            defer { engine.store.checkpoint() }
            let plugins: PluginManager
            do { plugins = try global.loadPlugins(into: engine) } catch { throw CLIFailure(message: "\(error)") }
            let host = try ScriptHost(engine: engine)
            host.plugins = plugins
            let console = try Console(host: host)
            if let who = `as` {
                let answer = console.command(":as \(who)") ?? ""
                if answer.hasPrefix("error:") { throw CLIFailure(message: "--as \(who): \(answer.dropFirst(7))") }
            }
            let interactive = isatty(STDIN_FILENO) != 0
            console.jsonOutput = global.json && !interactive
            if interactive && !noHistory {
                console.historyFile = history ?? Repl.defaultHistoryFile()
            }
            let code =
                interactive
                ? console.runInteractive()
                : console.runScripted(lines: AnySequence { AnyIterator { readLine(strippingNewline: true) } })
            if code != 0 { throw ExitCode(code) }
        }
    }
}
