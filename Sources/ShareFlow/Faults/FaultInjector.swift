import Foundation

/// What an operation (or one item of it) is, as fault rules match it (SPEC §15 F1).
public struct FaultRequest: Sendable {
    /// The native operation's name (`modifyRecords`), and over HTTP the request's subpath
    /// (`records/modify`): a rule naming either matches.
    public var operation: String
    public var subpath: String?
    public var container: String
    public var environment: CloudEnvironment
    /// `private`, `shared` or `public`; nil for an operation of no database (discovery).
    public var database: String?
    public var zone: String?
    public var recordType: String?
    public var recordName: String?
    /// The caller's userRecordID and email, if they have one.
    public var callerID: String?
    public var callerEmail: String?

    public init(operation: String, subpath: String? = nil, container: String, environment: CloudEnvironment, database: String? = nil,
                zone: String? = nil, recordType: String? = nil, recordName: String? = nil, callerID: String? = nil, callerEmail: String? = nil) {
        self.operation = operation
        self.subpath = subpath
        self.container = container
        self.environment = environment
        self.database = database
        self.zone = zone
        self.recordType = recordType
        self.recordName = recordName
        self.callerID = callerID
        self.callerEmail = callerEmail
    }
}

/// One fault injected (SPEC §15 F3): `sf.faults.history()`'s entries and `fault.injected`'s fields.
public struct FaultInjection: Sendable, Equatable {
    public let time: Double
    public let rule: Int
    /// Nil for a rule that only delayed.
    public let fault: FaultRule.Fault?
    public let operation: String
    public let caller: String?
    public let zone: String?
    public let recordName: String?
}

/// The armed fault rules and what they injected (SPEC §15): what an operation, or an item of
/// a modify, asks before it runs. Each rule has its own generator, seeded when it is armed,
/// and its own counts, so the same rules, seed and requests give the same faults (F3). Safe
/// from any thread: one lock, held only while deciding.
public final class FaultInjector: @unchecked Sendable {
    /// Who armed a rule: the config file's rules outlive `clear()`; a plugin's end when it unloads.
    public enum Owner: Sendable, Equatable {
        case config
        case runtime
        case plugin(String)
    }

    struct Armed {
        let id: Int
        let rule: FaultRule
        let owner: Owner
        var generator: SplitMix64
        var matches = 0
        var injections = 0
    }

    /// History kept: the last injections.
    public static let historyLimit = 1_000

    private let lock = NSLock()
    private var armed: [Armed] = []
    private var nextID = 1
    private var kept: [FaultInjection] = []
    /// Where the next entry of the history ring goes, once it is full.
    private var ringStart = 0

    public init() {}

    /// Arms `rule`; returns its id.
    @discardableResult
    public func add(_ rule: FaultRule, owner: Owner = .runtime) -> Int {
        lock.withLock {
            let id = nextID
            nextID += 1
            armed.append(Armed(id: id, rule: rule, owner: owner, generator: SplitMix64(seed: rule.seed)))
            return id
        }
    }

    /// Disarms rule `id`; false if no rule has it.
    @discardableResult
    public func remove(id: Int) -> Bool {
        lock.withLock {
            let before = armed.count
            armed.removeAll { $0.id == id }
            return armed.count != before
        }
    }

    /// Disarms the rules armed at run time (Lua, the admin route) — never the config file's,
    /// nor a plugin's, which end with it (`removeAll(owner:)`). Returns how many went.
    @discardableResult
    public func clear() -> Int {
        removeAll { $0 == .runtime }
    }

    /// Disarms every rule of owners `matching` (a plugin unloading: `.plugin(name)`).
    @discardableResult
    public func removeAll(where matching: (Owner) -> Bool) -> Int {
        lock.withLock {
            let before = armed.count
            armed.removeAll { matching($0.owner) }
            return before - armed.count
        }
    }

    /// The armed rules, oldest first.
    public func list() -> [(id: Int, rule: FaultRule, owner: Owner)] {
        lock.withLock { armed.map { ($0.id, $0.rule, $0.owner) } }
    }

    /// The last `historyLimit` injections, oldest first.
    public func history() -> [FaultInjection] {
        lock.withLock { Array(kept[ringStart...] + kept[..<ringStart]) }
    }

    /// The first armed rule that matches `request` and fires, if any — its match counted, its
    /// generator drawn, its injection recorded. Rules are asked in the order armed; a rule
    /// that matches but does not fire (by `after`, chance or `count`) lets the next be asked.
    public func decide(_ request: FaultRequest) -> (rule: FaultRule, id: Int)? {
        lock.withLock {
            guard !armed.isEmpty else { return nil }
            for index in armed.indices where FaultInjector.matches(armed[index].rule, request) {
                let rule = armed[index].rule
                armed[index].matches += 1
                // Drawn at every match, whatever else decides: the sequence of draws is the
                // sequence of matches, so a seed replays exactly (F3).
                let roll = armed[index].generator.nextUnitDouble()
                guard armed[index].matches > rule.after, roll < rule.probability,
                      rule.count.map({ armed[index].injections < $0 }) ?? true else { continue }
                armed[index].injections += 1
                record(FaultInjection(time: Date().timeIntervalSince1970, rule: armed[index].id, fault: rule.fault,
                                      operation: request.operation, caller: request.callerEmail ?? request.callerID,
                                      zone: request.zone, recordName: request.recordName))
                return (rule, armed[index].id)
            }
            return nil
        }
    }

    /// Under the lock.
    private func record(_ injection: FaultInjection) {
        if kept.count < FaultInjector.historyLimit {
            kept.append(injection)
        } else {
            kept[ringStart] = injection
            ringStart = (ringStart + 1) % FaultInjector.historyLimit
        }
    }

    static func matches(_ rule: FaultRule, _ r: FaultRequest) -> Bool {
        if rule.operation != "*", rule.operation != r.operation, rule.operation != r.subpath {
            // A subpath rule matches a native call of what it runs (`records/modify` ≡
            // `modifyRecords`), not another subpath that runs the same.
            guard r.subpath == nil, let native = FaultRule.subpaths[rule.operation] ?? nil, native == r.operation else { return false }
        }
        if let container = rule.container, container != r.container { return false }
        if let environment = rule.environment, environment != r.environment { return false }
        if let database = rule.database, database != r.database { return false }
        if let zone = rule.zone, zone != r.zone { return false }
        if let type = rule.recordType, type != r.recordType { return false }
        if let glob = rule.recordName {
            guard let name = r.recordName, FaultRule.globMatches(glob, name) else { return false }
        }
        if let caller = rule.caller {
            guard caller == r.callerID || caller.lowercased() == r.callerEmail?.lowercased() else { return false }
        }
        return true
    }
}

/// SplitMix64 (Steele, Lea and Flood): a small generator whose whole state is its seed, so a
/// rule armed again with the same seed draws the same numbers on every platform (and a bench
/// or a test run replays its inputs).
package struct SplitMix64 {
    private var state: UInt64

    package init(seed: UInt64) {
        state = seed
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A double in [0, 1) from the top 53 bits.
    package mutating func nextUnitDouble() -> Double {
        Double(next() >> 11) * 0x1p-53
    }
}
