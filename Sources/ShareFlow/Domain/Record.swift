import Foundation

/// A zone's ID: its name and its owner's user record ID.
///
/// ```swift
/// let trips = RecordZoneID(zoneName: "Trips", ownerName: RecordZoneID.currentUserName)
/// let same = try db.zoneID("Trips")             // the owner spelt out: the caller's user record ID
/// ```
public struct RecordZoneID: Hashable, Sendable, CustomStringConvertible {
    /// The name of every database's default zone (R24).
    public static let defaultZoneName = "_defaultZone"
    /// The owner name that means "the caller" (CloudKit's `CKCurrentUserDefaultName`).
    public static let currentUserName = "__defaultOwner__"
    /// The default zone of whichever database a record is saved to (R24).
    public static let `default` = RecordZoneID(zoneName: defaultZoneName, ownerName: currentUserName)
    /// The zone's name in its owner's database.
    public var zoneName: String
    /// The owner's user record ID, or `currentUserName` for the caller.
    public var ownerName: String

    /// The zone `zoneName` of the account whose user record ID is `ownerName`.
    public init(zoneName: String, ownerName: String) {
        self.zoneName = zoneName
        self.ownerName = ownerName
    }

    /// Whether this names a database's default zone (R24), whoever the owner.
    public var isDefaultZone: Bool { zoneName == RecordZoneID.defaultZoneName }
    /// `zone/owner`, as errors name a zone.
    public var description: String { "\(zoneName)/\(ownerName)" }
}

/// A record's ID: its name in a zone.
///
/// ```swift
/// let id = RecordID(recordName: "lisbon", zoneID: try db.zoneID("Trips"))
/// let trip = try db.fetchRecord(id)             // or `unknownItem`
/// ```
public struct RecordID: Hashable, Sendable, CustomStringConvertible {
    /// The record's name in its zone: 1–255 printable ASCII characters (R23).
    public var recordName: String
    /// The zone the record lives in.
    public var zoneID: RecordZoneID

    /// The record `recordName` of zone `zoneID`.
    public init(recordName: String, zoneID: RecordZoneID) {
        self.recordName = recordName
        self.zoneID = zoneID
    }

    /// As in `partialErrors` tables: `name` in `zone/owner`.
    public var description: String { "\(recordName) (\(zoneID))" }
}

/// A record: typed fields in a zone, optionally with a parent (for hierarchy shares) and,
/// when it roots a share, a reference to that share.
///
/// ```swift
/// let zone = try db.saveZone("Trips").zoneID
/// let trip = Record(recordType: "Trip", recordID: RecordID(recordName: "lisbon", zoneID: zone))
/// trip["title"] = .string("Lisbon")
/// trip["days"] = .integer(5)
/// if let error = try db.modifyRecords(saving: [trip]).error { throw error }
/// print(trip.recordChangeTag!)                 // set by the save (R21)
/// ```
public class Record: CustomStringConvertible {
    /// The record's name and zone, fixed for its life.
    public let recordID: RecordID
    /// The record's type: letters, digits and `_`, starting with a letter (R23); a share's is `cloudkit.share`.
    public let recordType: String
    /// The field values by key: a key removed here is deleted by the next save, a key never held is kept (R29).
    public var fields: [String: FieldValue] {
        get {
            decodeStoredFields()
            return decodedFields
        }
        set {
            decodeStoredFields()
            decodedFields = newValue
        }
        _modify {
            decodeStoredFields()
            yield &decodedFields
        }
    }
    private var decodedFields: [String: FieldValue]
    /// Fields as a feed page read them, checked but not yet decoded: the fields, and the
    /// server's copy of them, once first read (a first sync hands out thousands of records
    /// whose fields an app may never read, or reads once).
    private var storedFields: CheckedFields?
    /// The parent record, in the same zone (R4: only `parent` makes a hierarchy).
    public var parent: RecordID?
    /// The share this record roots, once saved with one.
    public internal(set) var share: RecordID?
    /// Changes with every save; nil before the first (R21).
    public internal(set) var recordChangeTag: String?
    /// When the record was last saved (R31); nil before the first save.
    public internal(set) var modificationDate: Date?
    /// R31, as CloudKit's: when the record was first saved (never changes after), the user
    /// record of the account that first saved it, and of the one that saved it last (a
    /// participant's edit in a shared zone names the participant). Nil before the first save.
    public internal(set) var creationDate: Date?
    /// The user record of the account that first saved the record (R31).
    public internal(set) var creatorUserRecordID: RecordID?
    /// The user record of the account that saved it last, a participant's in a shared zone (R31).
    public internal(set) var lastModifiedUserRecordID: RecordID?
    /// The short GUID of CloudKit Web Services (SPEC §13): reserved when the record was saved
    /// with `createShortGUID`, or the URL token of the share it roots. The share takes it.
    public internal(set) var shortGUID: String?
    /// The size of its fields as the store holds them (0 for a record never fetched): what
    /// sending it costs, for a server's response budget.
    public internal(set) var storedBytes = 0
    /// Asks the next save to reserve a short GUID (the server's `createShortGUID`).
    package var requestsShortGUID = false
    /// The fields and parent as the server last gave them to this object: what `changedKeys()`
    /// compares against, and the `ancestorRecord` of a conflict (R21). Nil for a new record.
    var serverFields: [String: FieldValue]? {
        get {
            decodeStoredFields()
            return decodedServerFields
        }
        set {
            decodeStoredFields()
            decodedServerFields = newValue
        }
    }
    private var decodedServerFields: [String: FieldValue]?
    var serverParent: RecordID?

