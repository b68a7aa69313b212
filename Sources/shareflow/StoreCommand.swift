import ArgumentParser
import Foundation
import ShareFlow
import ShareFlowPostgres

extension ShareFlowCommand {
    struct StoreCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "store",
            abstract: "Look after the store: its size and counts, a health check, a backup, a copy to another store, the change log's pruning.",
            subcommands: [Info.self, Check.self, Backup.self, Copy.self, Compact.self]
        )

        /// The store named by --store, which must exist (these commands never make one).
        static func open(_ global: GlobalOptions) throws -> Store { try open(global, at: global.store) }

        /// The store at `location`, which must exist.
        static func open(_ global: GlobalOptions, at location: String) throws -> Store {
            guard
                location == ":memory:" || PostgresLocation.isURL(location)
                    || FileManager.default.fileExists(atPath: location)
            else {
                throw CLIFailure(message: "cannot open store \(location): it does not exist")
            }
            do {
                return try global.openStore(at: location)
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
                print(
                    "  notifications: \(info.counts["subscriptions"] ?? 0) subscriptions, \(info.counts["deviceTokens"] ?? 0) device tokens, \(info.counts["notificationsQueued"] ?? 0) queued, \(info.counts["notificationsDropped"] ?? 0) dropped"
                )
            }
        }

        struct Compact: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract:
                    "Prune the change log's tombstones older than the config's sync.retentionDays (default 30) or --older-than, and close access requests older than sharing.requestTTLDays (default 30; 0 keeps them).",
                discussion: "A change token from before what is pruned is then changeTokenExpired: its client fetches again from the start."
            )
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
                // R42: access requests older than sharing.requestTTLDays close (0 keeps them).
                let ttl = try global.pluginConfig().requestTTLDays
                let closed = ttl > 0 ? try store.closeAccessRequests(olderThan: ttl * 86_400) : 0
                // SPEC §19 A4: blobs no record names, past assets.graceSeconds.
                let assets = try store.collectOrphanAssets(grace: try global.pluginConfig().assetGraceSeconds ?? Engine.Options().assetGraceSeconds)
                // SPEC §20 N3: device tokens nobody polled for notifications.tokenIdleDays.
                let idleDays = try global.pluginConfig().notifications["tokenIdleDays"] ?? NotificationOptions().tokenIdleDays
                let tokens = try store.pruneIdleDeviceTokens(idleDays: idleDays)
                if global.json {
                    return try StoreCommand.printJSON([
                        "pruned": removed, "closedRequests": closed, "removedAssets": assets.removed, "removedDeviceTokens": tokens,
                    ])
                }
                if tokens > 0 { print("store \(store.path): removed \(tokens) device token\(tokens == 1 ? "" : "s") idle \(idleDays) days") }
                print("store \(store.path): pruned \(removed) change log entr\(removed == 1 ? "y" : "ies") older than \(seconds) s")
                if closed > 0 { print("store \(store.path): closed \(closed) access request\(closed == 1 ? "" : "s") older than \(ttl) days") }
                if assets.removed > 0 {
                    print("store \(store.path): removed \(assets.removed) asset blob\(assets.removed == 1 ? "" : "s") no record names")
                }
            }
        }

        struct Check: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "check",
                abstract: "SQLite's integrity check and ShareFlow's invariants; exits 1 when anything is wrong."
            )
            @OptionGroup var global: GlobalOptions

            func run() throws {
                let store = try StoreCommand.open(global)
                defer { store.checkpoint() }
                let check = try store.check(maxRequesters: try global.pluginConfig().maxRequesters)
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

        struct Copy: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract:
                    "Copy the store FROM into TO, between SQLite and PostgreSQL either way, keeping every ID, change tag, share URL, token and change-log position.",
                discussion: """
                    FROM is read in one snapshot (servers may go on writing; the copy is FROM as it was when the copy began). \
                    TO is a new SQLite file or an empty PostgreSQL database (postgres://USER[:PASSWORD]@HOST[:PORT]/DB), \
                    written in one transaction: a failed copy leaves no file and an empty database. \
                    Plugin data folders are not part of a store: copy them yourself.
                    """
            )
            @OptionGroup var global: GlobalOptions
            @Argument(help: "The store to copy: an SQLite file or a PostgreSQL URL.")
            var from: String
            @Argument(help: "Where to copy it: a new SQLite file, or a PostgreSQL URL of an empty database.")
            var to: String

            func run() throws {
                if !PostgresLocation.isURL(to) {
                    guard !to.isEmpty, to != ":memory:", !to.hasPrefix("file:"), !to.hasSuffix("/") else {
                        throw CLIFailure(message: "cannot copy into '\(to)': name a new SQLite file or a PostgreSQL URL")
                    }
                    // lstat: a dangling symbolic link is a name taken too.
                    var info = stat()
                    guard lstat(to, &info) != 0 else {
                        throw CLIFailure(message: "cannot copy into \(to): it exists (copy into a new file)")
                    }
                }
                // FROM must be a store already: opening one that is not would make it (a new
                // file, a new schema in the database) and copy an empty store.
                if PostgresLocation.isURL(from) {
                    do {
                        guard try PostgresStore.holdsStore(from) else {
                            throw CLIFailure(
                                message: "cannot copy \(PostgresLocation.redacted(from)): its database holds no ShareFlow store (no schema shareflow)"
                            )
                        }
                    } catch let error as StoreError {
                        throw CLIFailure(message: error.description)
                    }
                } else {
                    guard from != ":memory:", !from.hasPrefix("file:") else {
                        throw CLIFailure(message: "cannot copy \(from): name a store file or a PostgreSQL URL")
                    }
                    guard let size = (try? FileManager.default.attributesOfItem(atPath: from))?[.size] as? NSNumber else {
                        throw CLIFailure(message: "cannot open store \(from): it does not exist")
                    }
                    guard size.intValue > 0 else { throw CLIFailure(message: "cannot copy \(from): it is an empty file, not a store") }
                }
                let source = try StoreCommand.open(global, at: from)
                defer { source.close() }
                let report: StoreCopyReport
                if PostgresLocation.isURL(to) {
                    let target = try StoreCommand.openTarget(global, to)
                    defer { target.close() }
                    report = try StoreCommand.copying { try source.copy(to: target) }
                } else {
                    report = try StoreCommand.copyToNewFile(source, to, global)
                }
                if global.json { return try StoreCommand.printJSON(report) }
                let total = report.rows.values.reduce(0, +)
                print("copied \(report.from) to \(report.to): \(total) rows")
                for kind in ["account", "zone", "record", "share", "participant", "credential"] {
                    print("  \(kind): \(report.rows[kind] ?? 0)")
                }
            }
        }

        /// A copy's destination, made by opening it (the schema migrated in, nothing else).
        static func openTarget(_ global: GlobalOptions, _ location: String) throws -> Store {
            do {
                return try global.openStore(at: location)
            } catch let error as StoreError {
                throw CLIFailure(message: error.description)
            }
        }

        /// Copies into a new SQLite file: written beside it under a temporary name, and given
        /// its name only once whole (never over a file made meanwhile), so a failed or killed
        /// copy leaves no store that looks complete.
        static func copyToNewFile(_ source: Store, _ path: String, _ global: GlobalOptions) throws -> StoreCopyReport {
            let partial = "\(path).copying-\(getpid())"
            removeAbandonedCopies(of: path)
            let files = [partial, partial + "-wal", partial + "-shm"]
            // The copy's blobs (SPEC §19 A4), renamed with the file.
            let partialAssets = partial + ".assets"
            for file in files + [partialAssets] { try? FileManager.default.removeItem(atPath: file) }
            defer { for file in files + [partialAssets] { try? FileManager.default.removeItem(atPath: file) } }
            // Ctrl-C, SIGTERM or SIGHUP mid-copy: the partial file goes too (SIGKILL cannot be
            // caught: the next copy into the same name removes what it left).
            let signals = [SIGINT, SIGTERM, SIGHUP].map { number -> DispatchSourceSignal in
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler {
                    for file in files { unlink(file) }
                    _exit(128 + number)
                }
                source.resume()
                return source
            }
            defer {
                for (number, source) in zip([SIGINT, SIGTERM, SIGHUP], signals) {
                    source.cancel()
                    signal(number, SIG_DFL)
                }
            }
            let target: Store
            do {
                target = try global.openStore(at: partial)
            } catch let error as StoreError {
                throw CLIFailure(message: "cannot copy into \(path): \(error.description.replacingOccurrences(of: partial, with: path))")
            }
            let report: StoreCopyReport
            do {
                report = try copying { try source.copy(to: target) }
            } catch let failure as CLIFailure {
                target.close()
                throw CLIFailure(message: failure.message.replacingOccurrences(of: partial, with: path))
            }
            target.close()
            guard link(partial, path) == 0 else {
                let why = errno == EEXIST ? "it was made while the copy ran (copy into a new file)" : String(cString: strerror(errno))
                throw CLIFailure(message: "cannot copy into \(path): \(why)")
            }
            if FileManager.default.fileExists(atPath: partialAssets) {
                let from = AssetBlobs(folder: URL(fileURLWithPath: partialAssets))
                if rename(partialAssets, path + ".assets") != 0 {
                    // A folder of that name was there (left by an older store): the blobs join it.
                    let to = AssetBlobs(folder: URL(fileURLWithPath: path + ".assets"))
                    do {
                        for sum in try from.checksums() { try from.carry(sum, to: to) }
                    } catch {
                        throw CLIFailure(message: "cannot copy the assets into \(path).assets: \(error)")
                    }
                }
            }
            return StoreCopyReport(from: report.from, to: path, rows: report.rows)
        }

        /// Removes what a copy into `path` killed with SIGKILL left (`PATH.copying-PID` of a
        /// process gone), so that no partial copy outlives the next attempt.
        static func removeAbandonedCopies(of path: String) {
            let url = URL(fileURLWithPath: path)
            let folder = url.deletingLastPathComponent().path
            let prefix = url.lastPathComponent + ".copying-"
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(prefix) {
                let rest = name.dropFirst(prefix.count)
                let digits = rest.prefix { $0.isNumber }
                guard let pid = pid_t(digits), ["", "-wal", "-shm", ".assets"].contains(String(rest.dropFirst(digits.count))) else { continue }
                if kill(pid, 0) != 0 && errno == ESRCH {
                    try? FileManager.default.removeItem(atPath: (folder as NSString).appendingPathComponent(name))
                }
            }
        }

        /// A copy's failure as one line.
        static func copying<T>(_ body: () throws -> T) throws -> T {
            do {
                return try body()
            } catch let error as ShareFlowError {
                throw CLIFailure(message: error.message)
            }
        }

        struct Backup: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "backup",
                abstract: "Copy the store to DEST with SQLite's online backup (writers may go on)."
            )
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
