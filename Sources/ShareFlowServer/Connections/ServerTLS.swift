import Crypto
import Foundation
import NIOSSL
import ShareFlow
import _CryptoExtras

/// The certificate and key `serve --tls-cert/--tls-key` serves https with (SPEC §19 A1),
/// read and checked at start: a file that is missing, not PEM, holds no certificate or no key,
/// or a key that is not the certificate's is one line naming the file and the cause, before
/// the server listens.
///
/// ```swift
/// server.tls = try ServerTLS(certificate: "leaf.pem", key: "leaf.key")
/// ```
public struct ServerTLS: Sendable {
    /// The most bytes read of either file.
    static let maxFileBytes = 1 << 20
    /// What the server's TLS handler is made from.
    public let configuration: TLSConfiguration

    /// Reads the PEM chain at `certificate` (the leaf first, then any intermediates) and the
    /// PEM private key at `key`.
    public init(certificate: String, key: String) throws {
        // Read whole through `read(2)`, at most 1 MiB (a chain is a few KiB): a pipe or
        // `/dev/stdin` from a secrets tool works, a device that never ends does not hang.
        func contents(_ path: String, _ what: String) throws -> [UInt8] {
            do {
                return [UInt8](try BoundedFile.read(path, maxBytes: ServerTLS.maxFileBytes))
            } catch {
                throw ServerTLSError("--tls-\(what) \(error)")
            }
        }
        let certificateBytes = try contents(certificate, "cert")
        let keyBytes = try contents(key, "key")
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(certificateBytes)
        } catch {
            throw ServerTLSError("--tls-cert \(certificate): not a PEM certificate (\(error))")
        }
        guard !chain.isEmpty else { throw ServerTLSError("--tls-cert \(certificate): no certificate in it (PEM expected)") }
        let privateKey: NIOSSLPrivateKey
        let keyText = String(decoding: keyBytes, as: UTF8.self)
        if keyText.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || keyText.contains("Proc-Type: 4,ENCRYPTED") {
            throw ServerTLSError(
                "--tls-key \(key): the key is encrypted with a passphrase; give serve the key unencrypted (openssl pkey -in KEY -out PLAIN)"
            )
        }
        do {
            privateKey = try NIOSSLPrivateKey(bytes: keyBytes, format: .pem)
        } catch {
            throw ServerTLSError("--tls-key \(key): not a PEM private key (\(error))")
        }
        // The key must be the leaf's: otherwise every handshake would fail, long after start.
        // Compared by their public keys (SubjectPublicKeyInfo, DER) for the usual kinds; for
        // another kind BoringSSL compares them when a context is made with both (a context
        // whose making fails is not freed by swift-nio-ssl: a leak, but only on the way out).
        let leafKey = try? chain[0].extractPublicKey().toSPKIBytes()
        if let spki = ServerTLS.publicKey(ofPEM: keyText) {
            guard let leafKey, leafKey == spki else {
                throw ServerTLSError("--tls-key \(key) is not the private key of --tls-cert \(certificate) (their public keys differ)")
            }
        } else {
            do {
                _ = try NIOSSLContext(
                    configuration: .makeServerConfiguration(certificateChain: [.certificate(chain[0])], privateKey: .privateKey(privateKey))
                )
            } catch {
                throw ServerTLSError("--tls-key \(key) is not the private key of --tls-cert \(certificate) (\(error))")
            }
        }
        // Its dates (a few minutes' leeway for a certificate just made on a machine whose clock
        // runs ahead): clients would refuse every handshake.
        let start = Date(timeIntervalSince1970: TimeInterval(chain[0].notValidBefore))
        if start > Date().addingTimeInterval(300) {
            throw ServerTLSError("--tls-cert \(certificate): the certificate is not valid before \(ISO8601DateFormatter().string(from: start))")
        }
        let expiry = Date(timeIntervalSince1970: TimeInterval(chain[0].notValidAfter))
        if expiry < Date() {
            throw ServerTLSError("--tls-cert \(certificate): the certificate expired on \(ISO8601DateFormatter().string(from: expiry))")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(privateKey)
        )
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["http/1.1"]
        // A connection the server closes (a deadline, a shutdown) waits this long for the
        // client's close_notify, not swift-nio-ssl's 5 s: its socket and its place under the
        // connection cap are given back at once, and SIGTERM is not held up by idle clients.
        configuration.shutdownTimeout = .milliseconds(200)
        self.configuration = configuration
    }
}

extension ServerTLS {
    /// The public key (SubjectPublicKeyInfo, DER) of a PEM private key of a kind swift-crypto
    /// reads (ECDSA P-256, P-384, P-521; RSA); nil for another kind.
    static func publicKey(ofPEM pem: String) -> [UInt8]? {
        if let k = try? P256.Signing.PrivateKey(pemRepresentation: pem) { return Array(k.publicKey.derRepresentation) }
        if let k = try? P384.Signing.PrivateKey(pemRepresentation: pem) { return Array(k.publicKey.derRepresentation) }
        if let k = try? P521.Signing.PrivateKey(pemRepresentation: pem) { return Array(k.publicKey.derRepresentation) }
        if let k = try? _RSA.Signing.PrivateKey(pemRepresentation: pem) { return Array(k.publicKey.derRepresentation) }
        return nil
    }
}

/// A certificate or key `serve` cannot use: the message names the file and the cause.
public struct ServerTLSError: Error, CustomStringConvertible {
    /// What is wrong, naming the file.
    public let description: String
    init(_ description: String) { self.description = description }
}
