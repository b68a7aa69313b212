import ArgumentParser
import Foundation
import ShareFlow
import ShareFlowLua

extension ShareFlowCommand {
    struct Plugins: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "plugins",
            abstract: "List, check and reload plugins.",
            subcommands: [List.self, Check.self, Reload.self]
        )

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "List the plugins found, with version and whether the config turns them on."
            )
            @OptionGroup var global: GlobalOptions

            func run() throws {
                let manager = PluginManager(
                    engine: Engine(store: try Store(path: ":memory:")),
                    directories: global.pluginSearchPath,
                    config: try global.pluginConfig()
                )
                let infos = manager.info()
                if global.json {
                    let list = infos.map {
                        [
                            "name": $0.name, "version": $0.version ?? "", "description": $0.description ?? "",
                            "folder": $0.folder, "enabled": $0.enabled,
                        ] as [String: Any]
                    }
                    print(
                        String(
                            decoding: try JSONSerialization.data(withJSONObject: list, options: [.sortedKeys, .withoutEscapingSlashes]),
                            as: UTF8.self
                        )
                    )
                    return
                }
                if infos.isEmpty { print("no plugins in \(global.pluginSearchPath.joined(separator: ", "))") }
                for info in infos {
                    let name = info.name.padding(toLength: max(22, info.name.count + 1), withPad: " ", startingAt: 0)
                    let version = (info.version ?? "?").padding(toLength: 8, withPad: " ", startingAt: 0)
                    print("\(name)\(version)\(info.enabled ? "on " : "off") \(info.description ?? "(init.lua does not load)")")
                }
            }
        }

        struct Check: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "check",
                abstract: "Check plugins: syntax, structure, config schema and values, setup (on a scratch store)."
            )
            @OptionGroup var global: GlobalOptions
            @Argument(help: "Plugin names (default: all found).")
            var names: [String] = []

            func run() throws {
                let manager = PluginManager(
                    engine: Engine(store: try Store(path: ":memory:")),
                    directories: global.pluginSearchPath,
                    config: try global.pluginConfig()
                )
                let names = self.names.isEmpty ? manager.available().map(\.name) : self.names
                var failed = 0
                var report: [[String: Any]] = []
                for name in names {
                    let problems = manager.check(name)
                    if !problems.isEmpty { failed += 1 }
                    report.append(["name": name, "ok": problems.isEmpty, "problems": problems])
                    if global.json { continue }
                    if problems.isEmpty { print("ok    \(name)") } else { for p in problems { print("FAIL  \(p)") } }
                }
                // A config entry no plugin answers to: that plugin is off although the file
                // means to configure it (and `run` refuses the file).
                var configProblems: [String] = []
                for (name, suggestion) in manager.unknownConfigNames() {
                    let hint = suggestion.map { "; did you mean '\($0)'?" } ?? ""
                    configProblems.append(
                        "config \(global.configPath ?? "file"): plugin '\(name)' is not in \(global.pluginSearchPath.joined(separator: ", "))\(hint)"
                    )
                }
                if global.json {
                    let object: [String: Any] = [
                        "plugins": report, "config": configProblems,
                        "passed": names.count - failed, "failed": failed + configProblems.count,
                    ]
                    print(
                        String(
                            decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]),
                            as: UTF8.self
                        )
                    )
                } else {
                    for p in configProblems { print("FAIL  \(p)") }
                    print("\(names.count - failed) passed, \(failed + configProblems.count) failed")
                }
                if failed > 0 || !configProblems.isEmpty { throw ExitCode(1) }
            }
        }

        struct Reload: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "reload",
                abstract: "Load the enabled plugins, then reload them from disk, as the console's :reload does.",
                discussion:
                    "A one-shot process has nothing to keep between runs; this shows that every enabled plugin unloads and loads again cleanly against the store. In a long-lived console, :reload does the same without losing state."
            )
            @OptionGroup var global: GlobalOptions
            @Argument(help: "Plugin names (default: every enabled plugin).")
            var names: [String] = []

            func run() throws {
                // Reloading is a check: it makes no store (nor plugin data beside one) where
                // there is none.
                var global = self.global
                if global.store != ":memory:" && !FileManager.default.fileExists(atPath: global.store) { global.store = ":memory:" }
                let engine: Engine
                engine = try global.makeEngine()
                defer { engine.store.checkpoint() }
                let manager = try global.loadPlugins(into: engine)
                let reloaded = names.isEmpty ? try manager.reload() : try names.flatMap { try manager.reload($0) }
                if global.json {
                    printJSON(["reloaded": reloaded])
                } else {
                    print(reloaded.isEmpty ? "no plugins are enabled" : "reloaded: \(reloaded.joined(separator: ", "))")
                }
            }
        }
    }
}
