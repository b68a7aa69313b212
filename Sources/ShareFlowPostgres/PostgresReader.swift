import Foundation
import NIOConcurrencyHelpers
import ShareFlow

/// One reading thread's own connection (SPEC §16 M5: reads beside the write): a snapshot per
/// read (REPEATABLE READ, READ ONLY), opened again when lost. At most `poolSize - 1` are made,
/// the engine's own connection being the pool's first.
final class PostgresReader: StoreDriverReader {
    private let connector: PostgresConnector
    private var session: PostgresSession?
    private let released: @Sendable () -> Void

    init(connector: PostgresConnector, released: @escaping @Sendable () -> Void) {
        self.connector = connector
        self.released = released
    }

    deinit { close() }

    func read<T>(_ body: (any StoreConnection) throws -> T) throws -> T {
        let session: PostgresSession
        if let open = self.session, !open.connection.isClosed {
            session = open
        } else {
            if self.session != nil { Counted.storeRetry("postgres", reason: "reconnect") }
            self.session = nil
            session = try connector.openSession(statementTimeoutMs: connector.settings.statementTimeoutMs)
            self.session = session
        }
        defer { session.transactionEnded() }
        do {
            session.pipeline(PostgresSession.beginSnapshot)
            let result = try session.rollingBack { try body(session) }
            // Not waited for: the next statement on the connection comes after it.
            session.pipeline("COMMIT")
            return result
        } catch let failure as PostgresFailure {
            if failure.isConnectionLost {
                self.session = nil
                try? session.connection.close().wait()
            }
            throw failure
        }
    }

    /// Closes the connection and gives its place in the pool back (once).
    func close() {
        if let session {
            self.session = nil
            try? session.connection.close().wait()
        }
        if !isReleased {
            isReleased = true
            released()
        }
    }
    private var isReleased = false
}

extension PostgresStore {
    /// A reader of its own for a reading thread, within `poolSize` (the engine's connection
    /// counted); nil when the pool has no more.
    package func makeReader() throws -> (any StoreDriverReader)? {
        let taken = readersMade.withLockedValue { made -> Bool in
            guard made + 1 < settings.poolSize else { return false }
            made += 1
            return true
        }
        guard taken else { return nil }
        return PostgresReader(connector: connector) { [readersMade] in readersMade.withLockedValue { $0 -= 1 } }
    }
}