    /// Decodes the stored fields, once: they are both the fields and the server's copy.
    private func decodeStoredFields() {
        guard let stored = storedFields else { return }
        storedFields = nil
        let fields = stored.decode()
        decodedFields = fields
        decodedServerFields = fields
    }

    /// A record named `recordName` (a new UUID when nil) in the default zone of the database it
    /// is saved to (R24), as `CKRecord(recordType:)`.
    public convenience init(recordType: String, recordName: String? = nil, fields: [String: FieldValue] = [:]) {
        self.init(
            recordType: recordType,
            recordID: RecordID(recordName: recordName ?? RandomIdentifier.uuidString(), zoneID: .default),
            fields: fields
        )
    }

    /// A new record `recordID` of `recordType`, as `CKRecord(recordType:recordID:)`; a `parent` must be in the same zone (R25).
    public init(recordType: String, recordID: RecordID, fields: [String: FieldValue] = [:], parent: RecordID? = nil) {
        self.recordType = recordType
        self.recordID = recordID
        self.decodedFields = fields
        self.parent = parent
    }

    /// A record as the store holds it, every property the server gives set at once: a feed
    /// page makes thousands, and each property set after `init` is a checked access.
    init(
        stored recordType: String,
        recordID: RecordID,
        fields: FieldsAsRead,
        parent: RecordID?,
        changeTag: String,
        modificationDate: Date,
        creationDate: Date,
        creator: RecordID?,
        modifier: RecordID?,
        shortGUID: String?,
        storedBytes: Int,
        share: RecordID?
    ) {
        self.recordType = recordType
        self.recordID = recordID
        switch fields {
        case .decoded(let fields):
            self.decodedFields = fields
            self.decodedServerFields = fields
        case .checked(let checked):
            self.decodedFields = [:]
            self.storedFields = checked
        }
        self.parent = parent
        self.recordChangeTag = changeTag
        self.modificationDate = modificationDate
        self.creationDate = creationDate
        self.creatorUserRecordID = creator
        self.lastModifiedUserRecordID = modifier
        self.shortGUID = shortGUID
        self.storedBytes = storedBytes
        self.share = share
        self.serverParent = parent
    }

    /// The value of field `key`; setting nil deletes the key at the next save (R29).
    public subscript(key: String) -> FieldValue? {
        get { fields[key] }
        set { fields[key] = newValue }
    }

