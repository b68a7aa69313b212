import Crypto
import Foundation
import ShareFlow

/// Minting and checking the server's tokens (SPEC §13), in the shapes clients enforce: an API
/// token is 64 hex digits, a web auth token at least 100 base64url characters. The store keeps
/// their SHA-256 only.
public enum Credentials {
    /// A new API token for `container`.
    public static func newAPIToken(container: String, store: Store) throws -> String {
        let token = RandomIdentifier.bytes(32).map { String(format: "%02x", $0) }.joined()
        try store.addCredential(.apiToken, container: container, hash: hash(token))
        return token
    }

    /// A new web auth token for `account` in `container`, valid `ttl` seconds.
    public static func newWebAuthToken(container: String, account: Account, ttl: Double, store: Store) throws -> String {
        let token = Data(RandomIdentifier.bytes(96)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        try store.addCredential(.webAuthToken, container: container, hash: hash(token), accountID: account.id,
                                expiresAt: Date().timeIntervalSince1970 + ttl)
        return token
    }

    static func hash(_ token: String) -> String {
        SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
