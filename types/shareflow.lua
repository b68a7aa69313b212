---@meta shareflow
-- LuaLS definitions for ShareFlow's `shareflow` module. Add this folder to
-- `workspace.library` of lua-language-server; see docs/LUA_API.md for the prose.

---@alias shareflow.Permission "none"|"readOnly"|"readWrite"|"unknown"
---@alias shareflow.Role "owner"|"administrator"|"privateUser"|"publicUser"|"unknown"
---@alias shareflow.Status "pending"|"accepted"|"removed"|"unknown"
---@alias shareflow.QoS "userInteractive"|"userInitiated"|"default"|"utility"|"background"
---@alias shareflow.Scope "private"|"shared"|"public"
---@alias shareflow.Event "participant.fetched"|"participant.added"|"participant.removed"|"participant.permissionChanged"|"share.saved"|"share.deleted"|"share.publicPermissionChanged"|"share.metadataFetched"|"share.accepted"|"user.discovered"|"operation.finished"|"record.saved"|"record.deleted"|"zone.saved"|"zone.deleted"|"fault.injected"|"share.accessRequested"|"share.accessRequestDropped"|"share.requestersDenied"|"share.requestersBlocked"|"share.identitiesUnblocked"|"participant.roleChanged"|"subscription.fired"
---@alias shareflow.PolicyPoint "share.accept"|"participant.add"|"share.publicPermission"|"share.save"|"share.requestAccess"

---@class shareflow.LookupInfo
---@field emailAddress? string
---@field phoneNumber? string
---@field userRecordID? string

---@alias shareflow.LookupLike shareflow.LookupInfo|{email?: string, phone?: string}|string

---@class shareflow.NameComponents
---@field prefix? string
---@field given? string
---@field middle? string
---@field family? string
---@field suffix? string
---@field nickname? string

---@class shareflow.ZoneID
---@field zoneName string
---@field ownerName string

---@class shareflow.Zone
---@field zoneName string
---@field zoneID shareflow.ZoneID

---@class shareflow.RecordID
---@field recordName string
---@field zoneID shareflow.ZoneID

---@class shareflow.Bytes
---@field data string

---@class shareflow.Date
---@field seconds number

---@class shareflow.Asset
---@field checksum? string SHA-256 of the bytes, hex, once saved
---@field size? integer bytes
---@field data? string the bytes given to sf.Asset{ data = }
---@field path? string the file given (trusted scripts), or the store's copy of a saved asset (trusted scripts)
local Asset = {}
---@return string bytes at most assets.maxBytes
function Asset:read() end

---@class shareflow.Location
---@field latitude number
---@field longitude number
---@field horizontalAccuracy? number
---@field verticalAccuracy? number
---@field altitude? number
---@field speed? number
---@field course? number
---@field timestamp? number seconds since 1970

---@class shareflow.Encrypted
---@field value any the field value the client encrypted (kept as given)

---@class shareflow.Reference: shareflow.RecordID
---@field recordID shareflow.RecordID
---@field action "none"|"deleteSelf"

---@class shareflow.Error
---@field code string
---@field codeNumber integer
---@field message string
---@field partialErrors? table<string, shareflow.Error>
---@field serverRecord? shareflow.Record
---@field clientRecord? shareflow.Record
---@field ancestorRecord? shareflow.Record
---@field retryAfter? number

---@class shareflow.Identity
---@field userRecordID? string
---@field lookupInfo? shareflow.LookupInfo
---@field nameComponents? shareflow.NameComponents
---@field hasiCloudAccount boolean
---@field contactIdentifiers string[]

---@class shareflow.Account
---@field userRecordID string
---@field email? string
---@field emails string[]
---@field phone? string
---@field phones string[]
---@field name shareflow.NameComponents
---@field discoverable boolean
---@field discoverability "initialState"|"granted"|"denied"|"couldNotComplete"
---@field contacts (shareflow.LookupInfo|{contactIdentifier: string})[]
local Account = {}
---@param email string
---@return shareflow.Account
function Account:addEmail(email) end
---@param phone string
---@return shareflow.Account
function Account:addPhone(phone) end
---@param on boolean
---@return shareflow.Account
function Account:setDiscoverable(on) end
---@param name shareflow.NameComponents
---@return shareflow.Account
function Account:setName(name) end
---@param contacts (string|{email?: string, phone?: string, contactIdentifier?: string})[]
---@return shareflow.Account
function Account:addContacts(contacts) end

---@class shareflow.Session
---@field account shareflow.Account
local Session = {}
---@alias shareflow.Environment "development"|"production"
---@param id string
---@param options? {environment?: shareflow.Environment}
---@return shareflow.Container
function Session:container(id, options) end

