import Foundation

/// The store's schema, written once (SPEC §16 M6): every table, column, index and trigger,
/// and the version that added each. Both drivers' DDL comes from it (`StoreDialect`), and so
/// do the steps that bring an older store up to `version`, the tables and columns `store
/// check` reads and `store copy` copies, and the objects a PostgreSQL schema may hold.
///
/// Versions up to 9 are history: SQLite stores reached 9 through hand-written migrations that
/// moved data (`Store.migrator`), and the catalogue holds what they left. From 10 on a step
/// is derived: a table, column or index whose `since` is the step's version is added. So a
/// new column is one line here, with its `since`:
///
/// ```swift
/// Column("title", .text, nullable: true, since: 12)   // in `share`'s columns; version 12
/// ```
///
/// One version line for both drivers: a SQLite and a PostgreSQL store at the same version
/// hold the same tables and columns.
package struct StoreCatalogue: Sendable {
    /// The schema version a store of this catalogue is at.
    package var version: Int
    package var tables: [Table]
    package var indexes: [Index]
    package var triggers: [Trigger]

    /// The version before which SQLite's migrations are hand-written (data moved with them).
    package static let derivedFrom = 10
    /// The tables version 9 had: the only ones that may leave `since` at its default.
    static let historyTables: Set<String> = [
        "shareflow_meta", "account", "account_email", "account_phone", "contact", "zone", "record", "share",
        "participant", "credential", "zone_change", "view_change", "feed", "feed_change",
    ]

    /// A column: its kind as both stores hold it, and how `store check` reads its values.
    package struct Column: Sendable {
        package enum Kind: Sendable { case integer, real, text }
        package let name: String
        package let kind: Kind
        package let nullable: Bool
        /// An SQL literal both dialects read (`0`, `''`, `'{}'`).
        package let defaultSQL: String?
        package let unique: Bool
        /// `table(column)`, with `onDeleteCascade`.
        package let references: String?
        package let onDeleteCascade: Bool
        /// The version that added it (its table's unless said); a column later than its
        /// table needs a default (or to be nullable): existing rows take it.
        package internal(set) var since: Int
        /// How `store check` and `store copy` read a value (the engine's own readers).
        package let read: StoredTable.Reader

        package init(
            _ name: String,
            _ kind: Kind,
            nullable: Bool = false,
            default defaultSQL: String? = nil,
            unique: Bool = false,
            references: String? = nil,
            cascade: Bool = false,
            since: Int? = nil,
            read: StoredTable.Reader? = nil
        ) {
            self.name = name
            self.kind = kind
            self.nullable = nullable
            self.defaultSQL = defaultSQL
            self.unique = unique
            self.references = references
            self.onDeleteCascade = cascade
            self.since = since ?? 0  // its table's: `Table` sets it
            self.read = read ?? Column.reader(kind, nullable: nullable)
        }

        static func reader(_ kind: Kind, nullable: Bool) -> StoredTable.Reader {
            switch (kind, nullable) {
            case (.integer, false): return StoredTable.integer
            case (.integer, true): return StoredTable.optionalInteger
            case (.real, false): return StoredTable.real
            case (.real, true): return StoredTable.optionalReal
            case (.text, false): return StoredTable.text
            case (.text, true): return StoredTable.optionalText
            }
        }
    }

    /// A table. Its key is `made` (an `id` the store hands out: SQLite's row ID, PostgreSQL's
    /// identity) or `given` (the columns named, their values written by ShareFlow).
    package struct Table: Sendable {
        package enum Key: Sendable, Equatable {
            case made
            case given([String])
        }
        package let name: String
        package let key: Key
        package var columns: [Column]
        /// UNIQUE constraints over several columns.
        package let uniques: [[String]]
        /// SQLite keeps the rows in the key's B-tree (no row ID): for tables keyed by text or
        /// several columns.
        package let withoutRowID: Bool
        /// PostgreSQL writes no WAL for it: what a crash may lose (rate buckets).
        package let unlogged: Bool
        /// Whether `store copy` copies its rows and `store check` reads them.
        package let kept: Bool
        package let since: Int

        package init(
            _ name: String,
            key: Key,
            columns: [Column],
            uniques: [[String]] = [],
            withoutRowID: Bool = false,
            unlogged: Bool = false,
            kept: Bool = true,
            since: Int = 9
        ) {
            self.name = name
            self.key = key
            self.columns = columns.map { column in
                var column = column
                if column.since == 0 { column.since = since }
                return column
            }
            self.uniques = uniques
            self.withoutRowID = withoutRowID
            self.unlogged = unlogged
            self.kept = kept
            self.since = since
        }

        /// The key's columns: the order rows are read in, and what names a row.
        package var keyColumns: [String] {
            if case .given(let names) = key { return names }
            return ["id"]
        }
    }

    package struct Index: Sendable {
        package let name: String
        package let table: String
        package let columns: [String]
        package let unique: Bool
        /// A partial index's condition.
        package let condition: String?
        package let since: Int

        package init(_ name: String, on table: String, _ columns: [String], unique: Bool = false, where condition: String? = nil, since: Int = 9) {
            self.name = name
            self.table = table
            self.columns = columns
            self.unique = unique
            self.condition = condition
            self.since = since
        }
    }

    /// A trigger: after `events` on `table`, run `statement`, where `{tag}` stands for a new
    /// random change tag (each dialect has its own function for it) and `NEW` is the row.
    package struct Trigger: Sendable {
        package enum Event: String, Sendable {
            case insert = "INSERT"
            case update = "UPDATE"
        }
        /// What it does, the end of its names (`participant_insert_changes_share`).
        package let purpose: String
        package let table: String
        package let events: [Event]
        package let statement: String
        package let since: Int

        package init(_ purpose: String, on table: String, after events: [Event], _ statement: String, since: Int = 9) {
            self.purpose = purpose
            self.table = table
            self.events = events
            self.statement = statement
            self.since = since
        }
    }

    package func table(_ name: String) -> Table? { tables.first { $0.name == name } }
}

