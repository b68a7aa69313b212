import Foundation
import GRDB
import GRDBSQLite

/// A stored value ShareFlow cannot read, and where it is: the table, the row (its row ID, or
/// its key in a table without one) and the column. Said in words, never as SQL.
struct DamagedRow: Error, CustomStringConvertible {
    let table: String
    let row: String
    let column: String
    let problem: String

    var description: String { "table \(table) row \(row) column \(column): \(problem)" }

    /// The error a caller gets: `serviceUnavailable` naming the store, like every other store
    /// failure; the rest of the store goes on serving.
    func shareFlowError(path: String?) -> ShareFlowError {
        ShareFlowError(.serviceUnavailable, "\(path.map { "store \($0)" } ?? "the store"): damaged row: \(self)").forOperator(outage: false)
    }
}

/// One row of one table, read column by column through throwing conversions that take only
/// the storage class the schema declares. GRDB's subscripts trap on a NULL or a value they
/// cannot convert, and convert silently where they can (a BLOB read as text, "abc" read as
/// the integer 0): a row another program or a disk fault left must be a `DamagedRow`
/// naming the table, the row and the column, never a crash nor a wrong answer.
///
/// Every read of a stored value goes through these readers, and `Store.check()` reads every
/// row of every table through them too, so what the check passes the engine can read.
package struct StoredRow {
    /// The statement stepped onto the row (SQLite): valid only while the cursor stays on it, so
    /// a `StoredRow` never outlives the `decode` closure it is handed to. Nil for a row another
    /// store sent (PostgreSQL), whose values are `cells`.
    let statement: SQLiteStatement?
    /// The row's values as PostgreSQL sent them, in SQLite's storage classes (empty for SQLite).
    let cells: [DatabaseValue]
    let table: String
    /// The column holding the row's ID (or key), read only to name the row in an error.
    let keyAt: Int

    init(_ statement: SQLiteStatement, table: String, keyAt index: Int) {
        self.statement = statement
        self.cells = []
        self.table = table
        self.keyAt = index
    }

    init(cells: [DatabaseValue], table: String, keyAt index: Int) {
        self.statement = nil
        self.cells = cells
        self.table = table
        self.keyAt = index
    }

    private init(statement: SQLiteStatement?, cells: [DatabaseValue], table: String, keyAt index: Int) {
        self.statement = statement
        self.cells = cells
        self.table = table
        self.keyAt = index
    }

    /// How the row is named in an error: its row ID, or its key.
    var key: String { StoredRow.name(value(keyAt)) }

    /// The same row, naming the columns of another table of a join (its ID at `keyAt`).
    func of(_ table: String, keyAt index: Int) -> StoredRow { StoredRow(statement: statement, cells: cells, table: table, keyAt: index) }

    func damaged(_ column: String, _ problem: String) -> DamagedRow {
        DamagedRow(table: table, row: key, column: column, problem: problem)
    }

    private func value(_ index: Int) -> DatabaseValue {
        guard let statement else { return index < cells.count ? cells[index] : .null }
        return DatabaseValue(sqliteStatement: statement, index: CInt(index))
    }

    private func type(_ index: Int) -> CInt {
        guard let statement else {
            switch value(index).storage {
            case .null: return SQLITE_NULL
            case .int64: return SQLITE_INTEGER
            case .double: return SQLITE_FLOAT
            case .string: return SQLITE_TEXT
            case .blob: return SQLITE_BLOB
            }
        }
        return sqlite3_value_type(sqlite3_column_value(statement, CInt(index)))
    }

    /// The column's value as SQLite holds it on the row: one call that takes the connection's
    /// lock, where `sqlite3_column_type`, `_text` and `_bytes` took it once each (with their
    /// error bookkeeping, a tenth of a feed page's decoding, issue 48, callgrind). Read only
    /// on the thread stepping the statement, as the row itself is.
    private func cell(_ statement: SQLiteStatement, _ index: Int) -> OpaquePointer? {
        sqlite3_column_value(statement, CInt(index))
    }

    /// `body` over the bytes of a TEXT value in place (valid only inside it); nil, without
    /// calling it, for any other storage class.
    private func withUTF8<R>(_ index: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        guard let statement else {
            guard case .string(var s) = value(index).storage else { return nil }
            return try s.withUTF8(body)
        }
        let value = cell(statement, index)
        guard sqlite3_value_type(value) == SQLITE_TEXT else { return nil }
        // sqlite3_value_text before sqlite3_value_bytes: the count is of the UTF-8 form.
        let start = sqlite3_value_text(value)
        return try body(UnsafeBufferPointer(start: start, count: Int(sqlite3_value_bytes(value))))
    }

    /// The first `count` values as they are (a copy's row: `StoreCopy`).
    func values(_ count: Int) -> [DatabaseValue] { (0..<count).map(value) }

    /// How the row is named by the columns at `indexes` (a key of several columns).
    func name(at indexes: [Int]) -> String { indexes.map { StoredRow.name(value($0)) }.joined(separator: "/") }

    /// Whether the value at `index` is TEXT that is not valid UTF-8 (another writer's bytes,
    /// which `text` reads repaired).
    func holdsInvalidUTF8(_ index: Int) -> Bool {
        withUTF8(index) { String(validating: $0, as: UTF8.self) == nil } ?? false
    }

    /// The bytes of a TEXT or BLOB value (0 for any other), read in place.
    func byteCount(_ index: Int) -> Int {
        guard let statement else {
            switch value(index).storage {
            case .string(let s): return s.utf8.count
            case .blob(let d): return d.count
            default: return 0
            }
        }
        let value = cell(statement, index)
        switch sqlite3_value_type(value) {
        case SQLITE_TEXT, SQLITE_BLOB: return Int(sqlite3_value_bytes(value))
        default: return 0
        }
    }

    // MARK: Storage classes

    func text(_ index: Int, _ column: String) throws -> String {
        // Text as SQLite holds it, NULs and all; invalid UTF-8 another writer left is repaired
        // (U+FFFD), as GRDB reads it.
        guard let text = withUTF8(index, { String(decoding: $0, as: UTF8.self) }) else {
            throw damaged(column, "expected TEXT, found \(StoredRow.describe(value(index)))")
        }
        return text
    }

    func optionalText(_ index: Int, _ column: String) throws -> String? {
        type(index) == SQLITE_NULL ? nil : try text(index, column)
    }

    func integer(_ index: Int, _ column: String) throws -> Int64 {
        guard let statement else {
            guard case .int64(let n) = value(index).storage else {
                throw damaged(column, "expected INTEGER, found \(StoredRow.describe(value(index)))")
            }
            return n
        }
        let value = cell(statement, index)
        guard sqlite3_value_type(value) == SQLITE_INTEGER else {
            throw damaged(column, "expected INTEGER, found \(StoredRow.describe(self.value(index)))")
        }
        return sqlite3_value_int64(value)
    }

    func optionalInteger(_ index: Int, _ column: String) throws -> Int64? {
        type(index) == SQLITE_NULL ? nil : try integer(index, column)
    }

    /// A REAL column: SQLite stores a whole number there as REAL, but another writer may leave
    /// an INTEGER, which reads as the same number. NaN and infinities are no time nor date.
    func real(_ index: Int, _ column: String) throws -> Double {
        guard let statement else {
            switch value(index).storage {
            case .double(let d) where d.isFinite: return d
            case .int64(let n): return Double(n)
            default: throw damaged(column, "expected REAL, found \(StoredRow.describe(value(index)))")
            }
        }
        let value = cell(statement, index)
        switch sqlite3_value_type(value) {
        case SQLITE_FLOAT:
            let d = sqlite3_value_double(value)
            if d.isFinite { return d }
        case SQLITE_INTEGER: return Double(sqlite3_value_int64(value))
        default: break
        }
        throw damaged(column, "expected REAL, found \(StoredRow.describe(self.value(index)))")
    }

    func optionalReal(_ index: Int, _ column: String) throws -> Double? {
        type(index) == SQLITE_NULL ? nil : try real(index, column)
    }

    // MARK: ShareFlow's shapes

    /// One of the words an enum stores (a role, a permission, a status…).
    func word<T: RawRepresentable & CaseIterable>(_ index: Int, _ column: String, as type: T.Type = T.self) throws -> T
    where T.RawValue == String {
        let s = try text(index, column)
        guard let value = T(rawValue: s) else { throw unknownWord(s, column, T.allCases.map(\.rawValue)) }
        return value
    }

    /// A `StoredWord`, matched in place against its cases' bytes.
    func word<T: StoredWord>(_ index: Int, _ column: String, as type: T.Type = T.self) throws -> T {
        if let found = withUTF8(index, { T.storedWords.word($0) }) ?? nil { return found }
        let s = try text(index, column)
        throw unknownWord(s, column, T.allCases.map(\.rawValue))
    }

    /// One of `words`.
    func word(_ index: Int, _ column: String, in words: [String]) throws -> String {
        let s = try text(index, column)
        guard words.contains(s) else { throw unknownWord(s, column, words) }
        return s
    }

    private func unknownWord(_ found: String, _ column: String, _ words: [String]) -> DamagedRow {
        damaged(column, "expected one of \(words.joined(separator: ", ")), found \(StoredRow.describe(found.databaseValue))")
    }

    /// An address or ID as stored: its kind and its value.
    func lookup(kindAt kindIndex: Int, _ kindColumn: String, valueAt valueIndex: Int, _ valueColumn: String) throws -> LookupInfo {
        let kind = try lookupKind(kindIndex, kindColumn)
        return kind(try text(valueIndex, valueColumn))
    }

    /// The kind of an address or ID: how to make one from its value.
    func lookupKind(_ index: Int, _ column: String) throws -> (String) -> LookupInfo {
        switch try text(index, column) {
        case "emailAddress": return LookupInfo.emailAddress
        case "phoneNumber": return LookupInfo.phoneNumber
        case "userRecordID": return LookupInfo.userRecordID
        case let other:
            throw damaged(column, "expected one of emailAddress, phoneNumber, userRecordID, found \(StoredRow.describe(other.databaseValue))")
        }
    }

    /// A record's fields: a JSON object of field values (`StoredFields`).
    func fields(_ index: Int, _ column: String) throws -> [String: FieldValue] {
        // The form ShareFlow writes is read in place; anything else (another writer's spacing,
        // a damaged value) takes the strict decoder, which names what is wrong.
        let read = try withUTF8(index) { bytes -> [String: FieldValue] in
            if let fields = StoredFieldsReader.read(bytes) { return fields }
            do {
                return try StoredFields.decode(String(decoding: bytes, as: UTF8.self))
            } catch let problem as StoredFields.Unreadable {
                throw damaged(column, problem.description)
            }
        }
        guard let read else { throw damaged(column, "expected TEXT (JSON), found \(StoredRow.describe(value(index)))") }
        return read
    }

    /// A record's fields as `fields` reads them, or, where `StoredFieldsChecker` passes them,
    /// checked and kept as bytes (decoded when the record's fields are first read).
    func fieldsAsRead(_ index: Int, _ column: String) throws -> FieldsAsRead {
        if let checked = withUTF8(index, { StoredFieldsChecker.readable($0) ? CheckedFields($0) : nil }), let checked { return .checked(checked) }
        return .decoded(try fields(index, column))
    }

    /// An account's name: the JSON object `JSONEncoder` wrote for `NameComponents`.
    func name(_ index: Int, _ column: String) throws -> NameComponents {
        // The flat object (`{}` included) is read in place without a decoder; anything else is
        // decoded strictly, to tell a name with escapes from a damaged one.
        if let name = withUTF8(index, NameComponents.flatObject) ?? nil { return name }
        let json = try text(index, column)
        do {
            return try JSONDecoder().decode(NameComponents.self, from: Data(json.utf8))
        } catch {
            throw damaged(column, "expected a JSON object of name parts, found \(StoredFields.Unreadable.shape(of: json))")
        }
    }

    // MARK: Naming values

    /// A stored value as an error shows it: its storage class, and a short, printable excerpt.
    static func describe(_ value: DatabaseValue) -> String {
        switch value.storage {
        case .null: return "NULL"
        case .int64(let n): return "INTEGER \(n)"
        case .double(let d): return "REAL \(d)"
        case .blob(let data): return "BLOB (\(data.count) byte\(data.count == 1 ? "" : "s"))"
        case .string(let s): return "TEXT '\(excerpt(s))'"
        }
    }

    /// A row's ID or key as an error names it.
    static func name(_ value: DatabaseValue) -> String {
        switch value.storage {
        case .int64(let n): return String(n)
        case .string(let s): return "'\(excerpt(s))'"
        default: return "(\(describe(value)))"
        }
    }

    /// At most 40 characters, control characters escaped: a message stays one line.
    static func excerpt(_ s: String) -> String {
        var out = ""
        for (n, c) in s.unicodeScalars.enumerated() {
            guard n < 40 else {
                out += "…"
                break
            }
            out += c.properties.generalCategory == .control ? c.escaped(asASCII: true) : String(c)
        }
        return out
    }
}