---@class shareflow.Container
---@field containerIdentifier string
---@field environment shareflow.Environment
---@field privateCloudDatabase shareflow.Database
---@field sharedCloudDatabase shareflow.Database
---@field publicCloudDatabase shareflow.Database
---@field session shareflow.Session
local Container = {}
---@param op shareflow.Operation
function Container:add(op) end
function Container:waitUntilAllOperationsAreFinished() end
---@param infos shareflow.LookupLike[]
---@return shareflow.Participant[], shareflow.Error?
function Container:fetchShareParticipants(infos) end
---@param urls string[]
---@param opts? {shouldFetchRootRecord?: boolean, rootRecordDesiredKeys?: string[]}
---@return table<string, shareflow.Metadata>, shareflow.Error?
function Container:fetchShareMetadata(urls, opts) end
---@param metadatas shareflow.Metadata[]
---@return shareflow.Share[], shareflow.Error?
function Container:acceptShares(metadatas) end
---Asks to join the shares at `urls` (R39, O11): `results[url] = true` for each that succeeded.
---@param urls string[]
---@return table<string, true>, shareflow.Error?
function Container:requestShareAccess(urls) end
---@param opts? {progress?: fun(done: integer, total: integer)}
---@return shareflow.Identity[], shareflow.Error?
function Container:discoverAllUserIdentities(opts) end
---@param infos shareflow.LookupLike[]
---@return shareflow.Identity[], shareflow.Error?
function Container:discoverUserIdentities(infos) end

---@class shareflow.Database
---@field databaseScope shareflow.Scope
---@field container shareflow.Container
local Database = {}
---@param name string
---@return shareflow.Zone?, shareflow.Error?
function Database:saveZone(name) end
---@param zone string|shareflow.ZoneID|shareflow.Zone a zone, its ID, or the name of one of the caller's zones
---@return boolean?, shareflow.Error?
function Database:deleteZone(zone) end
---@param op shareflow.Operation a database operation (records, zones, queries, change feeds)
function Database:add(op) end
---@return shareflow.Zone[]?, shareflow.Error?
function Database:fetchAllRecordZones() end
---@param id shareflow.RecordID|shareflow.Record
---@return shareflow.Record?, shareflow.Error?
function Database:fetchRecord(id) end
---@param ids (shareflow.RecordID|shareflow.Record)[]
---@return shareflow.Record[], shareflow.Error?
function Database:fetchRecords(ids) end
---@alias shareflow.SavePolicy "ifServerRecordUnchanged"|"changedKeys"|"allKeys"
---@param changes {save?: shareflow.Record[], delete?: (shareflow.RecordID|shareflow.Record)[], savePolicy?: shareflow.SavePolicy, atomic?: boolean}
---@return shareflow.Record[]?, shareflow.Error?
function Database:modifyRecords(changes) end
---@class shareflow.SortDescriptor
---@field key string
---@field ascending? boolean
---@field relativeTo? shareflow.Location by the distance of location field `key` from here
---@class shareflow.Page: shareflow.Record[]
---@field cursor? shareflow.QueryCursor
---@class shareflow.QueryCursor
---@param q {recordType?: string, predicate?: string, arguments?: any[], sortDescriptors?: (string|shareflow.SortDescriptor)[], zone?: shareflow.Zone|shareflow.ZoneID, zoneID?: shareflow.ZoneID, desiredKeys?: string[], resultsLimit?: integer, cursor?: shareflow.QueryCursor}
---@return shareflow.Page?, shareflow.Error?
function Database:query(q) end
---@class shareflow.RecordZoneChanges
---@field modifications shareflow.Record[] each changed record once, in its latest state, oldest change first
---@field deletions {recordID: shareflow.RecordID, recordType: string}[]
---@field changeToken string opaque; compare with ==
---@field moreComing boolean
---@param q {zoneID: shareflow.ZoneID|shareflow.Zone|string, zone?: shareflow.Zone, since?: string, resultsLimit?: integer, desiredKeys?: string[]}
---@return shareflow.RecordZoneChanges?, shareflow.Error?
function Database:recordZoneChanges(q) end
---@class shareflow.DatabaseChanges
---@field modifications shareflow.ZoneID[] zones changed or made
---@field deletions {zoneID: shareflow.ZoneID, reason: "deleted"|"purged"}[]
---@field changeToken string
---@field moreComing boolean
---@param q? {since?: string, resultsLimit?: integer}
---@return shareflow.DatabaseChanges?, shareflow.Error?
function Database:databaseChanges(q) end
---@param zoneID shareflow.ZoneID|shareflow.Zone|string
---@return string?, shareflow.Error?
function Database:currentChangeToken(zoneID) end
---@return string?, shareflow.Error?
function Database:currentDatabaseChangeToken() end

---A subscription (SPEC §20 N1): made by sf.QuerySubscription, sf.RecordZoneSubscription or
---sf.DatabaseSubscription, saved with db:saveSubscription.
---@class shareflow.Subscription
---@field subscriptionID string 1–255 bytes; a UUID unless given
---@field subscriptionType "query"|"zone"|"database"
---@field zoneID? shareflow.ZoneID a zone subscription's zone; a query subscription's, or nil for every zone
---@field recordType? string query subscriptions
---@field predicate? string query subscriptions: the filter in the query format (absent when it has none)
---@field arguments? any[] the predicate's %@ values
---@field firesOn? ("create"|"update"|"delete")[] query subscriptions
---@field firesOnce? boolean query subscriptions: removed after it first fires
---@field notificationInfo shareflow.NotificationInfo

---@class shareflow.NotificationInfo
---@field alertBody? string
---@field alertLocalizationKey? string
---@field alertLocalizationArgs? string[] fields whose values fill the localized string's arguments
---@field alertActionLocalizationKey? string
---@field alertLaunchImage? string
---@field soundName? string
---@field shouldBadge? boolean
---@field shouldSendContentAvailable? boolean
---@field additionalFields? string[] query subscriptions: fields whose values the notification carries
---@field category? string

