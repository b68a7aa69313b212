import ArgumentParser
import Foundation
import ShareFlow
import ShareFlowLua

extension ShareFlowCommand {
    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Run a Lua script against the store.",
            discussion: """
                The script sees `arg` as the standalone lua gives it and `require("shareflow")`. As with lua: `-` \
                (or no script, with standard input not a terminal) reads the script from standard input; \
                `-e CHUNK` runs a chunk first (repeatable); `-i` opens the console afterwards, on the same state.
                """
        )

        @OptionGroup var global: GlobalOptions

        @Option(name: .long, help: "Act as this user (email, phone or userRecordID) for shareflow.container(...).")
        var `as`: String?

        @Flag(name: .long, help: "Run the script with the plugins' sandbox (no io, os reduced to time, no debug).")
        var sandbox = false

        @Flag(name: .long, help: "Run on a throw-away copy of the store and print what would have changed; the store is not touched.")
        var dryRun = false

        @Option(name: .customShort("e"), help: ArgumentHelp("Run this chunk before the script (repeatable).", valueName: "chunk"))
        var execute: [String] = []

        @Flag(name: .customShort("i"), help: "Open the console after running the chunks and the script, on the same state.")
        var interactive = false

        @Argument(help: "The Lua script (- for standard input).")
        var script: String?

        @Argument(parsing: .captureForPassthrough, help: "Arguments passed to the script.")
        var arguments: [String] = []

        func run() throws {
            if interactive && dryRun {
                throw ValidationError("-i cannot be combined with --dry-run (a console's work cannot be rolled back at its end)")
            }
            // As lua: no script and nothing else to do reads standard input, or, on a terminal,
            // opens the console.
            var script = script
            var interactive = interactive
            if script == nil && execute.isEmpty && !interactive {
                if isatty(STDIN_FILENO) != 0 && !dryRun { interactive = true } else { script = "-" }
            }
            var invocation = RunInvocation(
                global: global.settings,
                as: `as`,
                sandbox: sandbox,
                dryRun: dryRun,
                script: script,
                arguments: arguments
            )
            invocation.chunks = execute
            invocation.interactive = interactive
            try invocation.run()
        }
    }
}

/// What `shareflow run` does, with its options' values.
struct RunInvocation {
    var global: GlobalSettings
    var `as`: String?
    var sandbox = false
    var dryRun = false
    /// Nil with `-e` or `-i` alone.
    var script: String?
    var arguments: [String] = []
    /// `-e` chunks, run in order before the script.
    var chunks: [String] = []
    /// `-i`: the console after the script, on its state.
    var interactive = false

    /// Reads `run [OPTIONS] SCRIPT` without the argument parser, or nil — and the parser
    /// reads it — whenever the line is anything else or might mean anything else: only the
    /// options' separate-value forms, each single-valued option once, no value that starts
    /// with '-' (the parser refuses those), a log level the parser accepts, nothing after the
    /// script, no help or completion flag anywhere.
    init?(commandLine: [String]) {
        guard commandLine.first == "run" else { return nil }
        var global = GlobalSettings()
        var seen = Set<String>()
        var who: String?
        var sandbox = false
        var dryRun = false
        var i = 1
        while i < commandLine.count, commandLine[i].hasPrefix("-") {
            let option = commandLine[i]
            switch option {
            case "--json", "--sandbox", "--dry-run":
                guard seen.insert(option).inserted else { return nil }
                if option == "--json" { global.json = true } else if option == "--sandbox" { sandbox = true } else { dryRun = true }
                i += 1
            case "--store", "--log-level", "--config", "--as", "--plugins":
                guard i + 1 < commandLine.count, option == "--plugins" || seen.insert(option).inserted else { return nil }
                let value = commandLine[i + 1]
                guard !value.isEmpty, !value.hasPrefix("-") else { return nil }
                switch option {
                case "--store": global.store = value
                case "--log-level": global.logLevel = value
                case "--config": global.config = value
                case "--as": who = value
                default: global.plugins.append(value)
                }
                i += 2
            default:
                return nil
            }
        }
        // Exactly the script, and a name the parser could not take for anything else.
        guard i == commandLine.count - 1, LogLevel(argument: global.logLevel) != nil else { return nil }
        let script = commandLine[i]
        guard !script.isEmpty, script != "help" else { return nil }
        self.init(global: global, as: who, sandbox: sandbox, dryRun: dryRun, script: script, arguments: [])
    }

    init(global: GlobalSettings, as who: String?, sandbox: Bool, dryRun: Bool, script: String?, arguments: [String]) {
        self.global = global
        self.as = who
        self.sandbox = sandbox
        self.dryRun = dryRun
        self.script = script
        self.arguments = arguments
    }

