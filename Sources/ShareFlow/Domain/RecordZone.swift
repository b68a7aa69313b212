/// A zone of a database.
public struct RecordZone: Hashable, Sendable, CustomStringConvertible {
    public let zoneID: RecordZoneID
    public var description: String { "RecordZone(\(zoneID.zoneName), owner: \(zoneID.ownerName))" }
}
