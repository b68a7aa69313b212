import Foundation
import GRDB

/// What `shareflow store copy` copied: rows by table.
public struct StoreCopyReport: Sendable, Codable {
    /// The store copied, as `Store.path` names it.
    public let from: String
    /// The store copied into, as `Store.path` names it.
    public let to: String
    /// Rows read from each table of the source, by table name.
    public let rows: [String: Int]

    /// A report of `rows` copied from `from` to `to`.
    public init(from: String, to: String, rows: [String: Int]) {
        self.from = from
        self.to = to
        self.rows = rows
    }
}

extension Store {
    /// Copies this store into `destination`, row for row (SPEC §16 M3): every ID, change tag,
    /// URL token, token hash and change-log position is kept, and so is the change tokens' key,
    /// so a client's change token, a share URL and an API token work against the copy as they
    /// did against this store. Between SQLite and PostgreSQL either way (or the same kind).
    ///
    /// This store is read in one snapshot (writers may go on; the copy is the store as it was
    /// when the copy began), and the copy is written in one transaction: a failure leaves the
    /// destination as it was. `destination` must hold no store yet (a store just made by
    /// opening it: no account, zone, record, credential or feed).
    ///
    /// ```swift
    /// let demo = try Store(path: "demo.sqlite")
    /// let cluster = try Store.open("postgres://shareflow@db.internal/shareflow")   // ShareFlowPostgres
    /// let report = try demo.copy(to: cluster)   // report.rows["record"]
    /// ```
    public func copy(to destination: Store) throws -> StoreCopyReport {
        var copied: [String: Int] = [:]
        try read { source in
            try destination.write { target in
                try StoreCopy.requireEmpty(target, tables: catalogue.storedTables, driver: destination.driver, label: destination.path)
                let tables = catalogue.storedTables
                for table in tables {
                    copied[table.name] = try StoreCopy.copy(
                        table,
                        from: source,
                        to: target,
                        keepingIDs: catalogue.madeIDs.contains(table.name) ? destination.driver?.dialect.keepingMadeIDs : nil
                    )
                }
                try StoreCopy.restoreShareTags(from: source, to: target)
                copied["assets"] = try StoreCopy.carryAssets(from: self, source, to: destination, target)
                try destination.driver?.finishCopy(target, madeIDs: catalogue.madeIDs)
                // Blobs move between a folder and a database: their tables' counts differ then.
                let movesBlobs = (fileAssets == nil) != (destination.fileAssets == nil)
                for table in tables where !(movesBlobs && ["asset_blob", "asset_chunk"].contains(table.name)) {
                    let expected = try source.fetchInteger("SELECT COUNT(*) FROM \(table.name)") ?? 0
                    let found = try target.fetchInteger("SELECT COUNT(*) FROM \(table.name)") ?? 0
                    guard expected == found else {
                        throw ShareFlowError(
                            .serviceUnavailable,
                            "cannot copy \(path) to \(destination.path): table \(table.name) has \(found) rows in the copy, not \(expected); nothing was copied"
                        )
                    }
                }
            }
        }
        return StoreCopyReport(from: path, to: destination.path, rows: copied)
    }
}

/// The steps of `Store.copy(to:)`, in the dialect both stores read.
enum StoreCopy {
    /// Rows read from the source per statement: a page's values are all that is held at once.
    static let pageRows = 500
    /// Rows per INSERT (a statement's placeholders stay far below both stores' limits).
    static let insertRows = 100

    /// Refuses a destination that already holds a store: a copy merged into one would mix two
    /// stores' IDs. What opening it made (the format mark, the schema version, its own
    /// change-token key) is replaced by the source's.
    static func requireEmpty(_ target: StoreTransaction, tables: [StoredTable], driver: (any StoreDriver)?, label: String) throws {
        // A PostgreSQL schema holding objects ShareFlow did not make (a trigger, a function, a
        // view) would change what the copy means: refused, each named.
        if let driver {
            let foreign = try driver.foreignObjects(target)
            guard foreign.isEmpty else {
                throw ShareFlowError(
                    .invalidArguments,
                    "cannot copy into \(label): its schema shareflow holds what ShareFlow did not make (\(foreign.joined(separator: "; "))); copy into an empty PostgreSQL database"
                )
            }
        }
        var held: [String] = []
        for table in tables where table.name != "shareflow_meta" {
            let n = try target.fetchInteger("SELECT COUNT(*) FROM \(table.name)") ?? 0
            if n > 0 { held.append("\(n) in \(table.name)") }
        }
        guard held.isEmpty else {
            throw ShareFlowError(
                .invalidArguments,
                "cannot copy into \(label): it already holds a store (rows: \(held.joined(separator: ", "))); copy into a new SQLite file or an empty PostgreSQL database"
            )
        }
    }

    /// Carries the blobs (SPEC §19 A4) where the destination keeps them: files to files (hard
    /// links where the two folders share a file system), files into the database's chunks, the
    /// database's chunks (copied with their tables) out into files (the rows then dropped: an
    /// SQLite store keeps its blobs in its folder). How many blobs.
    static func carryAssets(from store: Store, _ source: StoreTransaction, to destination: Store, _ target: StoreTransaction) throws -> Int {
        switch (store.fileAssets, destination.fileAssets) {
        case (let from?, let to?):
            let sums = try from.checksums()
            for sum in sums { try from.carry(sum, to: to) }
            return sums.count
        case (let from?, nil):
            let sums = try from.checksums()
            let now = EngineClock.seconds
            for sum in sums {
                let data = try from.read(sum, range: nil)
                try target.putAssetBlob(checksum: sum, size: Int64(data.count), chunks: DatabaseAssets.chunks(of: data), at: now)
            }
            return sums.count
        case (nil, let to?):
            let sums = try source.assetBlobs(savedBefore: .infinity, limit: Int.max)
            for sum in sums {
                guard let blob = try source.assetBlob(checksum: sum) else { continue }
                var data = Data()
                for chunk in try source.assetChunks(checksum: sum, range: 0..<blob.chunks) { data.append(chunk) }
                let saved = try to.put(data, maxBytes: .max)
                guard saved.checksum == sum else {
                    throw ShareFlowError(.serviceUnavailable, "cannot copy asset \(sum): its chunks hold other bytes (\(saved.checksum))")
                        .forOperator()
                }
            }
            try target.run("DELETE FROM asset_blob", [])
            return sums.count
        case (nil, nil):
            return try source.fetchInteger("SELECT COUNT(*) FROM asset_blob").map(Int.init) ?? 0
        }
    }