---What a subscription.fired event says its owner is told.
---@class shareflow.Notification
---@field notificationID string
---@field subscriptionID string
---@field database shareflow.Scope
---@field zoneID shareflow.ZoneID
---@field recordID? shareflow.RecordID query subscriptions
---@field reason? "created"|"updated"|"deleted" query subscriptions
---@field additionalFields? table<string, any> query subscriptions: the record's values by field name
---@field alertArguments? string[] query subscriptions: alertLocalizationArgs' values as text

---@param s shareflow.Subscription|{subscriptionType: "query"|"zone"|"database"}
---@return shareflow.Subscription?, shareflow.Error?
function Database:saveSubscription(s) end
---@return shareflow.Subscription[]?, shareflow.Error?
function Database:fetchAllSubscriptions() end
---@param id string
---@return shareflow.Subscription?, shareflow.Error?
function Database:fetchSubscription(id) end
---@param id string
---@return boolean?, shareflow.Error?
function Database:deleteSubscription(id) end

---@class shareflow.Record
---@field recordID shareflow.RecordID
---@field recordName string
---@field zoneID shareflow.ZoneID
---@field recordType string
---@field recordChangeTag? string
---@field modificationDate? number
---@field creationDate? number
---@field creatorUserRecordID? shareflow.RecordID
---@field lastModifiedUserRecordID? shareflow.RecordID
---@field fields table<string, any>
---@field parent? shareflow.RecordID
---@field share? shareflow.RecordID
local Record = {}
---@param key string
---@return any
function Record:get(key) end
---@param key string
---@param value any
function Record:set(key, value) end
---@return string[]
function Record:changedKeys() end

---@class shareflow.Share: shareflow.Record
---@field url? string
---@field title? string
---@field publicPermission shareflow.Permission
---@field allowsAccessRequests boolean whether people without an invitation may ask to join (R38)
---@field participants shareflow.Participant[]
---@field owner? shareflow.Participant
---@field currentUserParticipant? shareflow.Participant
---@field rootRecordID? shareflow.RecordID
---@field isZoneShare boolean
---@field requesters shareflow.AccessRequester[] open requests (the owner's and administrators' copies only, R40)
---@field blockedIdentities shareflow.BlockedIdentity[] (the owner's and administrators' copies only, R40)
local Share = {}
---@param p shareflow.Participant
function Share:addParticipant(p) end
---@param p shareflow.Participant
function Share:removeParticipant(p) end
---The URL of a one-time link's participant (R44); nil before the save or for another.
---@param participantID string
---@return string?
function Share:oneTimeURL(participantID) end
---Closes these requests with the next save (R41).
---@param list (string|shareflow.AccessRequester)[]
function Share:denyRequesters(list) end
---Blocks these requesters (and participants) with the next save (R41).
---@param list (string|shareflow.AccessRequester|shareflow.Participant)[]
function Share:blockRequesters(list) end
---Takes these off `blockedIdentities` with the next save (R41).
---@param list (string|shareflow.BlockedIdentity)[]
function Share:unblockIdentities(list) end
---Adds a participant for each requester; the next save approves them (R41).
---@param list (string|shareflow.AccessRequester)[]
---@param opts? {permission?: shareflow.Permission, role?: shareflow.Role}
function Share:approveRequesters(list, opts) end

---@class shareflow.AccessRequester
---@field requestID string
---@field userIdentity shareflow.Identity
---@field participantLookupInfo shareflow.LookupInfo
---@field requestedAt number seconds since 1970

---@class shareflow.BlockedIdentity
---@field blockID string
---@field userIdentity shareflow.Identity
---@field lookupInfo shareflow.LookupInfo
---@field blockedAt number seconds since 1970

---@class shareflow.Participant
---@field participantID string
---@field userIdentity shareflow.Identity
---@field role shareflow.Role
---@field permission shareflow.Permission
---@field acceptanceStatus shareflow.Status
---@field isApprovedRequester boolean added by approving their request (R41)
---@field isOneTimeURLParticipant boolean a one-time link's participant (R44)
---@field dateAddedToShare? number seconds since 1970

---@class shareflow.Metadata
---@field containerIdentifier string
---@field environment shareflow.Environment
---@field share shareflow.Share
---@field url string
---@field ownerIdentity shareflow.Identity
---@field hierarchicalRootRecordID? shareflow.RecordID
---@field rootRecord? shareflow.Record
---@field participantRole shareflow.Role
---@field participantStatus shareflow.Status
---@field participantPermission shareflow.Permission

---@class shareflow.Operation
---@field operationID string
---@field qualityOfService shareflow.QoS
---@field isExecuting boolean
---@field isFinished boolean
---@field isCancelled boolean
---@field error? shareflow.Error
---@field database? shareflow.Database
---@field completionBlock? fun()
local Operation = {}
function Operation:cancel() end
---@return shareflow.Error?
function Operation:wait() end

---@class shareflow.FetchShareParticipantsOperation: shareflow.Operation
---@field userIdentityLookupInfos? shareflow.LookupLike[]
---@field perShareParticipantResultBlock? fun(info: shareflow.LookupInfo, participant?: shareflow.Participant, err?: shareflow.Error)
---@field shareParticipantFetchedBlock? fun(participant: shareflow.Participant)
---@field fetchShareParticipantsResultBlock? fun(err?: shareflow.Error)
---@field fetchShareParticipantsCompletionBlock? fun(err?: shareflow.Error)

