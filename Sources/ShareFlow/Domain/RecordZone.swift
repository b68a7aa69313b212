/// A zone of a database.
///
/// ```swift
/// let zone = try db.saveZone("Trips")           // a custom zone of the private database
/// let trip = Record(recordType: "Trip", recordID: RecordID(recordName: "lisbon", zoneID: zone.zoneID))
/// ```
public struct RecordZone: Hashable, Sendable, CustomStringConvertible {
    /// The zone's name and owner.
    public let zoneID: RecordZoneID
    /// The zone's name and owner, for logs.
    public var description: String { "RecordZone(\(zoneID.zoneName), owner: \(zoneID.ownerName))" }
}
