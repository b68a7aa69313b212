import Foundation

extension Engine {
    /// The credentials a server accepts (SPEC §13), kept in the engine's store by hash: what a
    /// server reaches instead of the store's rows, so every reader sees them the same way.
    ///
    /// ```swift
    /// try engine.credentials.add(.apiToken, container: "iCloud.example", environment: .production, hash: digest)
    /// let found = try engine.credentials.find(.apiToken, container: "iCloud.example", environment: .production, hash: digest)
    /// ```
    public var credentials: CredentialBook { CredentialBook(engine: self) }
}

/// The engine's book of credentials: API tokens, web auth tokens and server-to-server keys,
/// each under the hash a server computes from what a client sends.
public struct CredentialBook {
    let engine: Engine

    /// Records a credential by its hash (the same hash again updates its account and expiry).
    public func add(
        _ kind: StoredCredential.Kind,
        container: String,
        environment: CloudEnvironment? = nil,
        hash: String,
        accountID: Int64? = nil,
        expiresAt: Double? = nil,
        publicKey: String? = nil
    ) throws {
        try engine.locked {
            try engine.store.addCredential(
                kind,
                container: container,
                environment: environment,
                hash: hash,
                accountID: accountID,
                expiresAt: expiresAt,
                publicKey: publicKey
            )
        }
    }

    /// The credential with this hash for `container`, expired ones included (the caller tells
    /// an expired token from a wrong one); one naming another environment is not found (R32).
    public func find(_ kind: StoredCredential.Kind, container: String, environment: CloudEnvironment, hash: String) throws -> StoredCredential? {
        try engine.locked {
            try engine.store.credential(kind, container: container, environment: environment, hash: hash)
        }
    }

    /// Takes the credential of `kind` with this hash, once: it is deleted as it is read, and of
    /// two takes at once (threads, processes, PostgreSQL nodes) one gets it and the other nil.
    /// An expired one is deleted and answered nil, exactly as a wrong hash is.
    ///
    /// ```swift
    /// if let code = try engine.credentials.take(.signInCode, hash: digest) { … }   // a second take: nil
    /// ```
    public func take(_ kind: StoredCredential.Kind, hash: String) throws -> StoredCredential? {
        try engine.locked {
            try engine.store.takeCredential(kind, hash: hash)
        }
    }

    /// Revokes the credential with this hash, of any kind: every server on the store refuses
    /// it within a second (they watch `generation`). Returns how many were removed (0: none had it).
    public func revoke(hash: String) throws -> Int {
        try engine.locked {
            try engine.store.revokeCredential(hash: hash)
        }
    }

    /// Two counters every process on the store moves: `credentials` at each revocation,
    /// `directory` at each change to an account. A server watches them to forget what it
    /// remembered (`StoreWatch`).
    public func generations() throws -> (credentials: Int64, directory: Int64) {
        try engine.locked {
            try engine.store.generations()
        }
    }
}
