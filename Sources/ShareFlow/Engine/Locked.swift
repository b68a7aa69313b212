import Foundation

/// A value touched only while holding a pthread mutex (`NSLock`).
///
/// Not the standard library's `Synchronization.Mutex`: on Linux a contended `Mutex` is a
/// priority-inheritance futex, and the kernel hands it from one thread to the next without
/// either doing an atomic operation ThreadSanitizer can see; every access it guards is then
/// reported as a race (CI, 2026-12: two feed reads beside the engine's lock sealing change
/// tokens at once). ThreadSanitizer intercepts pthread mutexes, so what this guards is checked
/// rather than either hidden by a suppression or reported falsely.
///
/// ```swift
/// let counts = Locked([String: Int]())
/// counts.withLock { $0["a", default: 0] += 1 }
/// ```
package final class Locked<Value>: @unchecked Sendable {  // `value` guarded by `lock`
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    /// `body` with the value, the lock held throughout.
    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
