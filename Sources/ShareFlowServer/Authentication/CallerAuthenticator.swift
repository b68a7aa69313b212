import Foundation
import ShareFlow

/// Who a database request acts as (SPEC §13): a server-to-server key's account; else, once
/// `ckAPIToken` opens the container, the user of `ckWebAuthToken` or the account a plugin's
/// authenticator names; no account for the API token alone. `authenticate` runs on the
/// engine's thread.
///
/// Credentials and accounts already checked are kept, so a request costs the engine no store
/// reads for them: tokens never change once minted (an expired one is told by its time), and
/// accounts are read again when the directory changes (`accountsGeneration`). A user's request
/// whose credentials are all kept is answered from them on the connection's thread
/// (`knownCaller`), so it goes to the engine's thread once, for its endpoint.
final class CallerAuthenticator: @unchecked Sendable {  // caches guarded by `lock`
    let engine: Engine
    private let lock = NSLock()

    init(engine: Engine) { self.engine = engine }

    private var apiTokens: Set<String> = []
    /// Signatures of server-to-server requests already accepted, until their date leaves the
    /// 10-minute window. The least recent go first past the bound.
    private var usedSignatures = RecentlyUsed<String, Double>(capacity: 200_000)
    private var webTokens: [String: (accountID: Int64, expiresAt: Double?)] = [:]
    private var accounts: [Int64: Account] = [:]
    private var accountsGeneration = -1
    private static let maxCached = 10_000

    /// The caller of a user's request whose API token, web auth token and account were all
    /// checked before (the token unexpired, the directory unchanged since), without the
    /// engine's thread; nil when anything must be read or asked (a key's signature, a plugin's
    /// authenticator, a credential not seen yet).
    func knownCaller(_ r: DatabaseRequest) -> Caller? {
        guard r.headers["x-apple-cloudkit-request-keyid"] == nil, let token = r.apiToken, !token.isEmpty,
            let web = r.webAuthToken, !web.isEmpty
        else { return nil }
        let generation = engine.accountsGeneration
        let now = Date().timeIntervalSince1970
        return lock.withLock {
            guard apiTokens.contains(Self.apiKey(r, token)), let known = webTokens[Self.webKey(r, web)],
                (known.expiresAt ?? .infinity) >= now, accountsGeneration == generation,
                let account = accounts[known.accountID]
            else { return nil }
            return Caller(account: account, identity: "account \(account.id)", generation: generation, expiresAt: known.expiresAt)
        }
    }

    /// Forgets every credential and account remembered: a token revoked by another process
    /// (`StoreWatch`) is looked up again, and refused.
    func forgetCredentials() {
        lock.withLock {
            apiTokens.removeAll()
            webTokens.removeAll()
            accounts.removeAll()
            accountsGeneration = -1
        }
    }

    func authenticate(_ r: DatabaseRequest) throws -> Caller {
        let generation = engine.accountsGeneration
        if let keyID = r.headers["x-apple-cloudkit-request-keyid"] {
            let account = try serverKeyAccount(r, keyID: keyID)
            return Caller(account: account, identity: "account \(account.id)", generation: generation)
        }
        let apiToken = try openContainer(r)
        if let (account, expiresAt) = try user(r) {
            return Caller(account: account, identity: "account \(account.id)", generation: generation, expiresAt: expiresAt)
        }
        if let account = try pluginAccount(r) {
            return Caller(account: account, identity: "account \(account.id)", generation: generation)
        }
        return Caller(account: nil, identity: "api " + Credentials.hash(apiToken), generation: generation)
    }

    private static func apiKey(_ r: DatabaseRequest, _ token: String) -> String {
        r.container + "\u{0}" + r.environment.rawValue + "\u{0}" + token
    }

    private static func webKey(_ r: DatabaseRequest, _ token: String) -> String { r.container + "\u{0}" + token }

    /// The account a plugin's authenticator names for a request without a user token, if any.
    private func pluginAccount(_ r: DatabaseRequest) throws -> Account? {
        guard !engine.authenticators.isEmpty else { return nil }
        let request = AuthenticationRequest(
            method: r.method,
            path: r.path,
            container: r.container,
            environment: r.environment.rawValue,
            database: r.scope.rawValue,
            headers: r.headers,
            query: r.query
        )
        do {
            return try engine.authenticate(request)?.account
        } catch let e as ShareFlowError {
            // The store's own failure under an authenticator is the store's (503); an
            // authenticator's failure is said without its file and traceback.
            if e.isOutage { throw CloudKitError(e) }
            if e.isOperatorDetail { throw CloudKitError.authenticationFailed(WireFormat.clientText(e)) }
            throw CloudKitError.authenticationFailed(e.message)
        }
    }

