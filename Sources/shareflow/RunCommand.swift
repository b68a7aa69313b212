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

        @Argument(help: "The Lua script.")
        var script: String

        @Argument(parsing: .captureForPassthrough, help: "Arguments passed to the script.")
        var arguments: [String] = []

        func run() throws {
            let engine: Engine
            do { engine = try global.makeEngine() } catch let f as CLIFailure { fail(f.message) }
            let plugins: PluginManager
            do { plugins = try global.loadPlugins(into: engine) } catch { fail("\(error)") }
            let scriptFolder = (script as NSString).deletingLastPathComponent
            let host = try ScriptHost(engine: engine, sandboxFolder: sandbox ? (scriptFolder.isEmpty ? "." : scriptFolder) : nil)
            host.plugins = plugins
            if let who = `as` {
                do { try host.setDefaultSession(who) } catch { fail("--as \(who): \(error)") }
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
                fail(error.description)
            }
        }
    }
}
