import Foundation

/// Foundation's `QualityOfService` orders a queue's waiting operations (O4), as in CloudKit.
extension QualityOfService {
    /// Every level with its Swift name, most urgent first.
    public static let named: [(name: String, value: QualityOfService)] = [
        ("userInteractive", .userInteractive), ("userInitiated", .userInitiated), ("default", .default),
        ("utility", .utility), ("background", .background),
    ]

    /// The level of a Swift name (`"userInitiated"`); nil for any other name.
    public init?(name: String) {
        guard let v = QualityOfService.named.first(where: { $0.name == name })?.value else { return nil }
        self = v
    }

    /// The level's Swift name (`"userInitiated"`), as `named` spells it.
    public var name: String { QualityOfService.named.first { $0.value == self }?.name ?? "default" }

    var rank: Int { QualityOfService.named.count - (QualityOfService.named.firstIndex { $0.value == self } ?? 2) }
}

/// The base of every operation, as `CKOperation`: configure it, add it to a container's queue,
/// and it runs on behalf of that container's session (O1). Per-item blocks are called exactly
/// once per input item in input order, then the completion blocks once (O2).
///
/// The engine is synchronous: adding only queues the operation. It runs, with its blocks called
/// on the waiting thread, when something waits: `waitUntilFinished()`, the container's
/// `waitUntilAllOperationsAreFinished()`, or `Container.run(_:)`.
///
/// ```swift
/// let op = FetchRecordsOperation(recordIDs: [tripID])
/// op.qualityOfService = .userInitiated
/// op.completionBlock = { print("done") }
/// container.add(op)
/// op.waitUntilFinished()
/// if let error = op.error { print(error.code, error.partialErrors) }
/// ```
/// Not `open`: what an operation does is the engine's (`main(container:)` is internal), so a
/// subclass made outside ShareFlow could run nothing.
public class CloudOperation: CustomStringConvertible {
    /// A random UUID string made with the operation, as `CKOperation.operationID`.
    public let operationID = RandomIdentifier.uuidString()
    /// Orders the queue's waiting operations, most urgent first; equal levels run in the order
    /// added (O4). Default: `.default`.
    public var qualityOfService: QualityOfService = .default
    /// Called after the operation's own completion blocks.
    public var completionBlock: (() -> Void)?
    /// For database operations: which database (the private one when unset).
    public var database: CloudDatabase? {
        get { chosenDatabase ?? queuedScope.flatMap { queue?.container.database($0) } }
        set {
            chosenDatabase = newValue
            queuedScope = nil
        }
    }
    /// The database as set, until the operation waits on that database's own container.
    private var chosenDatabase: CloudDatabase?
    /// While the operation waits on its database's own container: the scope alone. The
    /// container keeps its queue, the queue its operations, and a database keeps its container:
    /// held whole, an operation added and never waited for kept its container, session and
    /// engine alive for good (a cycle nothing freed).
    private var queuedScope: DatabaseScope?

    /// The queue of `container` takes the operation: its database, if it is one of that
    /// container's, is kept by scope from now on (a database is a view its container makes).
    func queued(on container: Container) {
        guard let chosen = chosenDatabase, chosen.container === container else { return }
        queuedScope = chosen.databaseScope
        chosenDatabase = nil
    }
    /// Whether the operation reads or writes one database (CloudKit's `CKDatabaseOperation`),
    /// so `CloudDatabase.add` takes it; the others are the container's.
    public var isDatabaseOperation: Bool { false }
    /// Whether `cancel()` was called.
    public private(set) var isCancelled = false
    /// True while the queue runs the operation.
    public internal(set) var isExecuting = false
    /// True once the operation has run; set before `completionBlock` is called.
    public internal(set) var isFinished = false
    /// The error the operation completed with, once finished.
    public internal(set) var error: ShareFlowError?
    weak var queue: ContainerQueue?
    /// Whether the operation was added to a container's queue.
    public var isQueued: Bool { queue != nil }
    var addedOrder = 0

