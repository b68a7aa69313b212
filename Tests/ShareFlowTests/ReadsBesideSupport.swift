import Foundation
import ShareFlowEngineTestKit

@testable import ShareFlow
@testable import ShareFlowPostgres

/// A store that can have readers (SPEC §16 M5; SQLite: a file, not `:memory:`; PostgreSQL: a
/// scratch database), and how to drop it.
func readableStore() throws -> (store: Store, drop: () -> Void) {
    if let template = TestStore.postgresTemplate {
        let url = try PostgresStore.makeScratch(template: template)
        let store = try Store.open(url)
        return (
            store,
            {
                store.close()
                PostgresStore.dropScratch(url)
            }
        )
    }
    let dir = try FileManager.default.url(
        for: .itemReplacementDirectory,
        in: .userDomainMask,
        appropriateFor: URL(fileURLWithPath: NSTemporaryDirectory()),
        create: true
    )
    let store = try Store(path: dir.appendingPathComponent("store.sqlite").path)
    return (
        store,
        {
            store.close()
            try? FileManager.default.removeItem(at: dir)
        }
    )
}

/// Holds ShareFlow's write lock on the PostgreSQL store at `url` from another connection for
/// `seconds`; returns once it is held, with what is signalled when it is let go.
func holdWriteLock(_ url: String, for seconds: Double) throws -> (store: Store, released: DispatchSemaphore) {
    let other = try Store.open(url, postgres: PostgresSettings(poolSize: 2, statementTimeoutMs: 400))
    let holding = DispatchSemaphore(value: 0)
    let released = DispatchSemaphore(value: 0)
    Thread {
        _ = try? other.write { tx in
            // A statement waited for: the lock, sent ahead of it, is held by then.
            _ = try? tx.fetchInteger("SELECT 1", [])
            holding.signal()
            Thread.sleep(forTimeInterval: seconds)
        }
        released.signal()
    }.start()
    _ = holding.wait(timeout: .now() + 10)
    return (other, released)
}

/// A value shared between a test's threads.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    func update(_ change: (inout Value) -> Void) { lock.withLock { change(&stored) } }
}

/// Runs `body` on the calling thread with a reader of its own attached to `engine` (as a
/// server's reading thread has), closed after.
func withOwnReader(_ engine: Engine, _ body: () throws -> Void) throws {
    let reader = try engine.store.makeReader()
    engine.attachReader(reader)
    defer {
        engine.attachReader(nil)
        reader?.close()
    }
    try body()
}
