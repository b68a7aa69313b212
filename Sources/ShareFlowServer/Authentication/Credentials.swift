import Crypto
import Foundation
import ShareFlow

/// Minting and checking the server's credentials (SPEC §13), in the shapes clients enforce: an
/// API token is 64 hex digits, a web auth token at least 100 base64url characters, a key ID 64
/// hex digits. The store keeps the tokens' SHA-256 only.
public enum Credentials {
    /// A new API token for `container` in `environment`: it opens that data set only (R32).
    public static func newAPIToken(container: String, environment: CloudEnvironment = .default, engine: Engine) throws -> String {
        let token = RandomIdentifier.bytes(32).map { String(format: "%02x", $0) }.joined()
        try engine.credentials.add(.apiToken, container: container, environment: environment, hash: hash(token))
        return token
    }

    /// What an admin token is stored under in place of a container: it opens the server's
    /// admin routes, no container's data.
    public static let adminScope = "*admin*"

    /// A new admin token (64 hex digits) for the admin routes (`/admin/1/faults`, SPEC §15).
    public static func newAdminToken(engine: Engine) throws -> String {
        let token = RandomIdentifier.bytes(32).map { String(format: "%02x", $0) }.joined()
        try engine.credentials.add(.adminToken, container: adminScope, hash: hash(token))
        return token
    }

    /// A new web auth token for `account` in `container`, valid `ttl` seconds.
    public static func newWebAuthToken(container: String, account: Account, ttl: Double, engine: Engine) throws -> String {
        let token = Data(RandomIdentifier.bytes(96)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        try engine.credentials.add(
            .webAuthToken,
            container: container,
            hash: hash(token),
            accountID: account.id,
            expiresAt: Date().timeIntervalSince1970 + ttl
        )
        return token
    }

    public struct KeyError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Registers an ECDSA P-256 public key (PEM) for `container`, signing as `account`;
    /// returns its key ID (the same key added again keeps its ID).
    public static func addServerKey(container: String, publicKeyPEM: String, account: Account, engine: Engine) throws -> String {
        let key: P256.Signing.PublicKey
        do {
            key = try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
        } catch {
            throw KeyError(
                description:
                    "not an ECDSA P-256 public key in PEM (make one with: openssl ecparam -name prime256v1 -genkey -noout -out eckey.pem && openssl ec -in eckey.pem -pubout)"
            )
        }
        let id = keyID(container: container, key: key)
        try engine.credentials.add(.serverKey, container: container, hash: id, accountID: account.id, publicKey: key.pemRepresentation)
        return id
    }

    /// The key ID a public key (PEM) has in `container`, or nil when it is no P-256 key.
    public static func keyID(container: String, publicKeyPEM: String) -> String? {
        (try? P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)).map { keyID(container: container, key: $0) }
    }

    static func keyID(container: String, key: P256.Signing.PublicKey) -> String {
        hex(SHA256.hash(data: Data(container.utf8) + [0] + key.derRepresentation))
    }

    /// Whether `signature` (base64 DER) is `key`'s over `date:base64(sha256(body)):subpath`.
    /// Clients differ in what they sign, and each form is accepted (WEB-SERVICES.md §1.2): the
    /// path with or without its query, and for no body the hash of "" or an empty string.
    static func verify(signature: String, date: String, body: Data, paths: [String], publicKeyPEM: String) -> Bool {
        guard let key = try? P256.Signing.PublicKey(pemRepresentation: publicKeyPEM),
            let der = Data(base64Encoded: signature), let sig = try? P256.Signing.ECDSASignature(derRepresentation: der)
        else {
            return false
        }
        var hashes = [Data(SHA256.hash(data: body)).base64EncodedString()]
        if body.isEmpty { hashes.append("") }
        for path in paths {
            for h in hashes where key.isValidSignature(sig, for: Data("\(date):\(h):\(path)".utf8)) { return true }
        }
        return false
    }

    package static func hash(_ token: String) -> String { hex(SHA256.hash(data: Data(token.utf8))) }

    private static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        digest.map { String(format: "%02x", $0) }.joined()
    }

    /// P-256's group order n, big-endian.
    private static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// One name for a signature and its twin: ECDSA's (r, s) and (r, n − s) verify alike, so a
    /// replay cache keyed on the text would take the twin for a new signature. The name is
    /// r and the smaller of s and n − s; nil when the text is no DER P-256 signature.
    static func canonicalSignature(_ base64: String) -> String? {
        guard let der = Data(base64Encoded: base64),
            let raw = try? P256.Signing.ECDSASignature(derRepresentation: der).rawRepresentation, raw.count == 64
        else { return nil }
        let r = Array(raw.prefix(32))
        let sValue = Array(raw.suffix(32))
        // n − s, byte by byte from the least significant.
        var twin = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for i in stride(from: 31, through: 0, by: -1) {
            var d = Int(order[i]) - Int(sValue[i]) - borrow
            borrow = d < 0 ? 1 : 0
            if d < 0 { d += 256 }
            twin[i] = UInt8(d)
        }
        let low = sValue.lexicographicallyPrecedes(twin) ? sValue : twin
        return hex(r) + hex(low)
    }
}
