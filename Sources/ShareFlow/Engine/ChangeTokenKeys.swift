import Crypto

/// What sealing change tokens (S1, `ChangeToken.encoded`) keeps between calls: the two keys
/// derived from a store's change-token key, and the tokens this process sealed lately. A
/// feed read page by page brings back, with each page, the token the page before gave; opening
/// it again (AES-GCM and an HMAC) and deriving the keys on each call were a tenth of a first
/// sync (issue 48, callgrind: 274K instructions a page).
///
/// A token is known only together with the key it was sealed with: the same string under
/// another store's key is opened (and refused) as any other.
final class ChangeTokenKeys: Sendable {
    static let shared = ChangeTokenKeys()

    /// The most tokens remembered: past it, the oldest are forgotten (and opened again if they
    /// come back).
    static let capacity = 512

    private struct State {
        var key: [UInt8] = []
        var derived: (seal: SymmetricKey, nonce: SymmetricKey)?
        var tokens: [TokenKey: ChangeToken] = [:]
        var order: [TokenKey] = []
        var next = 0
    }

    private struct TokenKey: Hashable {
        let key: [UInt8]
        let string: String
    }

    private let state = Locked(State())

    /// The seal and nonce keys of `key`, derived once while the same key is used.
    func derived(from key: [UInt8]) -> (seal: SymmetricKey, nonce: SymmetricKey) {
        state.withLock { state in
            if let derived = state.derived, state.key == key { return derived }
            let derived = ChangeToken.keys(key)
            state.key = key
            state.derived = derived
            return derived
        }
    }

    /// Notes that `string` is `token` sealed with `key`.
    func sealed(_ string: String, _ token: ChangeToken, key: [UInt8]) {
        let entry = TokenKey(key: key, string: string)
        state.withLock { state in
            guard state.tokens[entry] == nil else { return }
            if state.order.count < ChangeTokenKeys.capacity {
                state.order.append(entry)
            } else {
                state.tokens[state.order[state.next]] = nil
                state.order[state.next] = entry
                state.next = (state.next + 1) % ChangeTokenKeys.capacity
            }
            state.tokens[entry] = token
        }
    }

    /// The token `string` says, when this process sealed it with `key` lately; nil otherwise.
    func known(_ string: String, key: [UInt8]) -> ChangeToken? {
        let entry = TokenKey(key: key, string: string)
        return state.withLock { $0.tokens[entry] }
    }
}