---@class shareflow.FetchShareMetadataOperation: shareflow.Operation
---@field shareURLs? string[]
---@field shouldFetchRootRecord boolean
---@field rootRecordDesiredKeys? string[]
---@field perShareMetadataResultBlock? fun(url: string, metadata?: shareflow.Metadata, err?: shareflow.Error)
---@field perShareMetadataBlock? fun(url: string, metadata?: shareflow.Metadata, err?: shareflow.Error)
---@field fetchShareMetadataResultBlock? fun(err?: shareflow.Error)
---@field fetchShareMetadataCompletionBlock? fun(err?: shareflow.Error)

---@class shareflow.AcceptSharesOperation: shareflow.Operation
---@field shareMetadatas? shareflow.Metadata[]
---@field perShareResultBlock? fun(metadata: shareflow.Metadata, share?: shareflow.Share, err?: shareflow.Error)
---@field perShareCompletionBlock? fun(metadata: shareflow.Metadata, share?: shareflow.Share, err?: shareflow.Error)
---@field acceptSharesResultBlock? fun(err?: shareflow.Error)
---@field acceptSharesCompletionBlock? fun(err?: shareflow.Error)

---@class shareflow.ShareRequestAccessOperation: shareflow.Operation
---@field shareURLs? string[]
---@field perShareAccessRequestResultBlock? fun(url: string, ok?: true, err?: shareflow.Error)
---@field perShareAccessRequestCompletionBlock? fun(url: string, err?: shareflow.Error)
---@field shareAccessRequestResultBlock? fun(err?: shareflow.Error)
---@field shareRequestAccessCompletionBlock? fun(err?: shareflow.Error)

---@class shareflow.DiscoverAllUserIdentitiesOperation: shareflow.Operation
---@field userIdentityDiscoveredBlock? fun(identity: shareflow.Identity)
---@field progressBlock? fun(done: integer, total: integer)
---@field discoverAllUserIdentitiesResultBlock? fun(err?: shareflow.Error)
---@field discoverAllUserIdentitiesCompletionBlock? fun(err?: shareflow.Error)

---@class shareflow.DiscoverUserIdentitiesOperation: shareflow.Operation
---@field userIdentityLookupInfos? shareflow.LookupLike[]
---@field userIdentityDiscoveredBlock? fun(identity: shareflow.Identity, info: shareflow.LookupInfo)
---@field discoverUserIdentitiesResultBlock? fun(err?: shareflow.Error)
---@field discoverUserIdentitiesCompletionBlock? fun(err?: shareflow.Error)

---@class shareflow.ModifyRecordsOperation: shareflow.Operation
---@field recordsToSave? shareflow.Record[]
---@field recordIDsToDelete? shareflow.RecordID[]
---@field savePolicy? shareflow.SavePolicy
---@field isAtomic? boolean
---@field perRecordSaveBlock? fun(recordID: shareflow.RecordID, record?: shareflow.Record, err?: shareflow.Error)
---@field perRecordDeleteBlock? fun(recordID: shareflow.RecordID, err?: shareflow.Error)
---@field modifyRecordsResultBlock? fun(err?: shareflow.Error)
---@field modifyRecordsCompletionBlock? fun(saved: shareflow.Record[], deleted: shareflow.RecordID[], err?: shareflow.Error)

---@class shareflow.ModifyRecordZonesOperation: shareflow.Operation
---@field recordZonesToSave? string[]
---@field recordZoneIDsToDelete? shareflow.ZoneID[]
---@field perRecordZoneSaveBlock? fun(name: string, zone?: shareflow.Zone, err?: shareflow.Error)
---@field perRecordZoneDeleteBlock? fun(zoneID: shareflow.ZoneID, err?: shareflow.Error)
---@field modifyRecordZonesResultBlock? fun(err?: shareflow.Error)
---@field modifyRecordZonesCompletionBlock? fun(saved: shareflow.Zone[], deleted: shareflow.ZoneID[], err?: shareflow.Error)

---@class shareflow.FetchRecordsOperation: shareflow.Operation
---@field recordIDs? shareflow.RecordID[]
---@field desiredKeys? string[]
---@field perRecordResultBlock? fun(recordID: shareflow.RecordID, record?: shareflow.Record, err?: shareflow.Error)
---@field fetchRecordsResultBlock? fun(err?: shareflow.Error)
---@field fetchRecordsCompletionBlock? fun(records: table<string, shareflow.Record>, err?: shareflow.Error)

---@class shareflow.QueryOperation: shareflow.Operation
---@field query? {recordType: string, predicate?: string, arguments?: any[], sortDescriptors?: (string|shareflow.SortDescriptor)[]}
---@field cursor? shareflow.QueryCursor
---@field zoneID? shareflow.ZoneID
---@field desiredKeys? string[]
---@field resultsLimit? integer
---@field recordMatchedBlock? fun(recordID: shareflow.RecordID, record?: shareflow.Record, err?: shareflow.Error)
---@field recordFetchedBlock? fun(record: shareflow.Record)
---@field queryResultBlock? fun(cursor?: shareflow.QueryCursor, err?: shareflow.Error)
---@field queryCompletionBlock? fun(cursor?: shareflow.QueryCursor, err?: shareflow.Error)

