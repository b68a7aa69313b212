import Foundation

/// A container's queue of operations. The engine is synchronous: waiting operations run, most
/// urgent first (then in the order added), when somebody waits for them.
public final class ContainerQueue {
    unowned let container: Container
    private var waiting: [CloudOperation] = []
    private var added = 0

    init(container: Container) { self.container = container }

    /// How many operations wait to run: added and not started yet.
    public var operationCount: Int { waiting.count }

    /// Queues `operation` to run when something waits (O1). An operation already added to a
    /// queue is ignored: each runs once.
    public func add(_ operation: CloudOperation) {
        guard operation.queue == nil else { return }
        added += 1
        operation.addedOrder = added
        operation.queue = self
        operation.queued(on: container)
        waiting.append(operation)
    }

    /// Runs the most urgent waiting operation; false when none waits.
    @discardableResult
    public func runNext() -> Bool {
        guard
            let next = waiting.enumerated().max(by: { a, b in
                a.element.qualityOfService.rank != b.element.qualityOfService.rank
                    ? a.element.qualityOfService.rank < b.element.qualityOfService.rank
                    : a.element.addedOrder > b.element.addedOrder
            })
        else { return false }
        waiting.remove(at: next.offset)
        run(next.element)
        return true
    }

    func wait(for operation: CloudOperation) {
        while !operation.isFinished, runNext() {}
    }

    /// Runs the waiting operations, most urgent first, until none waits (those that blocks add
    /// meanwhile included).
    public func waitUntilAllOperationsAreFinished() {
        while runNext() {}
    }

    private func run(_ operation: CloudOperation) {
        let engine = container.engine
        let start = DispatchTime.now().uptimeNanoseconds
        operation.isExecuting = true
        // One request: its fault decided once, before any of its work (SPEC §15).
        engine.open(operation.entryPoint, container: container, database: operation.faultDatabase) { operation.main(container: container) }
        operation.isExecuting = false
        operation.isFinished = true
        operation.completionBlock?()
        // The event reads the caller's account: only when someone listens.
        guard engine.events.hasObservers(.operationFinished) else { return }
        var event = Event(.operationFinished, caller: try? container.session.account, container: container.containerIdentifier)
        event.operation = operation.typeName
        event.items = operation.itemCount
        event.failed = operation.error?.partialErrors.count ?? (operation.error == nil ? 0 : operation.itemCount)
        event.duration = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        engine.emit(event)
    }
}
