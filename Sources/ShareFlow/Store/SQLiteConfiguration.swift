import CShareFlowSQLite

/// SQLite's process-wide configuration, set before its first use: no allocation statistics.
///
/// Debian's SQLite counts every allocation under one global mutex; in a one-record read that
/// was 44 of the 49 mutex lock/unlock pairs (callgrind, issue 48), on every thread's reads at
/// once. Set by the first store opened; a process that used SQLite before (a test's own raw
/// connection) keeps counting, which is slower, never wrong.
enum SQLiteConfiguration {
    /// Whether the configuration took; evaluated once, before the first store's connection.
    static let isSet: Bool = sf_sqlite_configure() != 0

    /// Sets the configuration if SQLite has not been used yet in this process.
    @inline(__always)
    static func setBeforeFirstUse() { _ = isSet }
}