extension StoreTransaction {
    /// The first row of `sql` read with `decode`; a damaged one is `serviceUnavailable` naming
    /// the store, the table, the row and the column. On SQLite the statement is cached and its
    /// row read in place (no copy).
    func fetchOne<T>(
        _ sql: String,
        _ arguments: StoreArguments = [],
        table: String,
        keyAt: Int,
        _ decode: (StoredRow) throws -> T
    ) throws -> T? {
        var found: T?
        try forEach(sql, arguments, table: table, keyAt: keyAt, decode) {
            found = $0
            return false
        }
        return found
    }

    /// The rows of `sql`, each read with `decode` and handed to `body` in order, until `body`
    /// returns false: a caller that needs the first few rows of an ordered scan reads no more.
    func forEach<T>(
        _ sql: String,
        _ arguments: StoreArguments = [],
        table: String,
        keyAt: Int,
        _ decode: (StoredRow) throws -> T,
        _ body: (T) throws -> Bool
    ) throws {
        try forEach(sql, nil, arguments, table: table, keyAt: keyAt, decode, body)
    }

    /// `fetchOne` of a `StoreStatement`: on SQLite, compiled once on the connection and found
    /// by identity.
    func fetchOne<T>(
        _ statement: StoreStatement,
        _ arguments: StoreArguments = [],
        table: String,
        keyAt: Int,
        _ decode: (StoredRow) throws -> T
    ) throws -> T? {
        var found: T?
        try forEach(statement.sql, statement, arguments, table: table, keyAt: keyAt, decode) {
            found = $0
            return false
        }
        return found
    }