---@class shareflow.Event
---@field name shareflow.Event
---@field caller? shareflow.Account
---@field container? string
---@field time number
---@field share? shareflow.Share
---@field participant? shareflow.Participant
---@field lookupInfo? shareflow.LookupInfo
---@field metadata? shareflow.Metadata
---@field identity? shareflow.Identity
---@field url? string
---@field reason? string
---@field from? string
---@field to? string
---@field created? boolean
---@field operation? string
---@field items? integer
---@field failed? integer
---@field duration? number
---@field approvedRequester? boolean participant.added: the add approved their request
---@field oneTimeURL? boolean share.accepted: through a one-time link (R44)
---@field requester? shareflow.AccessRequester share.accessRequested, share.accessRequestDropped
---@field requesters? shareflow.AccessRequester[] share.requestersDenied
---@field identities? shareflow.BlockedIdentity[] share.requestersBlocked, share.identitiesUnblocked
---@field removedParticipants? shareflow.Participant[] share.requestersBlocked
---@field subscription? shareflow.Subscription subscription.fired
---@field owner? shareflow.Account subscription.fired: whose subscription it is
---@field notification? shareflow.Notification subscription.fired
---@field recordID? shareflow.RecordID record.deleted; subscription.fired (query subscriptions)
---@field zoneID? shareflow.ZoneID
---@field database? shareflow.Scope

---@class shareflow.PolicyRequest
---@field point shareflow.PolicyPoint
---@field caller? shareflow.Account
---@field container? string
---@field share? shareflow.Share the share as stored before the change, owner included; nil while it is created (SPEC §18 P2)
---@field proposed? shareflow.Share participant.add, share.save, share.publicPermission, share.requestAccess: the share as the change would leave it (a copy)
---@field changes? shareflow.ShareChanges what differs between share and proposed
---@field participant? shareflow.Participant
---@field metadata? shareflow.Metadata
---@field from? string
---@field to? string
---@field environment? string
---@field oneTimeURL? boolean share.accept: through a one-time link (R44)
---@field url? string share.requestAccess: the URL asked with
---@field requester? shareflow.AccessRequester share.requestAccess: who asks

---@class shareflow.ShareChanges
---@field participantsAdded shareflow.Participant[]
---@field participantsRemoved shareflow.Participant[]
---@field permissionsChanged {participant: shareflow.Participant, from: string, to: string}[]
---@field publicPermission? {from?: string, to?: string}
---@field allowsAccessRequests? {from?: boolean, to?: boolean}
---@field title? {from?: string, to?: string}

---@class shareflow.Consulted
---@field policy string
---@field verdict "allow"|"deny"|"approve"|"error"
---@field reason? string
---@field location? string file:line of the sf.deny/sf.approve call, else where the function begins

---@class shareflow.Decision
---@field id integer
---@field point string
---@field policies string[]
---@field allow boolean
---@field reasons string[]
---@field duration number
---@field time number
---@field policy? string the policy that denied (or approved)
---@field reason? string its reason
---@field location? string its file:line
---@field caller? string the caller's user record ID
---@field container? string
---@field environment? string
---@field share? {recordName: string, zoneName: string, ownerName: string}
---@field input? string the request as JSON, policies.mask erased
---@field consulted shareflow.Consulted[]
---@field trace shareflow.Consulted[] the same list (sf.policies.evaluate)
---@field node? string
---@field shadow? {allow: boolean, policy?: string, reason?: string}

---@class shareflow.Hook
---@field name string
local Hook = {}
function Hook:remove() end

---@class shareflow.Accounts
local accounts = {}
---@param t {email?: string, emails?: string[], phone?: string, phones?: string[], name?: shareflow.NameComponents, discoverable?: boolean}
---@return shareflow.Account
function accounts.create(t) end
---@param who string|{emailAddress?: string, email?: string, phoneNumber?: string, phone?: string, userRecordID?: string}
---@return shareflow.Account?
function accounts.find(who) end
---@param userRecordID string
---@return shareflow.Account?
function accounts.get(userRecordID) end
---@return shareflow.Account[]
function accounts.list() end
---@return integer
function accounts.count() end

---@class shareflow.Invitation
---@field participantID string
---@field url string
---@field title? string
---@field lookupInfo shareflow.LookupInfo
---@field addedAt number
---@field age number

---@class shareflow.Admin
local admin = {}
---@param opts? {olderThan?: number}
---@return shareflow.Invitation[]
function admin.pendingInvitations(opts) end
---@class shareflow.OpenAccessRequest: shareflow.AccessRequester
---@field url string the share asked for
---@field title? string
---@field age number seconds since it was asked
---Open access requests across the store, oldest first (SPEC §17).
---@param opts? {olderThan?: number, limit?: integer}
---@return shareflow.OpenAccessRequest[]
function admin.accessRequests(opts) end
---@param participantID string
---@param reason? "removedByOwner"|"left"|"publicPermissionChanged"|"shareDeleted"|"expired"
---@return boolean
function admin.removeParticipant(participantID, reason) end
---@class shareflow.AuditEntry
---@field participantID string
---@field lookupInfo shareflow.LookupInfo
---@field userRecordID? string
---@field role shareflow.Role
---@field permission shareflow.Permission
---@field acceptanceStatus shareflow.Status
---@class shareflow.ShareAudit
---@field url string
---@field container string
---@field environment shareflow.Environment
---@field recordID shareflow.RecordID
---@field title? string
---@field owner {userRecordID: string, lookupInfo: shareflow.LookupInfo}
---@field rootRecordID? shareflow.RecordID
---@field publicPermission shareflow.Permission
---@field participants shareflow.AuditEntry[]
---@param filters? {owner?: string, participant?: string, container?: string}
---@return shareflow.ShareAudit[]
function admin.shares(filters) end