extension StoreCatalogue {
    /// The statements that make this catalogue in an empty database, tables in dependency
    /// order (a table comes after those it references), then indexes, then triggers.
    package func creation(_ dialect: StoreDialect) -> [String] {
        tables.map { dialect.createTable($0) } + indexes.map { dialect.createIndex($0) } + triggers.flatMap { dialect.createTrigger($0) }
    }

    /// The statements that take a store at `version - 1` to `version`: what `since` says that
    /// version added, in catalogue order. Empty for a version that changed nothing.
    package func step(to version: Int, _ dialect: StoreDialect) -> [String] {
        var statements: [String] = []
        for table in tables {
            if table.since == version {
                // Made as it was then: its later columns come with their own steps.
                var then = table
                then.columns = table.columns.filter { $0.since <= version }
                statements.append(dialect.createTable(then))
            } else if table.since < version {
                for column in table.columns where column.since == version {
                    statements.append(dialect.addColumn(column, to: table))
                }
            }
        }
        statements += indexes.filter { $0.since == version }.map { dialect.createIndex($0) }
        statements += triggers.filter { $0.since == version }.flatMap { dialect.createTrigger($0) }
        return statements
    }

    /// The objects the steps after `version` make (tables, indexes, triggers, by kind and
    /// name): a store must not hold one already, made by someone else, or its upgrade fails
    /// half-way (SQLite) or is refused late.
    package func madeAfter(_ version: Int, _ dialect: StoreDialect) -> [(kind: String, name: String)] {
        guard version < self.version else { return [] }
        let steps = max(version + 1, StoreCatalogue.derivedFrom)...max(self.version, StoreCatalogue.derivedFrom)
        var made: [(kind: String, name: String)] = []
        for table in tables where steps.contains(table.since) { made.append(("table", table.name)) }
        for index in indexes where steps.contains(index.since) { made.append(("index", index.name)) }
        for trigger in triggers where steps.contains(trigger.since) {
            made += dialect.triggerNames(trigger).triggers.map { ("trigger", $0) }
        }
        return made
    }

