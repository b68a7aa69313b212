import Foundation
import ShareFlow

/// One request at its endpoint, on the engine's thread: the server's state, the request, its
/// caller and its body. What every handler is a function of.
struct EndpointCall {
    typealias Object = WireFormat.Object
    let api: CloudKitAPI
    let request: DatabaseRequest
    /// The authenticated account; nil for the API token alone.
    let caller: Account?
    /// The directory's generation `caller` is current at (`Engine.accountsGeneration`): the
    /// engine's operations use it as is until the directory changes.
    let callerGeneration: Int
    let body: Object

    /// `current`: the caller and the generation it is current at (`CloudKitAPI.current`).
    init(api: CloudKitAPI, request: DatabaseRequest, current: (Account?, Int), body: Object) {
        self.api = api
        self.request = request
        (caller, callerGeneration) = current
        self.body = body
    }

    var engine: Engine { api.engine }

    /// The caller, for endpoints that need a user: none is 421 with a sign-in URL.
    func requireUser() throws -> Account {
        guard let caller else { throw CloudKitError.authenticationRequired(publicURL: engine.options.publicURL) }
        return caller
    }

    /// R30: the public database's records and zones read with the API token alone (CloudKit JS
    /// sites show public content to visitors who are not signed in), as the engine's public
    /// reader; every other request, and every write, needs a user or a key (421).
    func reader() throws -> Account {
        if caller == nil && request.scope == .public { return .publicReader }
        return try requireUser()
    }

    /// The request's container, in its environment, as `account`.
    func container(as account: Account) throws -> Container {
        let session = account.id == caller?.id ? engine.session(for: account, currentAt: callerGeneration) : engine.session(for: account)
        return try session.container(request.container, environment: request.environment)
    }

    /// The request's database, as `account`.
    func database(as account: Account) throws -> CloudDatabase {
        try container(as: account).database(request.scope)
    }
}