---@class shareflow.PluginInfo
---@field name string
---@field version? string
---@field description? string
---@field folder string
---@field enabled boolean
---@field loaded boolean

---@class shareflow.Plugins
local plugins = {}
---@return shareflow.PluginInfo[]
function plugins.list() end
---@param name string
---@param config? table
function plugins.load(name, config) end
---@param name string
function plugins.unload(name) end
---@param name? string
---@return string[]
function plugins.reload(name) end
---@return string[]
function plugins.loaded() end
---@param name string
---@return string
function plugins.dataFolder(name) end

---@class shareflow.FaultRuleHandle
---@field id integer
local FaultRuleHandle = {}
---Disarms the rule; true if it was still armed.
---@return boolean
function FaultRuleHandle:remove() end

---@class shareflow.FaultRule
---@field operation? string native name, HTTP subpath or "*"
---@field container? string
---@field environment? "development"|"production"
---@field database? "private"|"shared"|"public"
---@field zone? string
---@field recordType? string
---@field recordName? string a glob: * any run, ? one character
---@field caller? string an email or userRecordID
---@field fault? "requestRateLimited"|"serviceUnavailable"|"zoneBusy"|"partialFailure"|"changeTokenExpired"|"quotaExceeded"|"zonePurged"|"authenticationFailed"|"networkFailure"
---@field retryAfter? number
---@field itemCode? "serverRecordChanged"|"quotaExceeded"|"limitExceeded"|"zoneBusy"
---@field when? "beforeCommit"|"afterCommit"
---@field probability? number
---@field seed? integer
---@field after? integer
---@field count? integer
---@field latencyMs? number

---@class shareflow.FaultInjection
---@field time number
---@field rule integer
---@field fault string
---@field operation string
---@field caller? string
---@field zone? string
---@field recordName? string

---@class shareflow.Faults
local faults = {}
---Arms a fault rule (SPEC §15).
---@param rule shareflow.FaultRule
---@return shareflow.FaultRuleHandle
function faults.add(rule) end
---Disarms the rules armed at run time; how many.
---@return integer
function faults.clear() end
---@return table[]
function faults.list() end
---@return shareflow.FaultInjection[]
function faults.history() end

---@class shareflow.JSON
local json = {}
---@param value any
---@return string
function json.encode(value) end

