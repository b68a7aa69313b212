import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import ShareFlow

/// Pokes between the nodes of a PostgreSQL store (SPEC §14's change streams across nodes,
/// SPEC §16): every write that changed rows sends `NOTIFY shareflow_changes` in its transaction
/// (PostgreSQL delivers it at commit, never for a rollback), and each node listens on a
/// connection of its own, so a stream on any node looks at its feed as soon as any node
/// committed, instead of at its next poll. The feeds stay the truth; a lost notice costs a
/// poll interval, nothing else.
package enum PostgresChangeNotices {
    static let channel = "shareflow_changes"

    /// The statement a write sends before its COMMIT (pipelined: no round trip of its own).
    static let notify = "NOTIFY \(channel)"

    /// Listens until the task is cancelled, calling `poke` for each notice, and once after each
    /// (re)connection (a notice sent while it was away is not kept by PostgreSQL). A lost
    /// connection is opened again a second later.
    static func listen(_ connector: PostgresConnector, poke: @escaping @Sendable () -> Void) async {
        var logger = Logger(label: "shareflow.postgres.notices")
        logger.logLevel = .critical
        var listenedBefore = false
        while !Task.isCancelled {
            if listenedBefore { Counted.storeRetry("postgres", reason: "listen") }
            listenedBefore = true
            if let connection = try? await connector.connect(id: 3) {
                do {
                    try await connection.listen(on: channel) { notices in
                        poke()
                        for try await _ in notices { poke() }
                    }
                } catch {}
                try? await connection.close()
            }
            try? await Task.sleep(nanoseconds: 1_000_000_000)
        }
    }
}