    /// What the catalogue says of itself that would make a store it cannot make: a column
    /// added after its table without a default, a name given twice, an index or reference to
    /// what is not there. Empty when whole (CatalogueTests).
    package func flaws() -> [String] {
        var flaws: [String] = []
        var seen: Set<String> = []
        for table in tables {
            if !seen.insert(table.name).inserted { flaws.append("table \(table.name) is declared twice") }
            let names = table.columns.map(\.name)
            if Set(names).count != names.count { flaws.append("table \(table.name) declares a column twice") }
            for key in table.keyColumns where !names.contains(key) { flaws.append("table \(table.name): key column \(key) is not a column") }
            for unique in table.uniques {
                for c in unique where !names.contains(c) { flaws.append("table \(table.name): unique column \(c) is not a column") }
            }
            if table.since < StoreCatalogue.derivedFrom, !StoreCatalogue.historyTables.contains(table.name) {
                flaws.append("table \(table.name) is not one of version 9's: it needs `since`, the version that adds it")
            }
            for column in table.columns {
                let name = "\(table.name).\(column.name)"
                if column.since < table.since { flaws.append("\(name) is older than its table") }
                if column.since > table.since {
                    if !column.nullable, column.defaultSQL == nil || column.defaultSQL?.uppercased() == "NULL" {
                        flaws.append("\(name) was added after its table: it needs a default or to be nullable")
                    }
                    if column.unique || table.keyColumns.contains(column.name) {
                        flaws.append("\(name) was added after its table: a column added so cannot be unique or part of the key (add a unique index)")
                    }
                }
                if let value = column.defaultSQL, value.uppercased() != "NULL" {
                    let literal: Bool
                    switch column.kind {
                    case .integer: literal = Int64(value) != nil
                    case .real: literal = Double(value) != nil
                    case .text:
                        literal = value.count >= 2 && value.hasPrefix("'") && value.hasSuffix("'") && !value.dropFirst().dropLast().contains("'")
                    }
                    if !literal { flaws.append("\(name): its default \(value) is not a constant of its kind") }
                }
                if column.since > version || table.since > version {
                    flaws.append("\(table.name).\(column.name) is newer than the catalogue's version \(version)")
                }
                if let ref = column.references {
                    let target = String(ref.prefix { $0 != "(" })
                    guard let referenced = tables.firstIndex(where: { $0.name == target }),
                        let mine = tables.firstIndex(where: { $0.name == table.name })
                    else {
                        flaws.append("\(table.name).\(column.name) references \(target), not a table")
                        continue
                    }
                    if referenced > mine { flaws.append("\(table.name).\(column.name) references \(target), declared after it") }
                }
            }
        }
        for index in indexes {
            if !seen.insert(index.name).inserted { flaws.append("index \(index.name) has the name of another object") }
            guard let table = table(index.table) else {
                flaws.append("index \(index.name) is on \(index.table), not a table")
                continue
            }
            for c in index.columns {
                guard let column = table.columns.first(where: { $0.name == c }) else {
                    flaws.append("index \(index.name): \(c) is not a column of \(table.name)")
                    continue
                }
                if index.since < column.since {
                    flaws.append("index \(index.name) is older than its column \(c): its `since` is the version that adds it")
                }
            }
            if index.since < table.since { flaws.append("index \(index.name) is older than its table") }
            if index.since > version { flaws.append("index \(index.name) is newer than the catalogue's version \(version)") }
        }
        for trigger in triggers {
            guard let table = table(trigger.table) else {
                flaws.append("trigger \(trigger.purpose) is on \(trigger.table), not a table")
                continue
            }
            if trigger.since < table.since { flaws.append("trigger \(trigger.purpose) on \(table.name) is older than its table") }
            if trigger.since > version {
                flaws.append("trigger \(trigger.purpose) on \(table.name) is newer than the catalogue's version \(version)")
            }
        }
        return flaws
    }

    /// The tables `store check` reads and `store copy` copies, with the engine's readers.
    package var storedTables: [StoredTable] {
        tables.filter(\.kept).map { table in
            StoredTable(
                name: table.name,
                key: table.keyColumns[0],
                primaryKey: table.keyColumns,
                columns: table.columns.map { ($0.name, $0.read) }
            )
        }
    }

    /// The tables whose `id` the store makes: a driver's counter goes on after copied rows.
    package var madeIDs: [String] { tables.filter { $0.kept && $0.key == .made }.map(\.name) }
}