    func run() throws {
        // The engine, the plugins and the script's state live in `execute`: a failure
        // returns from it first, so every Lua state is closed (finalizers run) before exit.
        do {
            try execute { report in
                if global.json {
                    var object: [String: Any] = ["ok": true]
                    if let report { object["dryRun"] = report.json.merging(["store": global.store]) { a, _ in a } }
                    printJSON(object)
                }
            }
        } catch is Finished {
            // Under a leak checker: done, everything released on the way out.
        } catch let f as CLIFailure {
            guard global.json else { throw f }
            printJSON(["ok": false, "error": f.json])
            throw ExitCode(f.code)
        }
    }

    /// A successful run under a leak checker (LeakSanitizer, the `make sanitize` runs): it
    /// returns, releasing every object, instead of exiting with the plugins' states alive —
    /// a live object's weak-reference side table is reached only through its tagged refcount
    /// word, which the checker cannot read as a pointer, so it reported each as leaked.
    private struct Finished: Error {}
    private static let releasesEverythingAtExit =
        ProcessInfo.processInfo.environment["LSAN_OPTIONS"] != nil
        || ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil

    /// Runs the script, then `finish` with the dry run's report, then ends the process.
    private func execute(finish: (ChangeReport?) -> Void) throws -> Never {
        let config = try global.pluginConfig()
        let engine = try global.makeEngine(config: config)
        // A dry run touches nothing (SPEC §9): its decisions were never made, so they stay out
        // of the log every process on the store reads; `sf.decisions{}` shows the run's own.
        if dryRun { engine.policies.sharedLog = nil }
        let plugins: PluginManager
        do { plugins = try global.loadPlugins(into: engine, privateData: dryRun, config: config) } catch { throw CLIFailure(message: "\(error)") }
        let scriptFolder = script.map { PathName.folder(of: $0) } ?? ""
        let host = try ScriptHost(engine: engine, sandboxFolder: sandbox ? (scriptFolder.isEmpty ? "." : scriptFolder) : nil)
        host.plugins = plugins
        if let who = `as` {
            // Checked now, not at the script's first sf.container call.
            do {
                guard try engine.accounts.find(who) != nil else {
                    throw CLIFailure(
                        message:
                            "--as \(who): no account has this \(who.hasPrefix("_") ? "userRecordID" : who.contains("@") ? "email address" : "phone number") in store \(global.store)"
                    )
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
        /// The `-e` chunks in order, then the script.
        func runLua() throws {
            for chunk in chunks { try host.run(chunk, chunkName: "=(command line)") }
            if let script { try host.runFile(script, arguments: arguments) }
        }
        func runScript() throws {
            do {
                try runLua()
            } catch let error as LuaError {
                throw CLIFailure(lua: error)
            }
            guard interactive else { return }
            let code = try ShareFlowCommand.Repl.console(on: host)
            if code != 0 { throw ExitCode(code) }
        }
        /// A successful run ends here, its states still open: the script's state is closed
        /// (its finalizers run, as on any exit) and the store closed (a file store left whole,
        /// the WAL checkpointed into it), then the process exits without releasing the plugins'
        /// states or the engine. Plugins cannot set `__gc` (SPEC §8), so closing their states
        /// would run nothing anyone sees, and freeing every object of four states, the bindings
        /// and the store's caches was a sixth of a cold start.
        func end(_ report: ChangeReport?) throws -> Never {
            host.lua.close()
            engine.store.checkpoint()
            guard !Self.releasesEverythingAtExit else {
                finish(report)
                throw Finished()
            }
            engine.store.close()
            plugins.prepareForExit()
            finish(report)
            withExtendedLifetime((engine, plugins, host)) { Foundation.exit(EXIT_SUCCESS) }
        }
        guard dryRun else {
            do { try runScript() } catch {
                // The script's finalizers run now, while `host` is alive: left to
                // ScriptHost.deinit, a `__gc` calling a function bound to the host (sf.plugins,
                // sf.on, …) read an unowned reference to an object being destroyed and the
                // process crashed. Then the store is left whole, before the error is reported.
                host.lua.close()
                engine.store.checkpoint()
                throw error
            }
            try end(nil)
        }
        // SPEC §9: the whole script in one transaction, rolled back; nothing is copied and
        // nothing is left behind whichever way the script ends.
        struct RolledBack: Error {}
        var report: ChangeReport?
        do {
            try engine.store.write { _ in
                // The script's finalizers run inside the transaction, so what a `__gc` writes
                // is rolled back with the rest (closed after it, at exit or by ScriptHost.deinit,
                // the state's finalizers wrote to the real store) and, on success, is counted.
                defer { host.lua.close() }
                let before = try engine.snapshot()
                try runScript()
                host.lua.close()
                report = before.changes(to: try engine.snapshot())
                throw RolledBack()
            }
        } catch is RolledBack {}
        guard let report else { try end(nil) }
        if !global.json {
            let target = global.store == ":memory:" ? "the in-memory store" : global.store
            print(
                "dry run: nothing was written to \(target). The script would have made \(report.total) change\(report.total == 1 ? "" : "s")\(report.total == 0 ? "." : " (\(report.summary)):")"
            )
            for line in report.lines { print("  " + line) }
        }
        try end(report)
    }
}