    /// `forEach` of a `StoreStatement`.
    func forEach<T>(
        _ statement: StoreStatement,
        _ arguments: StoreArguments = [],
        table: String,
        keyAt: Int,
        _ decode: (StoredRow) throws -> T,
        _ body: (T) throws -> Bool
    ) throws {
        try forEach(statement.sql, statement, arguments, table: table, keyAt: keyAt, decode, body)
    }

    /// `fetchAll` of a `StoreStatement`.
    func fetchAll<T>(
        _ statement: StoreStatement,
        _ arguments: StoreArguments = [],
        table: String,
        keyAt: Int,
        _ decode: (StoredRow) throws -> T
    ) throws -> [T] {
        var values: [T] = []
        try forEach(statement.sql, statement, arguments, table: table, keyAt: keyAt, decode) {
            values.append($0)
            return true
        }
        return values
    }

    /// The rows of `sql` (compiled by `kept` on the connection's shelf when there is one).
    private func forEach<T>(
        _ sql: String,
        _ kept: StoreStatement?,
        _ arguments: StoreArguments,
        table: String,
        keyAt: Int,
        _ decode: (StoredRow) throws -> T,
        _ body: (T) throws -> Bool
    ) throws {
        // A statement that writes and returns rows (`UPDATE … RETURNING`) is held to the
        // write's scope as one run through `run`.
        try mayWriteReturning(sql)
        switch connection {
        case .sqlite(let db):
            let statement: Statement
            if let kept, let shelf {
                statement = try shelf.statement(kept, on: db)
            } else {
                statement = try db.cachedStatement(sql: sql)
            }
            let cursor = try StoredRowCursor(statement, arguments, table: table, keyAt: keyAt)
            do {
                try withExtendedLifetime(cursor) {
                    while let row = try cursor.next() {
                        guard try body(try decoding { try decode(row) }) else { return }
                    }
                }
            } catch let error as DatabaseError {
                // The step failed: compiled again next time, as GRDB does with its own.
                if let kept { shelf?.drop(kept) }
                throw error
            }
        case .driver(let connection):
            for cells in try connection.query(sql, arguments.values) {
                guard try body(try decoding { try decode(StoredRow(cells: cells, table: table, keyAt: keyAt)) }) else { return }
            }
        }
    }

