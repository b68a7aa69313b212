import Foundation

/// What a user asks to be told about (SPEC §20 N1): changes to a zone, to a whole database, or
/// to the records a query matches. Saved in a database (`CloudDatabase.save(_:)`), owned by the
/// caller, named by `subscriptionID` (saving the same ID again replaces it).
///
/// ```swift
/// let trips = try db.zoneID("Trips")
/// try db.save(.zone(trips, id: "trips-changed"))
/// try db.save(.query(recordType: "Trip", predicate: try Predicate(format: "stops > 3"), in: trips, firesOn: [.create, .delete],
///                    id: "long-trips", info: NotificationInfo(alertBody: "A long trip", additionalFields: ["title"])))
/// ```
public struct Subscription: Sendable, Equatable, CustomStringConvertible {
    /// Which changes fire it.
    public enum Kind: Sendable, Equatable {
        /// Records of `recordType` matching `predicate` made, changed or deleted (as `firesOn`
        /// says), in `zoneID` or in every zone of the database the caller sees (nil: CloudKit's
        /// `zoneWide`); `firesOnce`: removed after it first fires.
        case query(recordType: String, predicate: Predicate, zoneID: RecordZoneID?, firesOn: FiresOn, firesOnce: Bool)
        /// Any record change in one zone (a custom zone: CloudKit refuses the default zone).
        case zone(RecordZoneID)
        /// Any record change in any zone of the database the caller sees.
        case database
    }

    /// The record changes a query subscription fires on.
    public struct FiresOn: OptionSet, Sendable, Hashable {
        /// The bits: 1 create, 2 update, 4 delete.
        public let rawValue: Int
        /// The set whose bits are `rawValue`.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// A record made that matches.
        public static let create = FiresOn(rawValue: 1)
        /// A record changed that matches after the change.
        public static let update = FiresOn(rawValue: 2)
        /// A record deleted that matched when last saved.
        public static let delete = FiresOn(rawValue: 4)
        /// All three.
        public static let all: FiresOn = [.create, .update, .delete]
    }

    /// The subscription's name among its owner's in this database (1–255 characters).
    public var subscriptionID: String
    /// What fires it.
    public var kind: Kind
    /// What a notification carries (alert texts, fields of the record).
    public var notificationInfo: NotificationInfo

    /// A subscription of `kind`; `subscriptionID` nil: a new UUID.
    public init(_ kind: Kind, id subscriptionID: String? = nil, info: NotificationInfo = NotificationInfo()) {
        self.kind = kind
        self.subscriptionID = subscriptionID ?? UUID().uuidString
        self.notificationInfo = info
    }

    /// A query subscription: `zoneID` nil for every zone (`zoneWide`).
    public static func query(
        recordType: String,
        predicate: Predicate = .all,
        in zoneID: RecordZoneID? = nil,
        firesOn: FiresOn = .all,
        firesOnce: Bool = false,
        id: String? = nil,
        info: NotificationInfo = NotificationInfo()
    ) -> Subscription {
        Subscription(.query(recordType: recordType, predicate: predicate, zoneID: zoneID, firesOn: firesOn, firesOnce: firesOnce), id: id, info: info)
    }

    /// A zone subscription.
    public static func zone(_ zoneID: RecordZoneID, id: String? = nil, info: NotificationInfo = NotificationInfo()) -> Subscription {
        Subscription(.zone(zoneID), id: id, info: info)
    }

    /// A database subscription.
    public static func database(id: String? = nil, info: NotificationInfo = NotificationInfo()) -> Subscription {
        Subscription(.database, id: id, info: info)
    }

    /// The zone it names, if any.
    public var zoneID: RecordZoneID? {
        switch kind {
        case .query(_, _, let zone, _, _): zone
        case .zone(let zone): zone
        case .database: nil
        }
    }

    /// Its kind as CloudKit names it (`query`, `zone`, `database`).
    public var kindName: String {
        switch kind {
        case .query: "query"
        case .zone: "zone"
        case .database: "database"
        }
    }

    /// `query subscription long-trips (Trip in Trips/_abc)`.
    public var description: String {
        switch kind {
        case .query(let type, _, let zone, _, _): "query subscription \(subscriptionID) (\(type) in \(zone.map(\.description) ?? "every zone"))"
        case .zone(let zone): "zone subscription \(subscriptionID) (\(zone))"
        case .database: "database subscription \(subscriptionID)"
        }
    }

