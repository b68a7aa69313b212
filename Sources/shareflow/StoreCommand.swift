import ArgumentParser
import Foundation
import ShareFlow

extension ShareFlowCommand {
    struct StoreCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "store",
            abstract: "Look after the store: its size and counts, a health check, a backup, the change log's pruning.",
            subcommands: [Info.self, Check.self, Backup.self, Compact.self]
        )

        /// The store named by --store, which must exist (these commands never make one).
        static func open(_ global: GlobalOptions) throws -> Store {
            guard global.store == ":memory:" || PostgresLocation.isURL(global.store)
                    || FileManager.default.fileExists(atPath: global.store) else {
                throw CLIFailure(message: "cannot open store \(global.store): it does not exist")
            }
            do {
                return try global.openStore()
            } catch let error as StoreError {
                throw CLIFailure(message: error.description)
            }
        }

        static func printJSON<T: Encodable>(_ value: T) throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(value), as: UTF8.self))
        }

        struct Info: ParsableCommand {
            static let configuration = CommandConfiguration(commandName: "info", abstract: "Schema version, file sizes and row counts.")
            @OptionGroup var global: GlobalOptions

            func run() throws {
                let store = try StoreCommand.open(global)
                defer { store.checkpoint() }
                let info = try store.info()
                if global.json { return try StoreCommand.printJSON(info) }
                print("store \(info.path)")
                print("  schema version \(info.schemaVersion)")
                print("  \(info.fileBytes) bytes, \(info.walBytes) bytes in the write-ahead log")
                for kind in ["accounts", "zones", "records", "shares", "participants"] {
                    print("  \(kind): \(info.counts[kind] ?? 0)")
                }
                print("  change log: \(info.changeLog["entries"] ?? 0) entries, \(info.changeLog["tombstones"] ?? 0) tombstones")
            }
        }

        struct Compact: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Prune the change log's tombstones older than the config's sync.retentionDays (default 30) or --older-than.",
                discussion: "A change token from before what is pruned is then changeTokenExpired: its client fetches again from the start.")
            @OptionGroup var global: GlobalOptions
            @Option(name: .customLong("older-than"), help: "Prune tombstones older than this many seconds (instead of the config's retention).")
            var olderThan: Double?

            func run() throws {
                if let olderThan, !(olderThan.isFinite && olderThan >= 0) {
                    throw CLIFailure(message: "--older-than must be a number of seconds ≥ 0, not \(olderThan)")
                }
                let seconds = try olderThan ?? global.pluginConfig().retentionDays * 86_400
                let store = try StoreCommand.open(global)
                defer { store.checkpoint() }
                let removed = try store.compactChangeLog(olderThan: seconds)
                if global.json { return try StoreCommand.printJSON(["pruned": removed]) }
                print("store \(store.path): pruned \(removed) change log entr\(removed == 1 ? "y" : "ies") older than \(seconds) s")
            }
        }

        struct Check: ParsableCommand {
            static let configuration = CommandConfiguration(commandName: "check", abstract: "SQLite's integrity check and ShareFlow's invariants; exits 1 when anything is wrong.")
            @OptionGroup var global: GlobalOptions

            func run() throws {
                let store = try StoreCommand.open(global)
                defer { store.checkpoint() }
                let check = try store.check()
                if global.json {
                    try StoreCommand.printJSON(check)
                } else if check.isHealthy {
                    print("store \(store.path): ok")
                    for line in check.notes { print("  note: \(line)") }
                } else {
                    print("store \(store.path): \(check.problems.count + (check.integrity == ["ok"] ? 0 : check.integrity.count)) problem(s)")
                    for line in check.integrity where line != "ok" { print("  integrity: \(line)") }
                    for line in check.problems { print("  \(line)") }
                    for line in check.notes { print("  note: \(line)") }
                }
                if !check.isHealthy { throw ExitCode(1) }
            }
        }

        struct Backup: ParsableCommand {
            static let configuration = CommandConfiguration(commandName: "backup", abstract: "Copy the store to DEST with SQLite's online backup (writers may go on).")
            @OptionGroup var global: GlobalOptions
            @Argument(help: "The backup file to make (must not exist).")
            var destination: String

            func run() throws {
                let store = try StoreCommand.open(global)
                defer { store.checkpoint() }
                try store.backup(to: destination)
                if global.json {
                    try StoreCommand.printJSON(["store": store.path, "backup": destination])
                } else {
                    print("backed up \(store.path) to \(destination)")
                }
            }
        }
    }
}