    /// Every row of `sql` read with `decode`. One damaged row fails the whole read, naming it:
    /// a list that skipped it would pass for complete.
    func fetchAll<T>(
        _ sql: String,
        _ arguments: StoreArguments = [],
        table: String,
        keyAt: Int,
        _ decode: (StoredRow) throws -> T
    ) throws -> [T] {
        var values: [T] = []
        try forEach(sql, arguments, table: table, keyAt: keyAt, decode) {
            values.append($0)
            return true
        }
        return values
    }

    /// The one integer `sql` selects (a count, a maximum, a position); nil for no row or NULL.
    package func fetchInteger(_ sql: String, _ arguments: StoreArguments = []) throws -> Int64? {
        try fetchOne(sql, arguments, table: "(computed)", keyAt: 0) { try $0.optionalInteger(0, "value") } ?? nil
    }

    /// Every row of `sql` as its values, on either store: for what reads the store as it is
    /// rather than as the engine's rows (tests, checks).
    package func rows(_ sql: String, _ arguments: StoreArguments = []) throws -> [[DatabaseValue]] {
        try mayWriteReturning(sql)
        switch connection {
        case .sqlite(let db):
            return try Row.fetchAll(db, sql: sql, arguments: arguments.sqlite).map { row in Array(row.databaseValues) }
        case .driver(let connection):
            return try connection.query(sql, arguments.values)
        }
    }