---@class shareflow
---@field version string
---@field luaRelease string the linked Lua library's release ("Lua 5.4.4")
---@field accounts shareflow.Accounts
---@field admin shareflow.Admin
---@field plugins shareflow.Plugins
---@field faults shareflow.Faults
---@field json shareflow.JSON
---@field events shareflow.Event[]
local shareflow = {}
shareflow.log = {}
---@param ... any
function shareflow.log.debug(...) end
---@param ... any
function shareflow.log.info(...) end
---@param ... any
function shareflow.log.warn(...) end
---@param ... any
function shareflow.log.error(...) end
---@param who string|shareflow.Account
---@return shareflow.Session
function shareflow.as(who) end
---@param id string
---@param options? {environment?: shareflow.Environment}
---@return shareflow.Container
function shareflow.container(id, options) end
---@param t shareflow.LookupInfo
---@return shareflow.LookupInfo
function shareflow.LookupInfo(t) end
---@param t {subscriptionID?: string, recordType: string, predicate?: string, arguments?: any[], zone?: shareflow.Zone|shareflow.ZoneID|string, zoneID?: shareflow.ZoneID, firesOn?: ("create"|"update"|"delete")[], firesOnce?: boolean, notificationInfo?: shareflow.NotificationInfo}
---@return shareflow.Subscription
function shareflow.QuerySubscription(t) end
---@param t {subscriptionID?: string, zone?: shareflow.Zone|shareflow.ZoneID|string, zoneID?: shareflow.ZoneID, notificationInfo?: shareflow.NotificationInfo}
---@return shareflow.Subscription
function shareflow.RecordZoneSubscription(t) end
---@param t? {subscriptionID?: string, notificationInfo?: shareflow.NotificationInfo}
---@return shareflow.Subscription
function shareflow.DatabaseSubscription(t) end
---@param t {recordType: string, recordName?: string, zone?: shareflow.Zone|shareflow.ZoneID|string, zoneID?: shareflow.ZoneID, fields?: table<string, any>, parent?: shareflow.Record|shareflow.RecordID}
---@return shareflow.Record
function shareflow.Record(t) end
---@param t {rootRecord?: shareflow.Record, zone?: shareflow.Zone|shareflow.ZoneID, zoneID?: shareflow.ZoneID, title?: string, publicPermission?: shareflow.Permission, recordName?: string}
---@return shareflow.Share
function shareflow.Share(t) end
---@param t {recordName: string, zoneID: shareflow.ZoneID}
---@return shareflow.RecordID
function shareflow.RecordID(t) end
---@param s string
---@return shareflow.Bytes
function shareflow.Bytes(s) end
---@param seconds number
---@return shareflow.Date
function shareflow.Date(seconds) end
---@param t {data?: string, path?: string} exactly one; path in trusted scripts only
---@return shareflow.Asset
function shareflow.Asset(t) end
---@param t {latitude: number, longitude: number, horizontalAccuracy?: number, verticalAccuracy?: number, altitude?: number, speed?: number, course?: number, timestamp?: number}
---@return shareflow.Location
function shareflow.Location(t) end
---@param value any a field value, not a list's item nor another sf.Encrypted
---@return shareflow.Encrypted
function shareflow.Encrypted(value) end
---@param t {recordID?: shareflow.RecordID|shareflow.Record, record?: shareflow.Record, action?: "none"|"deleteSelf"}
---@return shareflow.Reference
function shareflow.Reference(t) end
---@param t? table
---@return shareflow.FetchShareParticipantsOperation
function shareflow.FetchShareParticipantsOperation(t) end
---@param t? table
---@return shareflow.FetchShareMetadataOperation
function shareflow.FetchShareMetadataOperation(t) end
---@param t? table
---@return shareflow.AcceptSharesOperation
function shareflow.AcceptSharesOperation(t) end
---A one-time link's participant (R44): no identity until someone accepts the link.
---@param t? {permission?: "readOnly"|"readWrite"}
---@return shareflow.Participant
function shareflow.OneTimeURLParticipant(t) end
---@param t? table
---@return shareflow.ShareRequestAccessOperation
function shareflow.ShareRequestAccessOperation(t) end
---@param t? table
---@return shareflow.DiscoverAllUserIdentitiesOperation
function shareflow.DiscoverAllUserIdentitiesOperation(t) end
---@param t? table
---@return shareflow.DiscoverUserIdentitiesOperation
function shareflow.DiscoverUserIdentitiesOperation(t) end
---@param t? table
---@return shareflow.ModifyRecordsOperation
function shareflow.ModifyRecordsOperation(t) end
---@param t? table
---@return shareflow.ModifyRecordZonesOperation
function shareflow.ModifyRecordZonesOperation(t) end
---@param t? table
---@return shareflow.FetchRecordsOperation
function shareflow.FetchRecordsOperation(t) end
---@param t? table
---@return shareflow.QueryOperation
function shareflow.QueryOperation(t) end
---@class shareflow.FetchDatabaseChangesOperation: shareflow.Operation
---@field previousServerChangeToken? string
---@field resultsLimit? integer
---@field fetchAllChanges boolean
---@field recordZoneWithIDChangedBlock? fun(zoneID: shareflow.ZoneID)
---@field recordZoneWithIDWasDeletedBlock? fun(zoneID: shareflow.ZoneID)
---@field recordZoneWithIDWasPurgedBlock? fun(zoneID: shareflow.ZoneID)
---@field changeTokenUpdatedBlock? fun(token: string)
---@field fetchDatabaseChangesResultBlock? fun(result?: {serverChangeToken: string, moreComing: boolean}, err?: shareflow.Error)
---@field fetchDatabaseChangesCompletionBlock? fun(token?: string, moreComing: boolean, err?: shareflow.Error)
---@param t? table
---@return shareflow.FetchDatabaseChangesOperation
function shareflow.FetchDatabaseChangesOperation(t) end
---@class shareflow.ZoneConfiguration
---@field zoneID shareflow.ZoneID
---@field previousServerChangeToken? string
---@field resultsLimit? integer
---@field desiredKeys? string[]
---@class shareflow.FetchRecordZoneChangesOperation: shareflow.Operation
---@field recordZoneIDs? shareflow.ZoneID[]
---@field configurationsByRecordZoneID? shareflow.ZoneConfiguration[]|table<shareflow.ZoneID, shareflow.ZoneConfiguration>
---@field fetchAllChanges boolean
---@field recordWasChangedBlock? fun(recordID: shareflow.RecordID, record?: shareflow.Record, err?: shareflow.Error)
---@field recordChangedBlock? fun(record: shareflow.Record)
---@field recordWithIDWasDeletedBlock? fun(recordID: shareflow.RecordID, recordType: string)
---@field recordZoneChangeTokensUpdatedBlock? fun(zoneID: shareflow.ZoneID, token?: string, clientData?: string)
---@field recordZoneFetchResultBlock? fun(zoneID: shareflow.ZoneID, result?: {serverChangeToken: string, clientChangeTokenData?: string, moreComing: boolean}, err?: shareflow.Error)
---@field recordZoneFetchCompletionBlock? fun(zoneID: shareflow.ZoneID, token?: string, clientData?: string, moreComing: boolean, err?: shareflow.Error)
---@field fetchRecordZoneChangesResultBlock? fun(err?: shareflow.Error)
---@field fetchRecordZoneChangesCompletionBlock? fun(err?: shareflow.Error)
---@param t? table
---@return shareflow.FetchRecordZoneChangesOperation
function shareflow.FetchRecordZoneChangesOperation(t) end
---@param event shareflow.Event
---@param fn fun(ev: shareflow.Event)
---@param opts? {priority?: integer, name?: string}
---@return shareflow.Hook
function shareflow.on(event, fn, opts) end
---@param point shareflow.PolicyPoint
---@param fn fun(req: shareflow.PolicyRequest): (table|boolean|nil, string?)
---@param opts? {priority?: integer, name?: string}
---@return shareflow.Hook
function shareflow.policy(point, fn, opts) end
---@class shareflow.AuthenticationRequest
---@field method string
---@field path string
---@field container string
---@field environment string
---@field database string
---@field headers table<string, string> names in lowercase
---@field query table<string, string> without ckAPIToken and ckWebAuthToken

