import Foundation
import ShareFlow

/// Download URLs for the assets of records written out to one reader (SPEC §19 A3):
/// `<public URL>/assets/1/download/<sealed token>/${f}`, the last segment Apple's filename slot
/// (a client puts a file name there; any last segment is served).
extension Engine.AssetReader {
    /// The signed-in caller `accountID` of `request`'s database.
    init(accountID: Int64, _ request: DatabaseRequest) {
        self.init(accountID: accountID, container: request.container, environment: request.environment, scope: request.scope)
    }
}

struct AssetLinks: Sendable {
    let url: @Sendable (_ checksum: String, _ field: String, _ record: RecordID) -> String?

    /// The links `reader` is given.
    static func reader(_ reader: Engine.AssetReader, engine: Engine) -> AssetLinks {
        let base = engine.options.publicURL
        return AssetLinks { checksum, field, record in
            guard let token = try? engine.assetDownloadToken(checksum: checksum, field: field, record: record, for: reader) else { return nil }
            return "\(base)/assets/1/download/\(token)/${f}"
        }
    }
}