    /// The most parts and values a query subscription's predicate may have: each one is
    /// evaluated for every change its zone sees (as a query's filters, SPEC §13).
    public static let maxPredicateCost = 400
    /// The most bytes a query subscription's predicate, or its HTTP query, is kept in.
    public static let maxStoredBytes = 64 << 10
    /// The most `additionalFields` a notification may carry.
    public static let maxAdditionalFields = 16
}

/// What a notification carries (CloudKit's `notificationInfo`, SPEC §20 N1): the texts an
/// alert shows, and for a query subscription the record's fields to send along. ShareFlow
/// sends no push: these are handed to whoever polls (`aps` in CloudKit's JSON).
public struct NotificationInfo: Codable, Sendable, Equatable {
    /// The alert's text.
    public var alertBody: String?
    /// A key into the app's localized strings, used instead of `alertBody`.
    public var alertLocalizationKey: String?
    /// For a query subscription: fields whose values fill the localized string's arguments.
    public var alertLocalizationArgs: [String]?
    /// The key of the alert's action button's title.
    public var alertActionLocalizationKey: String?
    /// An image to show while the app launches.
    public var alertLaunchImage: String?
    /// A sound's file name.
    public var soundName: String?
    /// Whether to badge the app's icon (ShareFlow counts none: the badge is 1).
    public var shouldBadge: Bool?
    /// Whether the notification wakes the app silently (`content-available`).
    public var shouldSendContentAvailable: Bool?
    /// For a query subscription: the record's fields to send along (`af`).
    public var additionalFields: [String]?
    /// The notification's category (actions the app defines).
    public var category: String?

    /// Information with the given parts; none by default.
    public init(
        alertBody: String? = nil,
        alertLocalizationKey: String? = nil,
        alertLocalizationArgs: [String]? = nil,
        alertActionLocalizationKey: String? = nil,
        alertLaunchImage: String? = nil,
        soundName: String? = nil,
        shouldBadge: Bool? = nil,
        shouldSendContentAvailable: Bool? = nil,
        additionalFields: [String]? = nil,
        category: String? = nil
    ) {
        self.alertBody = alertBody
        self.alertLocalizationKey = alertLocalizationKey
        self.alertLocalizationArgs = alertLocalizationArgs
        self.alertActionLocalizationKey = alertActionLocalizationKey
        self.alertLaunchImage = alertLaunchImage
        self.soundName = soundName
        self.shouldBadge = shouldBadge
        self.shouldSendContentAvailable = shouldSendContentAvailable
        self.additionalFields = additionalFields
        self.category = category
    }

    /// The longest text any of its strings may be.
    public static let maxTextBytes = 1024
}

/// One notification a subscription fired (SPEC §20 N3): what a poll of a device token hands
/// out, a `subscription.fired` event carries, and the change stream sends. Its wire form is
/// CloudKit's (`ck.fet` for zone and database subscriptions, `ck.qry` for query ones).
public struct SubscriptionNotification: Codable, Sendable, Equatable {
    /// Why a query subscription fired (CloudKit's `fo`).
    public enum Reason: Int, Codable, Sendable {
        case created = 1
        case updated = 2
        case deleted = 3

        /// `created`, `updated`, `deleted`.
        public var name: String {
            switch self {
            case .created: "created"
            case .updated: "updated"
            case .deleted: "deleted"
            }
        }
    }

    /// A UUID, new for each notification.
    public var notificationID: String
    /// The subscription that fired.
    public var subscriptionID: String
    /// The container's identifier.
    public var containerIdentifier: String
    /// The database the subscription is in (`private`, `shared`, `public`).
    public var database: String
    /// The zone that changed, its real owner named (`__defaultOwner__` in the public database).
    public var zoneName: String
    /// The zone's owner's user record name.
    public var zoneOwnerName: String
    /// Query subscriptions: why it fired; nil for zone and database subscriptions.
    public var reason: Reason?
    /// Query subscriptions: the record that changed.
    public var recordName: String?
    /// Query subscriptions: the record's values of the subscription's `additionalFields`.
    public var additionalFields: [String: FieldValue]?
    /// The subscription's `notificationInfo`, alert arguments filled in.
    public var info: NotificationInfo
    /// Query subscriptions: the values of `alertLocalizationArgs`' fields, as text.
    public var alertArguments: [String]?

    /// The zone that changed.
    public var zoneID: RecordZoneID { RecordZoneID(zoneName: zoneName, ownerName: zoneOwnerName) }
}
