import Foundation
import GRDB
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

/// Statements prepared once per connection (SPEC §16 M5): PostgreSQL parses and plans a
/// statement sent unnamed on every execution (35% of its time on a resolve); one prepared is
/// planned once per connection and then only bound and executed.
///
/// postgres-nio prepares through `PostgresPreparedStatement`, whose name and text are static
/// (one type per statement). The store's statements are texts, so the one type here reads its
/// name and text from a task-local value set around each execution: postgres-nio reads them
/// once, when the execution starts, inside that task.
///
/// Each name stands for a text and the storage classes of its values (`signature`), so a
/// statement first run with a NULL where an integer later goes is prepared once for each, as
/// an unnamed statement's parameters would be typed each time.
enum PostgresPrepared {
    struct Text: Sendable {
        let name: String
        let sql: String
    }

    @TaskLocal static var current: Text?

    /// Rows of a prepared query.
    struct Query: PostgresPreparedStatement {
        typealias Row = PostgresRow
        static var name: String { PostgresPrepared.current?.name ?? "" }
        static var sql: String { PostgresPrepared.current?.sql ?? "" }
        let bindings: PostgresBindings
        func makeBindings() throws -> PostgresBindings { bindings }
        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// The most texts prepared: past it, a new text goes out unnamed (a statement built with a
    /// varying number of values, such as a copy's batch, would otherwise fill every
    /// connection's memory with plans used once).
    static let limit = 400

    private static let names = NIOLockedValueBox([String: String]())

    /// The name of `sql` with values of `signature`, or nil when `limit` texts are prepared.
    static func name(for sql: String, signature: String) -> String? {
        let key = signature + "\u{0}" + sql
        return names.withLockedValue { names -> String? in
            if let known = names[key] { return known }
            guard names.count < limit else { return nil }
            let name = "sf\(names.count + 1)"
            names[key] = name
            return name
        }
    }

    /// The storage classes of `values`, one letter each.
    static func signature(_ values: [DatabaseValue]) -> String {
        var s = ""
        s.reserveCapacity(values.count)
        for value in values {
            switch value.storage {
            case .null: s.append("n")
            case .int64: s.append("i")
            case .double: s.append("d")
            case .string: s.append("s")
            case .blob: s.append("b")
            }
        }
        return s
    }

    /// A statement's first word, upper-cased (`SELECT`, `INSERT` …).
    static func verb(_ text: String) -> String {
        let start = text.drop { $0.isWhitespace }
        return start.prefix { $0.isLetter }.uppercased()
    }
}

/// Runs a prepared execution's task on its connection's event loop, never on Swift's
/// cooperative pool: the caller waits for it, blocking, as it waits for an unnamed statement's
/// future, and a caller that is itself on the pool (an async API's engine call) would
/// otherwise wait for a thread it holds (on 2 cores, every pool thread: found by a 12-task
/// attack that hung 60 s).
final class EventLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// What a prepared execution's task hands back to the waiting thread.
final class PreparedAnswer: Sendable {
    private let box = NIOLockedValueBox<Result<[[DatabaseValue]], Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func give(_ result: Result<[[DatabaseValue]], Error>) {
        box.withLockedValue { $0 = result }
        done.signal()
    }

    /// The answer, or nil when none came within `limit` (nil: wait for ever).
    func wait(within limit: TimeAmount?) -> Result<[[DatabaseValue]], Error>? {
        if let limit {
            guard done.wait(timeout: .now() + .nanoseconds(Int(limit.nanoseconds))) == .success else { return nil }
        } else {
            done.wait()
        }
        return box.withLockedValue { $0 }
    }
}