    /// The keys set, changed or removed since the record was fetched or last saved (all of its
    /// keys for a new record), as `CKRecord.changedKeys()`. A `changedKeys` save sends only these.
    public func changedKeys() -> [String] {
        guard let base = serverFields else { return fields.keys.sorted() }
        return Set(base.keys).union(fields.keys).filter { base[$0] != fields[$0] }.sorted()
    }

    /// Whether `parent` differs from the server's.
    var parentChanged: Bool { serverFields == nil ? parent != nil : parent != serverParent }

    /// The record as the server last gave it to this object (R21's `ancestorRecord`).
    func ancestor() -> Record? {
        guard let base = serverFields else { return nil }
        let r = Record(recordType: recordType, recordID: recordID, fields: base, parent: serverParent)
        r.recordChangeTag = recordChangeTag
        r.modificationDate = modificationDate
        r.creationDate = creationDate
        r.creatorUserRecordID = creatorUserRecordID
        r.lastModifiedUserRecordID = lastModifiedUserRecordID
        r.share = share
        r.serverFields = base
        r.serverParent = serverParent
        return r
    }

    /// Marks this object as an edit of `server` (the server protocol carries only the tag a
    /// client holds; R21 then checks it on save): what differs from the server's fields is
    /// what the save writes (R29), a key the object lacks and the server has is deleted.
    package func assumeServerCopy(of server: Record) {
        recordChangeTag = server.recordChangeTag
        serverFields = server.fields
        serverParent = server.parent
    }

    /// A copy no one else holds (a conflict's `clientRecord`).
    func duplicate() -> Record {
        let r = Record(recordType: recordType, recordID: recordID)
        r.copyState(from: self)
        return r
    }

    func copyState(from other: Record) {
        fields = other.fields
        parent = other.parent
        share = other.share
        shortGUID = other.shortGUID
        storedBytes = other.storedBytes
        recordChangeTag = other.recordChangeTag
        modificationDate = other.modificationDate
        creationDate = other.creationDate
        creatorUserRecordID = other.creatorUserRecordID
        lastModifiedUserRecordID = other.lastModifiedUserRecordID
        serverFields = other.serverFields
        serverParent = other.serverParent
    }

    /// Takes the server's state after a fetch or a save.
    func adoptServerState(of server: Record) {
        adoptServerStamp(of: server)
        fields = server.fields
        parent = server.parent
        share = server.share
    }

    /// The change tag, date and server copy every adoption takes (a share keeps its own
    /// fields: see `Share.adoptServerState`).
    final func adoptServerStamp(of server: Record) {
        recordChangeTag = server.recordChangeTag
        modificationDate = server.modificationDate
        creationDate = server.creationDate
        creatorUserRecordID = server.creatorUserRecordID
        lastModifiedUserRecordID = server.lastModifiedUserRecordID
        shortGUID = server.shortGUID
        storedBytes = server.storedBytes
        serverFields = server.fields
        serverParent = server.parent
    }

    /// Type, name and the first four fields by key, for logs.
    public var description: String {
        let shown = fields.keys.sorted().prefix(4).map { "\($0)=\(fields[$0]!)" }.joined(separator: ", ")
        return "Record(\(recordType) \(recordID.recordName)\(shown.isEmpty ? "" : " {\(shown)}"))"
    }

    /// A copy with only `keys` (nil: all), for `rootRecordDesiredKeys`.
    func copy(keys: [String]?) -> Record {
        duplicate().keeping(keys: keys.map(Set.init))
    }

    /// This record, with only the fields `keys` names (all of them for nil): for a record
    /// made for one answer, which no one else holds.
    /// `storedBytes` becomes what the fields kept take as stored.
    func keeping(keys wanted: Set<String>?) -> Record {
        guard let wanted else { return self }  // a set: fields × keys comparisons would let a caller choose the cost
        let before = fields.count
        defer {
            if fields.count != before { storedBytes = StoredFieldsWriter.write(fields)?.utf8.count ?? storedBytes }
        }
        fields = fields.filter { wanted.contains($0.key) }
        serverFields = serverFields?.filter { wanted.contains($0.key) }
        return self
    }
}