    /// The first column of each row of `sql`, as text (NULL and other classes skipped).
    package func texts(_ sql: String, _ arguments: StoreArguments = []) throws -> [String] {
        try rows(sql, arguments).compactMap { row in row.first.flatMap { String.fromDatabaseValue($0) } }
    }

    /// Whether `sql` (`SELECT EXISTS (…)`) finds something.
    func exists(_ sql: String, _ arguments: StoreArguments = []) throws -> Bool {
        try fetchInteger(sql, arguments).map { $0 != 0 } ?? false
    }

    /// Runs `body`, turning a damaged row into the caller's error.
    func decoding<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let damage as DamagedRow { throw damage.shareFlowError(path: path) }
    }
}

/// The rows of a statement, each read in place (`StoredRow` over the stepped statement): no
/// `Row` and no per-row column-name table, which a look-up of one row paid more for than for
/// SQLite's own work. GRDB still steps the statement (`DatabaseCursor`), so its bookkeeping
/// (transaction state, errors naming the SQL) holds.
/// A word column's type: its cases with their stored bytes, made once per type, so a stored
/// word is matched in place. Read as a `String` and then `init(rawValue:)` (a switch comparing
/// strings), a word cost about 750 instructions, and a 64-participant share reads 256 of them
/// (issue 48, callgrind).
package protocol StoredWord: RawRepresentable, CaseIterable, Sendable where RawValue == String {
    static var storedWords: StoredWords<Self> { get }
}