    /// A request signed with a registered key (ECDSA P-256 over `date:base64(sha256(body)):subpath`),
    /// dated within 10 minutes, for the public database's records and zones only.
    private func serverKeyAccount(_ r: DatabaseRequest, keyID: String) throws -> Account {
        let refuse = CloudKitError.authenticationFailed
        guard r.apiToken == nil, r.webAuthToken == nil else {
            throw refuse("a request signed with a server-to-server key carries no ckAPIToken or ckWebAuthToken")
        }
        guard let key = try engine.credentials.find(.serverKey, container: r.container, environment: r.environment, hash: keyID.lowercased()),
            let pem = key.publicKey, let accountID = key.accountID
        else {
            throw refuse("X-Apple-CloudKit-Request-KeyID is not a key registered for \(Naming.printable(r.container)) (shareflow keys add)")
        }
        guard let dateText = r.headers["x-apple-cloudkit-request-iso8601date"], let date = Self.iso8601(dateText) else {
            throw refuse("X-Apple-CloudKit-Request-ISO8601Date is missing or not an ISO 8601 date like 2016-01-25T22:15:43Z")
        }
        guard abs(date.timeIntervalSinceNow) <= 600 else {
            throw refuse("X-Apple-CloudKit-Request-ISO8601Date \(dateText) is more than 10 minutes from the server's time")
        }
        guard let signature = r.headers["x-apple-cloudkit-request-signaturev1"],
            Credentials.verify(signature: signature, date: dateText, body: r.body, paths: Array(Set([r.path, r.target])), publicKeyPEM: pem)
        else {
            throw refuse("X-Apple-CloudKit-Request-SignatureV1 is missing or not the key's signature of date:base64(sha256(body)):path")
        }
        // A signature is good once: the same signed request sent again within its window (a
        // replay by whoever saw it) is refused. Kept until its date leaves the window.
        let seen = keyID.lowercased() + " " + (Credentials.canonicalSignature(signature) ?? signature)
        let now = Date().timeIntervalSince1970
        let replayed = lock.withLock { () -> Bool in
            if let until = usedSignatures[seen], until > now { return true }
            usedSignatures[seen] = date.timeIntervalSince1970 + 600
            return false
        }
        if replayed {
            throw refuse("X-Apple-CloudKit-Request-SignatureV1 was already used: a signed request is accepted once (sign each request anew)")
        }
        // users/current too: CloudKit JS's server-to-server setUpAuth always asks it, and
        // Apple's Node sample starts with it (SPEC §13 wave 4). Apple refuses a key the other
        // users/ routes.
        guard r.scope == .public, !r.subpath.hasPrefix("users/") || r.subpath == "users/current" else {
            throw refuse(
                "a server-to-server key reaches the public database's records, zones and users/current only; \(r.scope.rawValue)/\(r.subpath) needs a ckWebAuthToken"
            )
        }
        guard let account = try engine.accounts.account(id: accountID) else {
            throw refuse("the account of key \(keyID) no longer exists")
        }
        return account
    }

    static func iso8601(_ text: String) -> Date? {
        let f = ISO8601DateFormatter()
        if let d = f.date(from: text) { return d }
        f.formatOptions.insert(.withFractionalSeconds)
        return f.date(from: text)
    }

    /// The request's `ckAPIToken`, once it is known to open this container in this
    /// environment (R32: one environment per token).
    private func openContainer(_ r: DatabaseRequest) throws -> String {
        guard let token = r.apiToken, !token.isEmpty else {
            throw CloudKitError.authenticationFailed("ckAPIToken is required")
        }
        let key = Self.apiKey(r, token)
        if lock.withLock({ apiTokens.contains(key) }) { return token }
        guard try engine.credentials.find(.apiToken, container: r.container, environment: r.environment, hash: Credentials.hash(token)) != nil else {
            throw CloudKitError.authenticationFailed("ckAPIToken is not valid for \(Naming.printable(r.container)) in \(r.environment.rawValue)")
        }
        lock.withLock {
            if apiTokens.count >= Self.maxCached { apiTokens.removeAll() }
            apiTokens.insert(key)
        }
        return token
    }

    /// The user of `ckWebAuthToken` and when the token expires, or nil without one; a bad or
    /// expired token is refused.
    private func user(_ r: DatabaseRequest) throws -> (Account, Double?)? {
        guard let token = r.webAuthToken, !token.isEmpty else { return nil }
        let key = Self.webKey(r, token)
        var known = lock.withLock { webTokens[key] }
        if known == nil {
            guard
                let credential = try engine.credentials.find(
                    .webAuthToken,
                    container: r.container,
                    environment: r.environment,
                    hash: Credentials.hash(token)
                ),
                let id = credential.accountID
            else {
                throw CloudKitError.authenticationFailed("ckWebAuthToken is not valid for \(Naming.printable(r.container))")
            }
            known = (id, credential.expiresAt)
            lock.withLock {
                if webTokens.count >= Self.maxCached { webTokens.removeAll() }
                webTokens[key] = known
            }
        }
        if let expiry = known!.expiresAt, expiry < Date().timeIntervalSince1970 {
            // Expired is not wrong: the user signs in again (421), as CloudKit JS expects.
            throw CloudKitError.authenticationRequired(publicURL: engine.options.publicURL, reason: "ckWebAuthToken has expired")
        }
        guard let account = try cachedAccount(id: known!.accountID) else {
            throw CloudKitError.authenticationFailed("the account of this ckWebAuthToken no longer exists")
        }
        return (account, known!.expiresAt)
    }

    private func cachedAccount(id: Int64) throws -> Account? {
        let generation = engine.accountsGeneration
        let cached = lock.withLock { () -> Account? in
            if accountsGeneration != generation {
                accounts.removeAll()
                accountsGeneration = generation
            }
            return accounts[id]
        }
        if let cached { return cached }
        guard let a = try engine.accounts.account(id: id) else { return nil }
        lock.withLock {
            // Kept only if the directory did not change while it was read.
            guard accountsGeneration == generation, engine.accountsGeneration == generation else { return }
            if accounts.count >= Self.maxCached { accounts.removeAll() }
            accounts[id] = a
        }
        return a
    }
}
