import NIOConcurrencyHelpers
import NIOCore

/// The connections each client address holds, and the most one may: half the node's
/// connection cap (at least one). Idle sockets from one address held every slot of a lowered
/// cap (48 under `ulimit -n 128`) for their header deadlines, one after another, and no other
/// client was served. A reverse proxy's users share its address, so the share is generous: a
/// proxy keeps few connections alive and reuses them.
final class ConnectionsByAddress: Sendable {
    let perAddress: Int
    private let open = NIOLockedValueBox([String: Int]())

    init(cap: Int) {
        perAddress = max(1, cap / 2)
    }

    /// Takes a place for `address`; false when it holds its share already.
    func admit(_ address: String) -> Bool {
        open.withLockedValue { open in
            let held = open[address, default: 0]
            guard held < perAddress else { return false }
            open[address] = held + 1
            return true
        }
    }

    func release(_ address: String) {
        open.withLockedValue { open in
            let held = open[address, default: 1] - 1
            open[address] = held > 0 ? held : nil
        }
    }
}
