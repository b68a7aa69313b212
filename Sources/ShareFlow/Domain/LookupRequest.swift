import Foundation

/// A lookup as given to an operation or a share draft: valid (R1) or the error naming the bad
/// value, so one malformed item fails alone.
public struct LookupRequest: Hashable, Sendable, CustomStringConvertible {
    /// The checked lookup info, or the `invalidArguments` error naming the bad value.
    public let result: Result<LookupInfo, ShareFlowError>
    /// The value as given, the item's ID in `partialErrors`.
    public let given: String

    /// A lookup of a valid `LookupInfo`.
    public init(_ info: LookupInfo) {
        result = .success(info)
        given = info.value
    }

    /// A lookup from raw fields, checked as `LookupInfo` checks them (exactly one set, R1); a bad
    /// value is kept as the request's error, not thrown.
    public init(emailAddress: String? = nil, phoneNumber: String? = nil, userRecordID: String? = nil) {
        given = emailAddress ?? phoneNumber ?? userRecordID ?? "(empty lookup info)"
        do { result = .success(try LookupInfo(emailAddress: emailAddress, phoneNumber: phoneNumber, userRecordID: userRecordID)) } catch {
            result = .failure(.wrap(error))
        }
    }

    /// The lookup info; nil when the value given was invalid.
    public var info: LookupInfo? { try? result.get() }
    /// The normalised value when valid (`bob@example.com`), else the value as given.
    public var description: String { (try? result.get().value) ?? given }

    /// Equal when given the same value with the same outcome.
    public static func == (a: LookupRequest, b: LookupRequest) -> Bool { a.given == b.given && a.info == b.info }
    /// Hashes the value as given.
    public func hash(into h: inout Hasher) { h.combine(given) }
}
