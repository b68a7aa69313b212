import Foundation
import ShareFlow

/// One-time sign-in codes (SPEC §21, §13 wave 4): an operator makes one for an account in a
/// container (`shareflow tokens signin`), the person types it on the server's sign-in page, and
/// the page trades it, once, for a web auth token that CloudKit JS takes from the page.
///
/// A code is 12 characters of Crockford's base32 (60 random bits), shown as `K7QM-9XD2-HT4P`;
/// typed back, case, dashes and spaces do not matter, and `O`, `I` and `L` read as `0`, `1`
/// and `1`. The store keeps its SHA-256 only (kind `signInCode`), with its container, account
/// and expiry; redeeming takes it (`engine.credentials.take`), so of two redeems at once, on
/// one node or two, one signs in.
///
/// ```swift
/// let minted = try SignInCodes.mint(container: "iCloud.com.example.app", account: bob, engine: engine)
/// print(minted.code)   // K7QM-9XD2-HT4P
/// let signedIn = try SignInCodes.redeem("k7qm 9xd2 ht4p", engine: engine)   // a second redeem: nil
/// ```
public enum SignInCodes {
    /// How long a code lasts unless told otherwise (seconds).
    public static let defaultTTL: Double = 600
    /// The longest a code may last (seconds).
    public static let maxTTL: Double = 3600
    /// How long the web auth token a code yields lasts (seconds): `tokens user`'s default.
    public static let tokenTTL: Double = 1800

    /// Crockford's base32 digits: no `I`, `L`, `O` or `U`, so a code is read aloud or copied by
    /// hand without doubt.
    static let digits = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    /// Characters in a code, without its dashes.
    static let length = 12

    /// A code as `mint` made it.
    public struct Minted: Sendable {
        /// The code as shown: `XXXX-XXXX-XXXX`.
        public let code: String
        /// The container its token opens.
        public let container: String
        /// When it stops being accepted, in seconds since 1970.
        public let expiresAt: Double
    }

    /// Why a code cannot be made.
    public struct Problem: Error, CustomStringConvertible, Sendable {
        /// What is wrong, naming the value.
        public let description: String
    }

    /// A code that signs `account` in to `container` once, within `ttl` seconds (at most an hour).
    public static func mint(container: String, account: Account, ttl: Double = defaultTTL, engine: Engine) throws -> Minted {
        guard ttl.isFinite, ttl >= 1, ttl <= maxTTL else {
            throw Problem(description: "the code's lifetime must be from 1 to \(Int(maxTTL)) seconds, got \(ttl)")
        }
        guard !container.trimmingCharacters(in: .whitespaces).isEmpty, !container.utf8.contains(0) else {
            throw Problem(description: "a code needs a container, e.g. iCloud.com.example.app")
        }
        // 60 bits: the low 60 of 8 random bytes, 5 bits a digit.
        let bits = RandomIdentifier.bytes(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        var plain: [UInt8] = []
        for n in 0..<length { plain.append(digits[Int((bits >> UInt64(5 * n)) & 31)]) }
        let normal = String(decoding: plain, as: UTF8.self)
        let expiresAt = Date().timeIntervalSince1970 + ttl
        try engine.credentials.add(.signInCode, container: container, hash: Credentials.hash(normal), accountID: account.id, expiresAt: expiresAt)
        return Minted(code: shown(normal), container: container, expiresAt: expiresAt)
    }

    /// A code as typed, as the store knows it (upper case, no dashes or spaces, `O` as `0`, `I`
    /// and `L` as `1`); nil when it cannot be a code (another length, another character).
    public static func normalised(_ typed: String) -> String? {
        guard typed.utf8.count <= 64 else { return nil }
        var out: [UInt8] = []
        for byte in typed.uppercased().utf8 {
            switch byte {
            case UInt8(ascii: "-"), UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): continue
            case UInt8(ascii: "O"): out.append(UInt8(ascii: "0"))
            case UInt8(ascii: "I"), UInt8(ascii: "L"): out.append(UInt8(ascii: "1"))
            default:
                guard digits.contains(byte) else { return nil }
                out.append(byte)
            }
        }
        return out.count == length ? String(decoding: out, as: UTF8.self) : nil
    }

    /// A normalised code in groups of four: `K7QM-9XD2-HT4P`.
    static func shown(_ normal: String) -> String {
        let chars = Array(normal)
        return stride(from: 0, to: chars.count, by: 4).map { String(chars[$0..<min($0 + 4, chars.count)]) }.joined(separator: "-")
    }

    /// A code signed in: the new web auth token, the container it opens and its account.
    public struct SignedIn: Sendable {
        /// The web auth token (`ckWebAuthToken`), valid `tokenTTL` seconds.
        public let token: String
        /// The container the code was made for, which the token opens.
        public let container: String
        /// The account the token acts as.
        public let account: Account
    }

    /// Trades a code for a web auth token of its account in its container, once. Nil for a
    /// code that is wrong, used, expired, or whose account is gone: all alike, so an answer
    /// tells a guesser nothing. Writes: run it where the engine's writes run.
    public static func redeem(_ typed: String, engine: Engine) throws -> SignedIn? {
        guard let normal = normalised(typed),
            let code = try engine.credentials.take(.signInCode, hash: Credentials.hash(normal)),
            let accountID = code.accountID,
            let account = try engine.accounts.account(id: accountID)
        else { return nil }
        let token = try Credentials.newWebAuthToken(container: code.container, account: account, ttl: tokenTTL, engine: engine)
        return SignedIn(token: token, container: code.container, account: account)
    }
}
