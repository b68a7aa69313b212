import Foundation
import Hummingbird
import HummingbirdCore
import NIOCore
import ShareFlow

/// A request's context: Hummingbird's, the client's address (the rate limiter's bucket for
/// requests whose credentials are not known yet), and what the middleware of a database route
/// found — the request it names (`DatabaseRequestMiddleware`) and its caller
/// (`AuthenticationMiddleware`).
struct ServerRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    /// The connection: a fault rule's `networkFailure` closes it without an answer (SPEC §15).
    let channel: any Channel
    /// The container, environment, database and body of a database route, once checked.
    var database: DatabaseRequest?
    /// Who the request acts as, once authenticated.
    var caller: Caller?
    /// What inner middleware learns for the access log, which sees the context as it was when
    /// it called in.
    let notes = RequestNotes()

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }
}

/// Who a request acts as: an account, or none (the API token alone, for public reads), and
/// what the rate limiter knows it by.
struct Caller: Sendable {
    let account: Account?
    /// The rate limiter's identity: an account, or an API token (by hash) without one.
    let identity: String
    /// The directory's generation the account was read at (`Engine.accountsGeneration`): an
    /// endpoint reads the account again when the directory changed since.
    let generation: Int
    /// When the request's web auth token expires (seconds since 1970), if it does: a request
    /// that outlives it (a change stream) ends then.
    var expiresAt: Double? = nil

    /// Whether the credentials this caller came with have expired by now.
    var hasExpired: Bool { expiresAt.map { $0 < Date().timeIntervalSince1970 } ?? false }
}

/// Written by the authentication middleware, read by the access log around it once the
/// response is made (the context it holds is the one it passed in). Unchecked: one request's
/// tasks use it one after another, under `lock`.
final class RequestNotes: @unchecked Sendable {
    private let lock = NSLock()
    private var _caller: String?
    private var _faults: [String] = []

    /// The faults injected into the request (`fault=` in the access log).
    var faults: [String] { lock.withLock { _faults } }

    func addFault(_ name: String) {
        lock.withLock { if !_faults.contains(name) { _faults.append(name) } }
    }

    /// Who asked, for the access log (an address or a user record name; never a token).
    var caller: String? {
        get { lock.withLock { _caller } }
        set { lock.withLock { _caller = newValue } }
    }
}
