import Foundation
import GRDB

/// What a stored credential grants: an API token opens a container; a web auth token also
/// names its user; a server-to-server key, stored as its public key under its key ID, signs
/// requests to the public database as its account (SPEC §13). Of tokens, only hashes are stored.
public struct StoredCredential: Sendable {
    /// `adminToken`: the server's admin routes (SPEC §15), under `Credentials.adminScope`.
    /// `signInCode`: a one-time code the sign-in page trades for a web auth token of its
    /// account in its container (SPEC §21, `shareflow tokens signin`); taken once (`take`).
    public enum Kind: String, Sendable, CaseIterable { case apiToken, webAuthToken, serverKey, adminToken, signInCode }
    /// What the credential is, and so what it grants.
    public let kind: Kind
    /// The container identifier it is for (`Credentials.adminScope` for an admin token).
    public let container: String
    /// An API token's environment (R32); other credentials serve both (nil).
    public let environment: CloudEnvironment?
    /// The account a web auth token or server key acts as; nil for an API or admin token.
    public let accountID: Int64?
    /// When it stops being accepted, in seconds since 1970; nil: never.
    public let expiresAt: Double?
    /// A server key's public key (PEM).
    public let publicKey: String?
}

extension Store {
    /// Records a credential by its hash.
    package func addCredential(
        _ kind: StoredCredential.Kind,
        container: String,
        environment: CloudEnvironment? = nil,
        hash: String,
        accountID: Int64? = nil,
        expiresAt: Double? = nil,
        publicKey: String? = nil
    ) throws {
        _ = try write { tx in
            try tx.run(
                """
                INSERT INTO credential (kind, container, environment, hash, accountID, expiresAt, createdAt, publicKey) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (hash) DO UPDATE SET accountID = excluded.accountID, expiresAt = excluded.expiresAt
                """,
                [kind.rawValue, container, environment?.rawValue, hash, accountID, expiresAt, EngineClock.seconds, publicKey]
            )
        }
    }

    /// The credential with this hash for `container`, if any (expired ones too: the caller
    /// tells an expired token from a wrong one). A credential that names an environment other
    /// than `environment` is not found (R32).
    package func credential(_ kind: StoredCredential.Kind, container: String, environment: CloudEnvironment, hash: String) throws -> StoredCredential?
    {
        try read { tx in
            try tx.fetchOne(
                """
                SELECT id, accountID, expiresAt, publicKey, environment FROM credential
                WHERE kind = ? AND container = ? AND hash = ? AND (environment IS NULL OR environment = ?)
                """,
                [kind.rawValue, container, hash, environment.rawValue],
                table: "credential",
                keyAt: 0
            ) {
                StoredCredential(
                    kind: kind,
                    container: container,
                    environment: try $0.optionalText(4, "environment") == nil ? nil : try $0.word(4, "environment"),
                    accountID: try $0.optionalInteger(1, "accountID"),
                    expiresAt: try $0.optionalReal(2, "expiresAt"),
                    publicKey: try $0.optionalText(3, "publicKey")
                )
            }
        }
    }
}

extension Store {
    /// Takes the credential of `kind` with this hash: reads it and deletes it in one write, and
    /// answers it only when that delete removed it. Of two takes of one credential at once (two
    /// threads, two processes, two PostgreSQL nodes) exactly one gets it; the other finds the row
    /// gone (its delete removes nothing) and gets nil. An expired credential is deleted too and
    /// answered nil, as one never made. The same SQL on every driver.
    package func takeCredential(_ kind: StoredCredential.Kind, hash: String) throws -> StoredCredential? {
        try write { tx in
            guard
                let (id, credential) = try tx.fetchOne(
                    """
                    SELECT id, container, accountID, expiresAt, publicKey, environment FROM credential
                    WHERE kind = ? AND hash = ?
                    """,
                    [kind.rawValue, hash],
                    table: "credential",
                    keyAt: 0,
                    {
                        (
                            try $0.integer(0, "id"),
                            StoredCredential(
                                kind: kind,
                                container: try $0.text(1, "container"),
                                environment: try $0.optionalText(5, "environment") == nil ? nil : try $0.word(5, "environment"),
                                accountID: try $0.optionalInteger(2, "accountID"),
                                expiresAt: try $0.optionalReal(3, "expiresAt"),
                                publicKey: try $0.optionalText(4, "publicKey")
                            )
                        )
                    }
                )
            else { return nil }
            guard try tx.run("DELETE FROM credential WHERE id = ?", [id]) == 1 else { return nil }
            // Expired: gone all the same, and answered as a credential never made.
            if let expiresAt = credential.expiresAt, expiresAt <= Date().timeIntervalSince1970 { return nil }
            return credential
        }
    }

    /// Removes every credential with this hash (any kind, any container) and moves the
    /// credentials' generation, which every server on the store watches (`credentialsGeneration`)
    /// to forget what it remembered of credentials. Returns how many went.
    package func revokeCredential(hash: String) throws -> Int {
        try write { tx in
            let removed = try tx.run("DELETE FROM credential WHERE hash = ?", [hash])
            try tx.run(
                """
                INSERT INTO shareflow_meta (key, value) VALUES ('credentialsGeneration', '1')
                ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(shareflow_meta.value AS BIGINT) + 1 AS TEXT)
                """,
                []
            )
            return removed
        }
    }

    /// The credentials' generation (moved by every revocation) and the directory's (moved by
    /// every change to an account), read together; 0 before the first.
    package func generations() throws -> (credentials: Int64, directory: Int64) {
        try read { tx in
            var found: [String: Int64] = [:]
            for row in try tx.rows(
                """
                SELECT key, CAST(value AS BIGINT) FROM shareflow_meta WHERE key IN ('credentialsGeneration', 'directoryGeneration')
                """
            ) {
                if case .string(let key) = row[0].storage, case .int64(let n) = row[1].storage { found[key] = n }
            }
            return (found["credentialsGeneration"] ?? 0, found["directoryGeneration"] ?? 0)
        }
    }
}