---@param fn fun(req: shareflow.AuthenticationRequest): (shareflow.Account|string|nil, string?)
---@param opts? {priority?: integer, name?: string}
---@return shareflow.Hook
function shareflow.authenticate(fn, opts) end
---@return table
function shareflow.allow() end
---@param reason? string
---@return table
function shareflow.deny(reason) end
---share.requestAccess's own verdict (SPEC §17): approve the requester at once.
---@param opts? {permission?: "readOnly"|"readWrite", role?: "privateUser"|"administrator"}
---@return table
function shareflow.approve(opts) end
---@param opts? {limit?: integer, point?: shareflow.PolicyPoint, denied?: boolean, since?: string, caller?: string, shadowFlips?: boolean}
---@return shareflow.Decision[]
function shareflow.decisions(opts) end
shareflow.policies = {}
---Asks the policies at `point` by hand (SPEC §18 P4): nothing changed, nothing logged.
---@param point shareflow.PolicyPoint
---@param req table the request in the shape of a decision's input (caller, share, proposed, participant, metadata…)
---@return shareflow.Decision
function shareflow.policies.evaluate(point, req) end

-- The test API of `shareflow test` (globals in *_test.lua files; docs/LUA_API.md, Tests).

---@class shareflow.test
---@overload fun(name: string, fn: fun())
local test = {}
---Table-driven tests: `fn(row, i)` runs once per row, as a test named `name[i]` (i from 1).
---@generic Row
---@param name string
---@param rows Row[]
---@param fn fun(row: Row, i: integer)
function test.cases(name, rows, fn) end
---What the test's authenticators (`ctx.authenticate`) say about a request, as `shareflow serve`
---asks them: the account named, nil when all pass, or nil and the refusal (a permissionFailure).
---@param request {headers?: table<string, string>, query?: table<string, string>, method?: string, path?: string, container?: string, environment?: string, database?: string}
---@return {userRecordID: string, email?: string, authenticator: string}|nil
---@return shareflow.Error?
function test.authenticate(request) end
---The test's clock: what the engine, os.time() and os.date() read as now (SPEC §18 P5).
test.clock = {}
---Stops the clock at `t`: seconds since 1970, or an ISO 8601 time ("2026-01-05T09:00:00Z").
---@param t number|string
function test.clock.set(t) end
---Moves the clock `seconds` on (back when negative).
---@param seconds number
function test.clock.advance(seconds) end
---The clock's time, seconds since 1970.
---@return number
function test.clock.now() end
---The system's clock again (each test starts on it).
function test.clock.reset() end
_G.test = test

---A policy decision (`sf.policies.evaluate(point, req)`).
---@class shareflow.PolicyDecision
---@field allow boolean
---@field reason? string
---@field policy? string
---@field trace? table

expect = {}
---@param actual any
---@param expected any
---@param what? string
function expect.eq(actual, expected, what) end
---@param v any
---@param what? string
function expect.truthy(v, what) end
---@param v any
---@param what? string
function expect.falsy(v, what) end
---@param err any
---@param code string
---@param what? string
---@return shareflow.Error
function expect.code(err, code, what) end
---@param fn fun()
---@param pattern? string a Lua pattern the error must match
---@return any err
function expect.raises(fn, pattern) end
---@param s string
---@param part string plain text
---@param what? string
function expect.contains(s, part, what) end
---Passes for an allowing decision, or nil (an operation that returned no error was allowed).
---@param d shareflow.PolicyDecision|shareflow.Error|nil
---@param what? string
---@return shareflow.PolicyDecision|nil
function expect.allowed(d, what) end
---Passes for a denying decision, or an operation's permissionFailure (itself, or among a batch's
---partialErrors), whose reason (the error's message) matches `reasonPattern` (a Lua pattern).
---@param d shareflow.PolicyDecision|shareflow.Error|nil
---@param reasonPattern? string
---@param what? string
---@return shareflow.PolicyDecision|shareflow.Error
function expect.denied(d, reasonPattern, what) end

-- Plugins (docs/LUA_API.md §Plugins): what `init.lua` returns, and the `ctx` its setup gets.

---A plugin's config key: its type, default and bounds.
---@class shareflow.ConfigField
---@field type "string"|"number"|"integer"|"boolean"|"list"
---@field default? any
---@field min? number
---@field max? number
---@field items? "string"|"number"|"integer"|"boolean" a list's item type

---The table a plugin's `init.lua` returns.
---@class shareflow.Plugin
---@field name string
---@field version string
---@field description string
---@field config? table<string, shareflow.ConfigField>
---@field setup fun(ctx: shareflow.Context, config: table)

---What `setup(ctx)` gets: the `shareflow` API scoped to the plugin (its observers and policies
---are named `<plugin>/<name>` and removed when it unloads), plus the plugin's own things.
---@class shareflow.Context: shareflow
---@field name string the plugin's name
---@field config table its validated config, defaults filled in
---@field dataFolder string where ctx.appendFile writes
---@field diskQuota integer the data folder's quota in bytes
local Context = {}
---Appends `bytes` to a file inside the plugin's data folder; returns its path.
---@param relativePath string
---@param bytes string
---@return string
function Context.appendFile(relativePath, bytes) end
---Moves the top-level file `name`, when it holds at least `atLeast` bytes, to `name.1`.
---@param name string
---@param atLeast? integer
---@return boolean
function Context.rotateFile(name, atLeast) end

---A policy for `point` (typed by the point's request).
---@alias shareflow.PolicyFunction fun(req: shareflow.PolicyRequest): (boolean|table|nil), string?

return shareflow
