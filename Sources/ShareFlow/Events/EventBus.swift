import Foundation
import Logging
import Synchronization

/// Observers of engine events: higher priority first, then registration order. An observer's
/// error is logged and counted; it never undoes the change or stops the other observers.
///
/// Observers are added and removed, and events delivered, by whoever holds the engine's lock
/// (a plugin's setup, an observer, a script; `ReadsBeside`): a server's reading threads only
/// ask `hasObservers`, which reads an atomic mask.
///
/// ```swift
/// let handle = engine.events.observe(.participantRemoved, priority: 10, label: "audit") { event in
///     print("\(event.participant?.participantID ?? "?") removed: \(event.reason ?? "")")
/// }
/// handle.remove()
/// ```
public final class EventBus: @unchecked Sendable {
    /// An observer: given each committed event of its kind. What it throws is logged and counted
    /// (`observerErrors`), never passed on to the change's caller.
    public typealias Observer = (Event) throws -> Void

    struct Entry {
        let id: Int
        let label: String
        let priority: Int
        let body: Observer
    }

    /// One event kind's observers in delivery order. Immutable, replaced whole on a change:
    /// a delivery holds one reference and calls the rest in place, and an observer that adds
    /// or removes observers does not disturb the delivery under way.
    final class Observers {
        let entries: ContiguousArray<Entry>
        init(_ entries: ContiguousArray<Entry>) { self.entries = entries }
    }

    /// By `EventKind.rawValue`.
    // Unchecked: the engine lock serialises access, and the dynamic check costs more than
    // the lookup it guards on every event.
    @exclusivity(unchecked) private var lists = EventKind.allCases.map { _ in Observers([]) } {
        didSet { observed.store(EventBus.mask(lists), ordering: .releasing) }
    }
    /// A bit per kind with observers: what a read beside the engine's lock asks
    /// (`hasObservers`) without touching `lists`, which only the lock's holder reads.
    private let observed = Atomic<UInt64>(0)

    private static func mask(_ lists: [Observers]) -> UInt64 {
        var mask: UInt64 = 0
        for (i, list) in lists.enumerated() where !list.entries.isEmpty { mask |= 1 << UInt64(i) }
        return mask
    }
    private var nextID = 0
    /// Errors raised by observers so far.
    @exclusivity(unchecked) public private(set) var observerErrors = 0
    /// Where observer failures are logged (the engine's logger, read when one fails).
    var logger: () -> Logger = { Logger(label: "shareflow") }

    init() {
        precondition(EventKind.allCases.count <= UInt64.bitWidth, "EventBus.observed has a bit per kind")
    }

    /// A registration; `remove()` stops delivery.
    public final class Handle {
        // Strong, not weak: a weak reference would give the bus a side table and slow every
        // retain of it on the event path. The bus outlives nothing it keeps alive this way.
        let bus: EventBus
        let id: Int
        let event: EventKind
        init(bus: EventBus, id: Int, event: EventKind) {
            self.bus = bus
            self.id = id
            self.event = event
        }
        /// Stops delivery to this observer; removing it again does nothing.
        public func remove() { bus.remove(id: id, event: event) }
    }

    /// Registers `body` for every event of kind `event`, after the observers of equal or higher
    /// priority already registered (SPEC §6); returns the handle that removes it.
    ///
    /// `label` names the observer in the log when it fails, and is what `removeAll(labelPrefix:)`
    /// and `detach(labelPrefix:)` match (a plugin's observers are labelled `<plugin>/<name>`).
    @discardableResult
    public func observe(
        _ event: EventKind,
        priority: Int = 0,
        label: String = "observer",
        _ body: @escaping Observer
    ) -> Handle {
        nextID += 1
        var entries = lists[event.rawValue].entries
        // Stable: after every entry of equal or higher priority.
        let index = entries.firstIndex { $0.priority < priority } ?? entries.endIndex
        entries.insert(Entry(id: nextID, label: label, priority: priority, body: body), at: index)
        lists[event.rawValue] = Observers(entries)
        return Handle(bus: self, id: nextID, event: event)
    }

    func remove(id: Int, event: EventKind) {
        lists[event.rawValue] = Observers(ContiguousArray(lists[event.rawValue].entries.filter { $0.id != id }))
    }

    /// Removes every observer whose label starts with `prefix` (a plugin being reloaded).
    public func removeAll(labelPrefix prefix: String) {
        for i in lists.indices { lists[i] = Observers(ContiguousArray(lists[i].entries.filter { !$0.label.hasPrefix(prefix) })) }
    }

    /// Observers taken out by `detach(labelPrefix:)`, to be put back as they were.
    public struct Detached {
        fileprivate let entries: [(kind: Int, entry: Entry)]
    }

    /// Takes out every observer whose label starts with `prefix`, keeping them to put back:
    /// a plugin's reload parks the old version's observers while the new one loads, and a
    /// new version that fails to load leaves the old one observing (SPEC §18 P1).
    public func detach(labelPrefix prefix: String) -> Detached {
        var taken: [(kind: Int, entry: Entry)] = []
        for i in lists.indices {
            taken += lists[i].entries.filter { $0.label.hasPrefix(prefix) }.map { (i, $0) }
        }
        removeAll(labelPrefix: prefix)
        return Detached(entries: taken)
    }

    /// Puts detached observers back in the places they had: by priority, then by when they
    /// were first registered.
    public func reattach(_ detached: Detached) {
        for (kind, group) in Dictionary(grouping: detached.entries, by: \.kind) {
            let merged = (lists[kind].entries + group.map(\.entry)).sorted {
                $0.priority != $1.priority ? $0.priority > $1.priority : $0.id < $1.id
            }
            lists[kind] = Observers(ContiguousArray(merged))
        }
    }

    /// Whether any observer of `event` is registered. Lock-free (an atomic mask), so any thread may
    /// ask, and the engine builds no event nobody observes.
    public func hasObservers(_ event: EventKind) -> Bool {
        observed.load(ordering: .acquiring) & (1 << UInt64(event.rawValue)) != 0
    }

    func deliver(_ event: Event) {
        let list = lists[event.kind.rawValue]
        for i in list.entries.indices {
            do {
                try list.entries[i].body(event)
            } catch {
                observerErrors += 1
                logger().error("observer '\(list.entries[i].label)' of \(event.name) failed: \(error)")
            }
        }
    }
}
