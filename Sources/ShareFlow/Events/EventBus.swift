import Foundation
import Logging

/// Observers of engine events: higher priority first, then registration order. An observer's
/// error is logged and counted; it never undoes the change or stops the other observers.
public final class EventBus: @unchecked Sendable {
    public typealias Observer = (Event) throws -> Void

    /// A class: delivering an event then retains one object per observer, not its parts.
    final class Entry {
        init(id: Int, label: String, priority: Int, body: @escaping Observer) {
            self.id = id; self.label = label; self.priority = priority; self.body = body
        }
        let id: Int
        let label: String
        let priority: Int
        let body: Observer
    }

    /// Observers by `EventKind.rawValue`.
    // Unchecked: the engine lock serialises access, and the dynamic check costs more than
    // the lookup it guards on every event.
    @exclusivity(unchecked) private var entries = [[Entry]](repeating: [], count: EventKind.allCases.count)
    private var nextID = 0
    /// Errors raised by observers so far.
    public private(set) var observerErrors = 0
    /// Where observer failures are logged (the engine's logger, read when one fails).
    var logger: () -> Logger = { Logger(label: "shareflow") }

    init() {}

    /// A registration; `remove()` stops delivery.
    public final class Handle {
        // Strong, not weak: a weak reference would give the bus a side table and slow every
        // retain of it on the event path. The bus outlives nothing it keeps alive this way.
        let bus: EventBus
        let id: Int
        let event: EventKind
        init(bus: EventBus, id: Int, event: EventKind) { self.bus = bus; self.id = id; self.event = event }
        public func remove() { bus.remove(id: id, event: event) }
    }

    @discardableResult
    public func observe(_ event: EventKind, priority: Int = 0, label: String = "observer",
                        _ body: @escaping Observer) -> Handle {
        nextID += 1
        let entry = Entry(id: nextID, label: label, priority: priority, body: body)
        // Stable: after every entry of equal or higher priority.
        let index = entries[event.rawValue].firstIndex { $0.priority < priority } ?? entries[event.rawValue].endIndex
        entries[event.rawValue].insert(entry, at: index)
        return Handle(bus: self, id: nextID, event: event)
    }

    func remove(id: Int, event: EventKind) {
        entries[event.rawValue].removeAll { $0.id == id }
    }

    /// Removes every observer whose label starts with `prefix` (a plugin being reloaded).
    public func removeAll(labelPrefix prefix: String) {
        for i in entries.indices { entries[i].removeAll { $0.label.hasPrefix(prefix) } }
    }

    public func hasObservers(_ event: EventKind) -> Bool { !entries[event.rawValue].isEmpty }

    func deliver(_ event: Event) {
        let list = entries[event.kind.rawValue]
        for entry in list {
            do {
                try entry.body(event)
            } catch {
                observerErrors += 1
                logger().error("observer '\(entry.label)' of \(event.name) failed: \(error)")
            }
        }
    }
}