    /// An operation with nothing to do: use a subclass (`ModifyRecordsOperation`, …), whose
    /// initialiser takes its inputs.
    public init() {}

    /// The operation's type name, as CloudKit spells it without its prefix.
    public var typeName: String { String(describing: type(of: self)) }

    /// The type name, the state (waiting, executing, cancelled, finished) and the quality of
    /// service: `FetchRecordsOperation(waiting, qos: default)`.
    public var description: String {
        "\(typeName)(\(isFinished ? "finished" : isExecuting ? "executing" : isCancelled ? "cancelled" : "waiting"), qos: \(qualityOfService.name))"
    }

    /// Stops the items not processed yet; the operation completes with `operationCancelled` (O4).
    public func cancel() { isCancelled = true }

    /// Runs the waiting operations of its queue until this one has finished.
    public func waitUntilFinished() {
        guard let queue else { return }
        queue.wait(for: self)
    }

    /// Overridden by each operation: process the items, call the blocks.
    func main(container: Container) {}

    /// How many input items the operation had.
    var itemCount: Int { 0 }

    /// The request the operation is to fault rules (SPEC §15): its native name and items.
    var entryPoint: EntryPoint { .operation(name: faultName, items: faultItems()) }

    /// The operation's native name, as rules name it: the type name without `Operation`, in
    /// lower camel case (`modifyRecords`), the change feeds' as their calls' (`databaseChanges`).
    var faultName: String {
        switch self {
        case is ShareRequestAccessOperation: return "requestShareAccess"
        case is FetchDatabaseChangesOperation: return "databaseChanges"
        case is FetchRecordZoneChangesOperation: return "recordZoneChanges"
        default:
            let name = typeName.hasSuffix("Operation") ? String(typeName.dropLast("Operation".count)) : typeName
            return name.prefix(1).lowercased() + name.dropFirst()
        }
    }

    /// What fault rules match the operation by (SPEC §15): its items, or none.
    func faultItems() -> [FaultItem] { [] }

    /// The database fault rules match the operation in; nil for the container's operations.
    var faultDatabase: DatabaseScope? { database?.databaseScope ?? .private }

    /// Runs `body` for each item in order, reporting each through `deliver` exactly once; an
    /// item left after `cancel()` is reported as `operationCancelled`. Returns the failures.
    func process<Item, Output>(
        _ items: [Item],
        id: (Item) -> String,
        body: (Item) throws -> Output,
        deliver: (Item, Result<Output, ShareFlowError>) -> Void
    ) -> [(item: String, error: ShareFlowError)] {
        var failures: [(item: String, error: ShareFlowError)] = []
        for item in items {
            let result: Result<Output, ShareFlowError>
            if isCancelled {
                result = .failure(ShareFlowError(.operationCancelled, "\(id(item)): the operation was cancelled before this item"))
            } else {
                do { result = .success(try body(item)) } catch { result = .failure(.wrap(error)) }
            }
            if case .failure(let e) = result { failures.append((id(item), e)) }
            deliver(item, result)
        }
        return failures
    }

    /// The completion error for a batch: cancelled, partial failure, or none.
    func completionError(_ failures: [(item: String, error: ShareFlowError)], total: Int) -> ShareFlowError? {
        if isCancelled { return ShareFlowError(.operationCancelled, "\(typeName) was cancelled") }
        // A request-level fault (SPEC §15) is the operation's error, not a partial failure;
        // each item has it too (O2).
        if !failures.isEmpty, let scope = FaultScope.current, let injected = scope.failure ?? scope.afterCommit { return injected }
        return failures.isEmpty ? nil : .partial(failures, of: total)
    }

    /// O4: an unset required input.
    func missing(_ name: String) -> ShareFlowError {
        ShareFlowError.invalid("\(typeName): \(name) is not set (O4)")
    }
}
