import Foundation

/// Values gathered from several threads, in the order they came.
public final class Gathered<Element>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Element] = []

    public init() {}

    public func add(_ value: Element) { lock.withLock { values.append(value) } }

    public var all: [Element] { lock.withLock { values } }
}
