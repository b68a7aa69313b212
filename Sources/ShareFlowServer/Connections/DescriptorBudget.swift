import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// How many connections a node may hold open, from the process's descriptor limit
/// (`RLIMIT_NOFILE`), not only the configured `maxConnections`: a cap above what the process
/// may open let a connection storm take the last descriptors, and the next file the server
/// or a library opened failed (libdispatch trapped: SIGILL). The soft limit is raised to the
/// hard one first, as servers do; then what is open at start, and a reserve for the store
/// (its files, or its PostgreSQL connections), logs, plugins' data files and the answers' own
/// needs, is kept out of the connections' share. Past the cap the server stops accepting: new
/// connections wait in the kernel's backlog, none is refused by a crash.
///
/// ```swift
/// let cap = try DescriptorBudget.connections(configured: 512, store: 8)
/// ```
public enum DescriptorBudget {
    /// Descriptors kept beside the store's and what is open at start: logs, plugins' data
    /// files, a `/metrics` scrape, a backup, TLS and DNS.
    static let reserve = 64

    /// The connections a node may hold, at most `configured`; `storeConnections`: descriptors
    /// the store may open later (PostgreSQL's pool and listeners; 4 for SQLite's files).
    /// RLIM_INFINITY (the C macro's value, which Swift cannot import as a constant).
    private static let unlimited = rlim_t.max

    public static func connections(configured: Int, storeConnections: Int) throws -> (cap: Int, limit: Int, kept: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (configured, -1, 0) }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max == unlimited ? max(limit.rlim_cur, 1 << 20) : limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        let soft = limit.rlim_cur == unlimited ? Int.max / 2 : Int(clamping: limit.rlim_cur)
        let kept = openDescriptors() + storeConnections + reserve
        let cap = min(configured, soft - kept)
        guard cap >= 1 else {
            throw ServeError(
                "the process may open \(soft) descriptors (ulimit -n), and \(kept) are kept for what is open, the store, logs and plugins: no connection could be served; raise the limit to at least \(kept + 16)"
            )
        }
        return (cap, soft, kept)
    }

    /// Descriptors open now (Linux: /proc/self/fd; elsewhere a guess of the usual few).
    static func openDescriptors() -> Int {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return 16 }
        return entries.count
    }
}

/// A server that cannot start, in one line naming the cause.
public struct ServeError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