    /// Copies one table's rows, page by page; gives how many.
    static func copy(_ table: StoredTable, from source: StoreTransaction, to target: StoreTransaction, keepingIDs: String?) throws -> Int {
        let columns = table.columns.map(\.name)
        // Keyset paging: a page starts after the last row of the one before, so a large table
        // is read in linear time.
        let key = table.primaryKey
        let keyIndexes = key.map { columns.firstIndex(of: $0)! }
        let list = columns.joined(separator: ", ")
        let order = key.joined(separator: ", ")
        let after = key.count == 1 ? "\(key[0]) > ?" : "(\(order)) > (\(key.map { _ in "?" }.joined(separator: ", ")))"
        var last: [DatabaseValue]?
        var count = 0
        while true {
            // Each value is read as the engine reads it (`store check`'s readers) in place, and
            // text must be valid UTF-8: a damaged value stops the copy naming its row, rather
            // than being carried into the copy, repaired (U+FFFD) or, on PostgreSQL, failing
            // there as a type error.
            var page: [[DatabaseValue]] = []
            let sql =
                last == nil
                ? "SELECT \(list) FROM \(table.name) ORDER BY \(order) LIMIT \(pageRows)"
                : "SELECT \(list) FROM \(table.name) WHERE \(after) ORDER BY \(order) LIMIT \(pageRows)"
            try source.forEach(
                sql,
                StoreArguments(last ?? []),
                table: table.name,
                keyAt: keyIndexes[0],
                { stored -> [DatabaseValue] in
                    do {
                        for (n, column) in table.columns.enumerated() {
                            try column.read(stored, n, column.name)
                            if stored.holdsInvalidUTF8(n) {
                                throw stored.damaged(
                                    column.name,
                                    "invalid UTF-8 (PostgreSQL cannot hold it, and ShareFlow reads it as U+FFFD): correct or remove the value"
                                )
                            }
                        }
                    } catch let damage as DamagedRow where key.count > 1 {
                        throw DamagedRow(table: damage.table, row: stored.name(at: keyIndexes), column: damage.column, problem: damage.problem)
                    }
                    return stored.values(columns.count)
                },
                {
                    page.append($0)
                    return true
                }
            )
            guard !page.isEmpty else { return count }
            // The destination's own format mark and schema version stay (a PostgreSQL store's
            // version runs ahead of SQLite's: PostgresSchema).
            let rows =
                table.name == "shareflow_meta"
                ? page.filter { row in !["format", "schemaVersion"].contains(String.fromDatabaseValue(row[0]) ?? "") } : page
            var start = 0
            while start < rows.count {
                let chunk = rows[start..<min(start + insertRows, rows.count)]
                try insert(chunk, into: table.name, columns: columns, target, keepingIDs: keepingIDs)
                start += chunk.count
            }
            count += page.count
            last = keyIndexes.map { page[page.count - 1][$0] }
            if page.count < pageRows { return count }
        }
    }

    /// One INSERT of `rows`. The meta rows replace what opening the destination wrote.
    static func insert(
        _ rows: ArraySlice<[DatabaseValue]>,
        into table: String,
        columns: [String],
        _ target: StoreTransaction,
        keepingIDs: String?
    ) throws {
        let row = "(" + columns.map { _ in "?" }.joined(separator: ", ") + ")"
        var sql =
            "INSERT INTO \(table) (\(columns.joined(separator: ", "))) \(keepingIDs.map { "\($0) " } ?? "")VALUES "
            + Array(repeating: row, count: rows.count).joined(separator: ", ")
        if table == "shareflow_meta" { sql += " ON CONFLICT (key) DO UPDATE SET value = excluded.value" }
        guard !rows.isEmpty else { return }
        var values: [DatabaseValue] = []
        values.reserveCapacity(rows.count * columns.count)
        for row in rows { values += row }
        do {
            try target.run(sql, StoreArguments(values))
        } catch var error as ShareFlowError {
            let first = rows.first.map { StoredRow.name($0[0]) } ?? "?"
            error.message += " (copying table \(table), the rows from \(columns[0]) \(first))"
            throw error
        }
    }

    /// Inserting a share's participants moved its record's tag (the stores' triggers, R21): the
    /// source's tags are written back, so a client's change tag still matches.
    static func restoreShareTags(from source: StoreTransaction, to target: StoreTransaction) throws {
        var last: Int64 = 0
        while true {
            let page = try source.rows(
                """
                SELECT record.id, record.tag FROM record JOIN share ON share.recordID = record.id
                WHERE record.id > ? ORDER BY record.id LIMIT \(pageRows)
                """,
                [last]
            )
            for row in page { try target.run("UPDATE record SET tag = ? WHERE id = ?", [row[1], row[0]]) }
            guard page.count == pageRows, case .int64(let id) = page[page.count - 1][0].storage else { return }
            last = id
        }
    }
}
