import ArgumentParser
import Foundation
import ShareFlow
import ShareFlowLua

extension ShareFlowCommand {
    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run a Lua script against the store.",
            discussion: "The script sees `arg` as the standalone lua gives it and `require(\"shareflow\")`."
        )

        @OptionGroup var global: GlobalOptions

        @Option(name: .long, help: "Act as this user (email, phone or userRecordID) for shareflow.container(...).")
        var `as`: String?

        @Flag(name: .long, help: "Run the script with the plugins' sandbox (no io, os reduced to time, no debug).")
        var sandbox = false

        @Flag(name: .long, help: "Run on a throw-away copy of the store and print what would have changed; the store is not touched.")
        var dryRun = false

        @Argument(help: "The Lua script.")
        var script: String

        @Argument(parsing: .captureForPassthrough, help: "Arguments passed to the script.")
        var arguments: [String] = []

        func run() throws {
            // The engine, the plugins and the script's state live in `execute`: a failure
            // returns from it first, so every Lua state is closed (finalizers run) before exit.
            do { try execute() } catch let f as CLIFailure { fail(f.message, code: f.code) }
        }

        private func execute() throws {
            var global = self.global
            var scratch: URL?
            if dryRun {
                scratch = try prepareDryRun(&global)
            }
            defer { if let scratch { try? FileManager.default.removeItem(at: scratch) } }
            let engine: Engine
            engine = try global.makeEngine()
            // A clean exit leaves the store file whole: the WAL checkpointed into it.
            defer { engine.store.checkpoint() }
            let before = dryRun ? try engine.snapshot() : nil
            let plugins: PluginManager
            do { plugins = try global.loadPlugins(into: engine) } catch { throw CLIFailure(message: "\(error)") }
            let scriptFolder = (script as NSString).deletingLastPathComponent
            let host = try ScriptHost(engine: engine, sandboxFolder: sandbox ? (scriptFolder.isEmpty ? "." : scriptFolder) : nil)
            host.plugins = plugins
            if let who = `as` {
                // Checked now, not at the script's first sf.container call.
                do {
                    guard try engine.accounts.find(who) != nil else {
                        throw CLIFailure(message: "--as \(who): no account has this \(who.hasPrefix("_") ? "userRecordID" : who.contains("@") ? "email address" : "phone number") in store \(global.store)")
                    }
                    try host.setDefaultSession(who)
                } catch let e as ShareFlowError {
                    throw CLIFailure(message: "--as \(who): \(e.message)")
                }
            }
            if isatty(STDERR_FILENO) != 0 {
                // A long discovery shows where it is, on one terminal line.
                host.defaultDiscoveryProgress = { done, total in
                    let end = done == total ? "\n" : ""
                    FileHandle.standardError.write(Data("\rdiscovering users: \(done)/\(total) contacts\(end)".utf8))
                }
            }
            do {
                try host.runFile(script, arguments: arguments)
            } catch let error as LuaError {
                throw CLIFailure(message: error.description)
            }
            if let before {
                let changes = before.changes(to: try engine.snapshot())
                let target = self.global.store == ":memory:" ? "the in-memory store" : self.global.store
                print("dry run: nothing was written to \(target). The script would have made \(changes.count) change\(changes.count == 1 ? "" : "s")\(changes.isEmpty ? "." : ":")")
                for line in changes { print("  " + line) }
            }
        }

        /// Copies the store (and its WAL) to a scratch folder and points `global` at the copy,
        /// with plugin data there too. The original file is never opened.
        private func prepareDryRun(_ global: inout GlobalOptions) throws -> URL {
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("shareflow-dry-run-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            guard global.store != ":memory:" else { return scratch }
            let copy = scratch.appendingPathComponent("store.sqlite").path
            if FileManager.default.fileExists(atPath: global.store) {
                try FileManager.default.copyItem(atPath: global.store, toPath: copy)
                if FileManager.default.fileExists(atPath: global.store + "-wal") {
                    try FileManager.default.copyItem(atPath: global.store + "-wal", toPath: copy + "-wal")
                }
            }
            global.store = copy
            return scratch
        }
    }
}