/// `StoredWord`'s cases by their bytes.
package struct StoredWords<Word: RawRepresentable & CaseIterable>: Sendable where Word.RawValue == String, Word: Sendable {
    private let words: [(bytes: [UInt8], word: Word)]

    init() { words = Word.allCases.map { (Array($0.rawValue.utf8), $0) } }

    /// The case stored as `bytes`; nil for anything else.
    func word(_ bytes: UnsafeBufferPointer<UInt8>) -> Word? {
        guard let start = bytes.baseAddress, !bytes.isEmpty else { return nil }
        for entry in words where entry.bytes.count == bytes.count {
            if entry.bytes.withUnsafeBufferPointer({ memcmp($0.baseAddress!, start, bytes.count) == 0 }) { return entry.word }
        }
        return nil
    }
}

extension ParticipantRole: StoredWord { package static let storedWords = StoredWords<ParticipantRole>() }
extension ParticipantPermission: StoredWord { package static let storedWords = StoredWords<ParticipantPermission>() }
extension ParticipantAcceptanceStatus: StoredWord { package static let storedWords = StoredWords<ParticipantAcceptanceStatus>() }
extension Discoverability: StoredWord { package static let storedWords = StoredWords<Discoverability>() }
extension CloudEnvironment: StoredWord { package static let storedWords = StoredWords<CloudEnvironment>() }

final class StoredRowCursor: DatabaseCursor {
    typealias Element = StoredRow
    let _statement: Statement
    var _isDone = false
    private let table: String
    private let keyAt: Int

    init(_ statement: Statement, _ arguments: StoreArguments, table: String, keyAt: Int) throws {
        _statement = statement
        self.table = table
        self.keyAt = keyAt
        // The arguments are the store's own, fixed by its code (every query runs in the
        // suite): bound without GRDB's count check.
        // Left unreset only by a failed step, whose failure was thrown already.
        sqlite3_reset(statement.sqliteStatement)
        // Bound here, value by value: GRDB's StatementArguments from an array goes through
        // its unspecialized generic initializer across modules, which cost a tenth of a
        // fetchRecord (perf, `bench --only reads`). The same calls GRDB binds with.
        let sqlite = statement.sqliteStatement
        for (n, value) in arguments.values.enumerated() { StoredRowCursor.bind(value, to: sqlite, at: CInt(n + 1)) }
    }

    /// Binds one value as GRDB does, but a text from its own bytes with its length: GRDB's
    /// bind passes a `String` as a C string, which copies it into a new array first (a tenth
    /// of a one-record read's binding, issue 48, callgrind). A name never holds a NUL (R23),
    /// and with the length given none would cut a text short.
    private static func bind(_ value: DatabaseValue, to statement: SQLiteStatement, at index: CInt) {
        guard case .string(var text) = value.storage else {
            _ = value.bind(to: statement, at: index)
            return
        }
        // SQLITE_TRANSIENT: SQLite copies the bytes before the call returns.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        text.withUTF8 { bytes in
            guard let start = bytes.baseAddress else {
                _ = sqlite3_bind_text(statement, index, "", 0, transient)
                return
            }
            _ = start.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(statement, index, $0, CInt(bytes.count), transient)
            }
        }
    }

    deinit {
        // Releases the statement's read of the database; after a failed step this returns
        // that failure again, which was thrown already.
        sqlite3_reset(_statement.sqliteStatement)
    }

    func _element(sqliteStatement: SQLiteStatement) -> StoredRow {
        StoredRow(sqliteStatement, table: table, keyAt: keyAt)
    }
}

