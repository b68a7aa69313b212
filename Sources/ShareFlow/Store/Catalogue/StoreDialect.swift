/// How one database spells the catalogue's DDL (sql-kit's `SQLDialect`, in small): a value each
/// driver supplies. SQLite's is here (`StoreDialect.sqlite`), PostgreSQL's in its driver.
///
/// ```swift
/// let statements = StoreCatalogue.current.creation(.sqlite)   // CREATE TABLE shareflow_meta (…
/// ```
package struct StoreDialect: Sendable {
    package enum TriggerStyle: Sendable {
        /// One trigger per event, its statement inline (SQLite).
        case inline
        /// A PL/pgSQL function per table and purpose, and a trigger calling it (PostgreSQL).
        case function
    }

    package let integer: String
    package let real: String
    package let text: String
    /// A made `id` column whole: `INTEGER PRIMARY KEY` (SQLite's row ID).
    package let madeKey: String
    /// Whether tables may keep their rows in the key's B-tree (`WITHOUT ROWID`).
    package let withoutRowID: Bool
    /// The word for a table whose writes skip the write-ahead log, if any (`UNLOGGED`).
    package let unlogged: String?
    /// An expression giving a new random change tag, 12 hex digits.
    package let randomTag: String
    package let triggers: TriggerStyle
    /// Statements made before the catalogue's own in an empty database (a collation).
    package let preamble: [String]
    /// What an INSERT says, before VALUES, to write made IDs as given (`store copy`): an
    /// identity made ALWAYS (the decision log of a PostgreSQL store an earlier shareflow made)
    /// takes them so.
    package let keepingMadeIDs: String?

    package init(
        integer: String,
        real: String,
        text: String,
        madeKey: String,
        withoutRowID: Bool,
        unlogged: String?,
        randomTag: String,
        triggers: TriggerStyle,
        preamble: [String],
        keepingMadeIDs: String? = nil
    ) {
        self.keepingMadeIDs = keepingMadeIDs
        self.integer = integer
        self.real = real
        self.text = text
        self.madeKey = madeKey
        self.withoutRowID = withoutRowID
        self.unlogged = unlogged
        self.randomTag = randomTag
        self.triggers = triggers
        self.preamble = preamble
    }

    package static let sqlite = StoreDialect(
        integer: "INTEGER",
        real: "REAL",
        text: "TEXT",
        madeKey: "INTEGER PRIMARY KEY",
        withoutRowID: true,
        unlogged: nil,
        randomTag: "lower(hex(randomblob(6)))",
        triggers: .inline,
        preamble: []
    )

    package func type(_ kind: StoreCatalogue.Column.Kind) -> String {
        switch kind {
        case .integer: return integer
        case .real: return real
        case .text: return text
        }
    }

    /// A column's definition; `key` when it alone is its table's key (no NOT NULL written:
    /// the key says it, and the schema has always read so).
    package func column(_ column: StoreCatalogue.Column, key: Bool = false, made: Bool = false) -> String {
        if made { return "\(column.name) \(madeKey)" }
        var parts = [column.name, type(column.kind)]
        if key { parts.append("PRIMARY KEY") } else if !column.nullable { parts.append("NOT NULL") }
        if let value = column.defaultSQL { parts.append("DEFAULT \(value)") }
        if column.unique { parts.append("UNIQUE") }
        if let target = column.references {
            parts.append("REFERENCES \(target)")
            if column.onDeleteCascade { parts.append("ON DELETE CASCADE") }
        }
        return parts.joined(separator: " ")
    }

    package func createTable(_ table: StoreCatalogue.Table) -> String {
        let single: String? = {
            if case .given(let names) = table.key, names.count == 1 { return names[0] }
            return nil
        }()
        var lines = table.columns.map { c in
            column(c, key: c.name == single, made: table.key == .made && c.name == "id")
        }
        lines += table.uniques.map { "UNIQUE (\($0.joined(separator: ", ")))" }
        if case .given(let names) = table.key, names.count > 1 { lines.append("PRIMARY KEY (\(names.joined(separator: ", ")))") }
        let kind = table.unlogged ? (unlogged.map { "\($0) TABLE" } ?? "TABLE") : "TABLE"
        let rowID = table.withoutRowID && withoutRowID ? " WITHOUT ROWID" : ""
        return "CREATE \(kind) \(table.name) (\n    \(lines.joined(separator: ",\n    ")))\(rowID)"
    }

    package func addColumn(_ column: StoreCatalogue.Column, to table: StoreCatalogue.Table) -> String {
        "ALTER TABLE \(table.name) ADD COLUMN \(self.column(column))"
    }

    package func createIndex(_ index: StoreCatalogue.Index) -> String {
        "CREATE \(index.unique ? "UNIQUE " : "")INDEX \(index.name) ON \(index.table)(\(index.columns.joined(separator: ", ")))"
            + (index.condition.map { " WHERE \($0)" } ?? "")
    }

    /// The trigger's names as the schema has always had them: SQLite, one per event
    /// (`participant_insert_changes_share`); PostgreSQL, the function `table_purpose` and a
    /// trigger of that name when it fires on several events, `table_event_purpose` on one.
    package func triggerNames(_ trigger: StoreCatalogue.Trigger) -> (triggers: [String], function: String?) {
        func named(_ event: StoreCatalogue.Trigger.Event) -> String { "\(trigger.table)_\(event.rawValue.lowercased())_\(trigger.purpose)" }
        switch triggers {
        case .inline:
            return (trigger.events.map(named), nil)
        case .function:
            let name = trigger.events.count == 1 ? named(trigger.events[0]) : "\(trigger.table)_\(trigger.purpose)"
            return ([name], "\(trigger.table)_\(trigger.purpose)")
        }
    }

    /// The function's body as PostgreSQL keeps it (`prosrc`): what `store check` compares.
    package func functionBody(_ trigger: StoreCatalogue.Trigger) -> String {
        "\nBEGIN\n    \(statement(trigger));\n    RETURN NULL;\nEND "
    }

    package func statement(_ trigger: StoreCatalogue.Trigger) -> String {
        trigger.statement.replacingOccurrences(of: "{tag}", with: randomTag)
    }

    package func createTrigger(_ trigger: StoreCatalogue.Trigger) -> [String] {
        let names = triggerNames(trigger)
        switch triggers {
        case .inline:
            return zip(trigger.events, names.triggers).map { event, name in
                "CREATE TRIGGER \(name) AFTER \(event.rawValue) ON \(trigger.table) BEGIN\n    \(statement(trigger));\nEND"
            }
        case .function:
            let function = names.function ?? trigger.purpose
            return [
                "CREATE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS $$\(functionBody(trigger))$$",
                "CREATE TRIGGER \(names.triggers[0]) AFTER \(trigger.events.map(\.rawValue).joined(separator: " OR ")) ON \(trigger.table)\n"
                    + "    FOR EACH ROW EXECUTE FUNCTION \(function)()",
            ]
        }
    }
}
