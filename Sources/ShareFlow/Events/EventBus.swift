import Foundation
import Logging

/// Observers of engine events: higher priority first, then registration order. An observer's
/// error is logged and counted; it never undoes the change or stops the other observers.
public final class EventBus: @unchecked Sendable {
    public typealias Observer = (Event) throws -> Void

    struct Entry {
        let id: Int
        let name: String
        let label: String
        let priority: Int
        let body: Observer
    }

    private var entries: [String: [Entry]] = [:]
    private var nextID = 0
    /// Errors raised by observers so far.
    public private(set) var observerErrors = 0
    let logger: () -> Logger

    init(logger: @escaping () -> Logger) { self.logger = logger }

    /// A registration; `remove()` stops delivery.
    public final class Handle {
        weak var bus: EventBus?
        let id: Int
        let event: String
        init(bus: EventBus, id: Int, event: String) { self.bus = bus; self.id = id; self.event = event }
        public func remove() { bus?.remove(id: id, event: event) }
    }

    @discardableResult
    public func observe(_ event: String, priority: Int = 0, label: String = "observer",
                        _ body: @escaping Observer) -> Handle {
        nextID += 1
        var list = entries[event, default: []]
        let entry = Entry(id: nextID, name: event, label: label, priority: priority, body: body)
        // Stable: after every entry of equal or higher priority.
        let index = list.firstIndex { $0.priority < priority } ?? list.endIndex
        list.insert(entry, at: index)
        entries[event] = list
        return Handle(bus: self, id: nextID, event: event)
    }

    func remove(id: Int, event: String) {
        entries[event]?.removeAll { $0.id == id }
    }

    /// Removes every observer whose label starts with `prefix` (a plugin being reloaded).
    public func removeAll(labelPrefix prefix: String) {
        for key in entries.keys { entries[key]?.removeAll { $0.label.hasPrefix(prefix) } }
    }

    public func hasObservers(_ event: String) -> Bool { !(entries[event]?.isEmpty ?? true) }

    func deliver(_ event: Event) {
        guard let list = entries[event.name], !list.isEmpty else { return }
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