/// Every table ShareFlow keeps, each column with the reader the engine reads it through, so
/// `Store.check()` reads every row as the engine would (the columns no query reads
/// included). A test holds the list against a freshly migrated store's columns.
package struct StoredTable: Sendable {
    package typealias Reader = @Sendable (StoredRow, Int, String) throws -> Void

    let name: String
    /// The column naming a row in a problem: its row ID, or its key.
    let key: String
    /// The table's primary key: the order its rows are read in (`store check`, and `store
    /// copy`'s keyset pages), and what names a row of a table keyed by several columns.
    let primaryKey: [String]
    let columns: [(name: String, read: Reader)]

    init(name: String, key: String, primaryKey: [String]? = nil, columns: [(name: String, read: Reader)]) {
        self.name = name
        self.key = key
        self.primaryKey = primaryKey ?? [key]
        self.columns = columns
    }

    static let text: Reader = { _ = try $0.text($1, $2) }
    static let optionalText: Reader = { _ = try $0.optionalText($1, $2) }
    static let integer: Reader = { _ = try $0.integer($1, $2) }
    static let optionalInteger: Reader = { _ = try $0.optionalInteger($1, $2) }
    static let real: Reader = { _ = try $0.real($1, $2) }
    static let optionalReal: Reader = { _ = try $0.optionalReal($1, $2) }
    static let fields: Reader = { _ = try $0.fields($1, $2) }
    static let name: Reader = { _ = try $0.name($1, $2) }
    static let lookupKind: Reader = { _ = try $0.lookupKind($1, $2) }
    /// A JSON list of strings (the decision log's policies and reasons).
    static let jsonStrings: Reader = { row, index, column in
        let text = try row.text(index, column)
        guard (try? JSONSerialization.jsonObject(with: Data(text.utf8))) is [String] else {
            throw row.damaged(column, "not a JSON list of strings: \(StoredRow.excerpt(text))")
        }
    }
    static let scope: Reader = { row, index, _ in _ = try StoreTransaction.isPublic(row, index) }
    static func word<T: RawRepresentable & CaseIterable>(_ type: T.Type) -> Reader where T.RawValue == String {
        let words = T.allCases.map(\.rawValue)
        return { _ = try $0.word($1, $2, in: words) }
    }
    static func optionalWord<T: RawRepresentable & CaseIterable>(_ type: T.Type) -> Reader where T.RawValue == String {
        let words = T.allCases.map(\.rawValue)
        return { row, index, column in if try row.optionalText(index, column) != nil { _ = try row.word(index, column, in: words) } }
    }

    /// The most unreadable values listed per table; past it, one line says how many more.
    static let listedPerTable = 1000

    /// One problem line per unreadable value of the table, in row order.
    func damagedRows(_ tx: StoreTransaction) throws -> [String] {
        var problems: [String] = []
        var more = 0
        // A row of a table keyed by several columns is named by all of them (`zoneID/name`).
        let keyColumns = primaryKey
        let named = keyColumns.count == 1 ? key : keyColumns.map { "CAST(\($0) AS TEXT)" }.joined(separator: " || '/' || ")
        let sql = "SELECT \(named), \(columns.map(\.name).joined(separator: ", ")) FROM \(name) ORDER BY \(keyColumns.joined(separator: ", "))"
        try tx.forEach(
            sql,
            [],
            table: name,
            keyAt: 0,
            { stored -> [DamagedRow] in
                var damaged: [DamagedRow] = []
                for (n, column) in columns.enumerated() {
                    do {
                        try column.read(stored, n + 1, column.name)
                    } catch let damage as DamagedRow {
                        damaged.append(damage)
                    }
                }
                return damaged
            },
            { damaged in
                for damage in damaged {
                    if problems.count < StoredTable.listedPerTable { problems.append("damaged row: \(damage)") } else { more += 1 }
                }
                return true
            }
        )
        if more > 0 { problems.append("damaged rows: \(more) more unreadable values in table \(name)") }
        return problems
    }
}
