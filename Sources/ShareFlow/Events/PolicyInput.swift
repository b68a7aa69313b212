import Foundation

/// A policy request as JSON (SPEC §18 P3, P4): what the decision log keeps of each decision's
/// input, and what `shareflow policy eval --input` and `policy replay` read back to ask again.
/// The shape is the request as a Lua policy sees it (`req.caller.email`, `req.share.owner`…),
/// so `policies.mask`'s dotted paths name the same fields a policy reads.
///
/// ```swift
/// let json = PolicyInput.object(of: request)            // [String: Any]
/// let again = try PolicyInput.request(from: json)       // the same question, asked again
/// ```
public enum PolicyInput {
    /// The longest input accepted back (`eval --input`): a logged input is far smaller.
    public static let maxBytes = 1 << 20
    /// The most participants, requesters or list items read back per list.
    static let maxItems = 1_000
    /// The longest string read back.
    static let maxString = 64 * 1024

    // MARK: Writing

    /// The request as JSON: what the policy read or could have read, as it was at the decision.
    /// Objects the policy never made are written only when the log needs them to ask again
    /// (the engine makes them before the change, `PolicySet.capture`); an accept's share is its
    /// metadata's when the policy did not read it (the same share, as the caller sees it).
    public static func object(of request: PolicyRequest) -> [String: Any] {
        // When it was asked: a question asked again (eval, replay) is asked at that time, so a
        // policy that reads the clock (an expiry) decides as it did.
        var o: [String: Any] = ["point": request.point.name, "time": EngineClock.seconds]
        if let caller = request.caller { o["caller"] = account(caller) }
        if let container = request.container { o["container"] = container }
        if let environment = request.objects.environment ?? request.objects.metadata?.environment.rawValue { o["environment"] = environment }
        if let from = request.from { o["from"] = from }
        if let to = request.to { o["to"] = to }
        let objects = request.objects
        if let url = objects.url { o["url"] = url }
        if objects.oneTimeURL { o["oneTimeURL"] = true }
        if let requester = objects.requester { o["requester"] = self.requester(requester) }
        if let metadata = objects.metadata { o["metadata"] = self.metadata(metadata) }
        let share = objects.madeShare ? (try? objects.share) ?? nil : objects.metadata?.share
        if let share { o["share"] = self.share(share) }
        if objects.madeParticipant, let p = (try? objects.participant) ?? nil {
            o["participant"] = participant(p)
        } else if request.point == .shareAccept, let mine = objects.metadata?.share.currentUserParticipant {
            o["participant"] = participant(mine)
        }
        if objects.madeProposed, let proposed = (try? objects.proposed) ?? nil {
            o["proposed"] = self.share(proposed)
            if let changes = (try? objects.changes) ?? nil { o["changes"] = self.changes(changes) }
        }
        return o
    }

    static func account(_ a: Account) -> [String: Any] {
        var o: [String: Any] = ["userRecordID": a.userRecordID, "emails": a.emails, "phones": a.phones]
        if let email = a.email { o["email"] = email }
        let name = a.name.formatted
        if !name.isEmpty { o["name"] = name }
        return o
    }

    static func identity(_ i: UserIdentity) -> [String: Any] {
        var o: [String: Any] = ["hasiCloudAccount": i.hasiCloudAccount]
        if let id = i.userRecordID { o["userRecordID"] = id }
        if let info = i.lookupInfo { o["lookupInfo"] = lookup(info) }
        return o
    }

    static func lookup(_ info: LookupInfo) -> [String: Any] {
        if let e = info.emailAddress { return ["emailAddress": e] }
        if let p = info.phoneNumber { return ["phoneNumber": p] }
        return ["userRecordID": info.userRecordID ?? ""]
    }

    static func participant(_ p: Participant) -> [String: Any] {
        var o: [String: Any] = [
            "participantID": p.participantID, "userIdentity": identity(p.userIdentity), "role": p.role.rawValue,
            "permission": p.permission.rawValue, "acceptanceStatus": p.acceptanceStatus.rawValue,
        ]
        if p.isApprovedRequester { o["isApprovedRequester"] = true }
        if p.isOneTimeURLParticipant { o["isOneTimeURLParticipant"] = true }
        if let added = p.dateAddedToShare { o["dateAddedToShare"] = added.timeIntervalSince1970 }
        return o
    }

    static func requester(_ r: Share.AccessRequester) -> [String: Any] {
        ["requestID": r.requestID, "userIdentity": identity(r.userIdentity), "requestedAt": r.requestedAt.timeIntervalSince1970]
    }

    static func share(_ s: Share) -> [String: Any] {
        var o: [String: Any] = [
            "recordName": s.recordID.recordName, "zoneName": s.recordID.zoneID.zoneName, "ownerName": s.recordID.zoneID.ownerName,
            "publicPermission": s.publicPermission.rawValue, "allowsAccessRequests": s.allowsAccessRequests,
            "participants": s.participants.map(participant),
        ]
        if let root = s.rootRecordID { o["rootRecordName"] = root.recordName }
        if let url = s.url { o["url"] = url }
        if let title = s.title { o["title"] = title }
        if !s.requesters.isEmpty { o["requesters"] = s.requesters.map(requester) }
        return o
    }

    static func metadata(_ m: ShareMetadata) -> [String: Any] {
        [
            "containerIdentifier": m.containerIdentifier, "environment": m.environment.rawValue, "url": m.url,
            "ownerIdentity": identity(m.ownerIdentity), "participantRole": m.participantRole.rawValue,
            "participantStatus": m.participantStatus.rawValue, "participantPermission": m.participantPermission.rawValue,
        ]
    }

    static func changes(_ c: ShareChanges) -> [String: Any] {
        var o: [String: Any] = [
            "participantsAdded": c.participantsAdded.map(participant),
            "participantsRemoved": c.participantsRemoved.map(participant),
            "permissionsChanged": c.permissionsChanged.map {
                ["participant": participant($0.participant), "from": $0.from.rawValue, "to": $0.to.rawValue] as [String: Any]
            },
        ]
        func pair(_ from: Any?, _ to: Any?) -> [String: Any] {
            var p: [String: Any] = [:]
            if let from { p["from"] = from }
            if let to { p["to"] = to }
            return p
        }
        if let v = c.publicPermission { o["publicPermission"] = pair(v.from?.rawValue, v.to?.rawValue) }
        if let v = c.allowsAccessRequests { o["allowsAccessRequests"] = pair(v.from, v.to) }
        if let v = c.title { o["title"] = pair(v.from, v.to) }
        return o
    }

    /// The longest string a logged input keeps, the most items of a list, and the most bytes
    /// of the whole: a title of megabytes makes a row of a few kilobytes (SPEC §18 P3).
    public static let loggedString = 1_024, loggedItems = 1_000, loggedBytes = 256 * 1_024
    /// The key the log never keeps, at any depth: a share URL is a bearer secret.
    static let neverLogged = "url"

    /// `object` as the log keeps it, as JSON text: no share URL (a bearer secret: a public
    /// share's, a one-time link's), strings and lists cut to `loggedString`/`loggedItems` (a
    /// cut string ends in `…`); when the text would still pass `loggedBytes`, the point, time
    /// and caller alone (its first ten addresses and phones, if it has more than fit), marked
    /// `"truncated"` (replay then says it cannot ask it again). Cut
    /// while written: one pass over the request, on the engine's thread after each transaction.
    public static func loggedText(_ object: [String: Any]) -> String {
        let limits = JSONText.Limits(string: loggedString, items: loggedItems, droppedKey: neverLogged)
        let text = JSONText.of(object, limits: limits)
        guard text.utf8.count > loggedBytes else { return text }
        var small: [String: Any] = ["truncated": true]
        for key in ["point", "time", "caller", "container", "environment"] { small[key] = object[key] }
        let smallText = JSONText.of(small, limits: limits)
        guard smallText.utf8.count > loggedBytes, var caller = small["caller"] as? [String: Any] else { return smallText }
        // A caller of thousands of long addresses: who it is, and its first few of each.
        for key in ["emails", "phones"] { caller[key] = (caller[key] as? [String]).map { Array($0.prefix(10)) } }
        small["caller"] = caller
        return JSONText.of(small, limits: limits)
    }

    /// `object` with every dotted path in `mask` erased (SPEC §18 P3, as OPA's masking): a path
    /// through a list applies to each item. Returns the object and the paths that erased
    /// something.
    public static func masked(_ object: [String: Any], _ mask: [String]) -> (object: [String: Any], erased: [String]) {
        var result = object
        var erased: [String] = []
        for path in mask {
            let parts = path.split(separator: ".").map(String.init)
            guard !parts.isEmpty else { continue }
            var hit = false
            result = erase(result, parts[...], &hit)
            if hit { erased.append(path) }
        }
        return (result, erased)
    }

    private static func erase(_ value: [String: Any], _ path: ArraySlice<String>, _ hit: inout Bool) -> [String: Any] {
        var copy = value
        guard let key = path.first, let child = copy[key] else { return copy }
        if path.count == 1 {
            copy[key] = nil
            hit = true
            return copy
        }
        if let dict = child as? [String: Any] {
            copy[key] = erase(dict, path.dropFirst(), &hit)
        } else if let list = child as? [Any] {
            copy[key] = list.map { item -> Any in (item as? [String: Any]).map { erase($0, path.dropFirst(), &hit) } ?? item }
        }
        return copy
    }

    /// JSON text, keys sorted (a logged input reads the same every time).
    public static func text(_ object: [String: Any]) -> String { JSONText.of(object) }

    // MARK: Reading back

    /// The time an input was asked at (its `time`), if it says.
    public static func time(of text: [UInt8]) -> Date? {
        guard text.count <= maxBytes, let o = (try? JSONSerialization.jsonObject(with: Data(text))) as? [String: Any],
            let t = o["time"] as? Double, t.isFinite, abs(t) < 315_576_000_000
        else { return nil }
        return Date(timeIntervalSince1970: t)
    }

    /// A request made from `text` (`eval --input`, a logged decision's input). `caller`: the
    /// account to ask as when the input names one that is in the store (`lookup`), else one
    /// made from the input for the question alone. Throws `PolicyInputError` naming the field.
    public static func request(
        from text: [UInt8],
        pointName: String? = nil,
        lookup: (String) -> Account? = { _ in nil }
    ) throws -> PolicyRequest {
        guard text.count <= maxBytes else { throw PolicyInputError("the input is \(text.count) bytes; at most \(maxBytes) are read") }
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(text), options: [.fragmentsAllowed])
        } catch {
            throw PolicyInputError("the input is not JSON (\(error.localizedDescription))")
        }
        guard let o = parsed as? [String: Any] else { throw PolicyInputError("the input must be a JSON object, like a decision's \"input\"") }
        if o["truncated"] as? Bool == true {
            throw PolicyInputError("the input was too large to log whole (\(loggedBytes / 1024) KiB): it cannot be asked again")
        }
        return try request(from: o, pointName: pointName, lookup: lookup)
    }

    /// As `request(from:)`, from a parsed object.
    public static func request(
        from o: [String: Any],
        pointName: String? = nil,
        lookup: (String) -> Account? = { _ in nil }
    ) throws -> PolicyRequest {
        let named = try string(o, "point", "")
        guard let name = pointName ?? named else { throw PolicyInputError("the input names no decision point (\"point\")") }
        guard let point = DecisionPoint(name: name) else {
            throw PolicyInputError(
                "unknown decision point '\(Naming.printable(name))' (expected one of: \(PolicySet.points.joined(separator: ", ")))"
            )
        }
        if let named, pointName != nil, named != name {
            throw PolicyInputError("the input is a decision at \(Naming.printable(named)), not \(name)")
        }
        var caller: Account?
        if let c = try dict(o, "caller", "") {
            let id = try string(c, "userRecordID", "caller.") ?? ""
            let email = try string(c, "email", "caller.")
            var emails = try strings(c, "emails", "caller.") ?? []
            // `email` is the primary address: first, whatever `emails` says.
            if let email { emails = [email] + emails.filter { $0 != email } }
            let phones = try strings(c, "phones", "caller.") ?? []
            // The account of that user record ID when the store has it (its row, for what a
            // policy asks the engine), described as the input describes it: the question is
            // the one logged, not today's account.
            let stored = id.hasPrefix("_") ? lookup(id) : nil
            caller = Account(
                id: stored?.id ?? -1,
                userRecordID: id,
                emails: c["emails"] == nil && email == nil ? stored?.emails ?? [] : emails,
                phones: c["phones"] == nil ? stored?.phones ?? [] : phones,
                name: stored?.name ?? NameComponents(),
                discoverability: stored?.discoverability ?? .denied,
                contacts: stored?.contacts ?? []
            )
        }
        let share = try dict(o, "share", "").map { try self.share($0, "share.") }
        let proposed = try dict(o, "proposed", "").map { try self.share($0, "proposed.") }
        let participant = try dict(o, "participant", "").map { try self.participant($0, "participant.") }
        var metadata: ShareMetadata?
        if let m = try dict(o, "metadata", ""), let share {
            let container = try string(m, "containerIdentifier", "metadata.") ?? (try string(o, "container", "")) ?? ""
            let environment = CloudEnvironment(rawValue: try string(m, "environment", "metadata.") ?? "development") ?? .development
            metadata = ShareMetadata(
                containerID: ContainerID(container, environment),
                share: share,
                url: try string(m, "url", "metadata.") ?? share.url ?? "",
                ownerIdentity: try dict(m, "ownerIdentity", "metadata.").map { try identity($0, "metadata.ownerIdentity.") }
                    ?? UserIdentity(userRecordID: share.recordID.zoneID.ownerName, lookupInfo: nil, nameComponents: nil, hasiCloudAccount: true),
                hierarchicalRootRecordID: share.rootRecordID,
                rootRecord: nil,
                participantRole: ParticipantRole(rawValue: try string(m, "participantRole", "metadata.") ?? "") ?? .unknown,
                participantStatus: ParticipantAcceptanceStatus(rawValue: try string(m, "participantStatus", "metadata.") ?? "") ?? .unknown,
                participantPermission: ParticipantPermission(rawValue: try string(m, "participantPermission", "metadata.") ?? "") ?? .unknown
            )
        }
        let objects = PolicyRequest.Objects(share: { share }, participant: { participant }, metadata: metadata, proposed: { proposed })
        objects.url = try string(o, "url", "")
        objects.oneTimeURL = (o["oneTimeURL"] as? Bool) ?? false
        objects.environment = try string(o, "environment", "")
        if let r = try dict(o, "requester", "") {
            objects.requester = Share.AccessRequester(
                requestID: try string(r, "requestID", "requester.") ?? "",
                userIdentity: try dict(r, "userIdentity", "requester.").map { try identity($0, "requester.userIdentity.") }
                    ?? UserIdentity(userRecordID: nil, lookupInfo: nil, nameComponents: nil, hasiCloudAccount: false),
                participantLookupInfo: .userRecordID(""),
                requestedAt: Date(timeIntervalSince1970: try number(r, "requestedAt", "requester.") ?? 0)
            )
        }
        return PolicyRequest(
            point: point,
            caller: caller,
            container: try string(o, "container", ""),
            objects: objects,
            from: try string(o, "from", ""),
            to: try string(o, "to", "")
        )
    }

    private static func share(_ o: [String: Any], _ at: String) throws -> Share {
        let zone = RecordZoneID(zoneName: try string(o, "zoneName", at) ?? "", ownerName: try string(o, "ownerName", at) ?? "")
        let share = Share(
            recordID: RecordID(recordName: try string(o, "recordName", at) ?? "", zoneID: zone),
            rootRecordID: try string(o, "rootRecordName", at).map { RecordID(recordName: $0, zoneID: zone) }
        )
        share.url = try string(o, "url", at)
        share.title = try string(o, "title", at)
        if let p = try string(o, "publicPermission", at) {
            guard let value = ParticipantPermission(rawValue: p) else {
                throw PolicyInputError("\(at)publicPermission: '\(Naming.printable(p))' is no permission")
            }
            share.publicPermission = value
        }
        share.allowsAccessRequests = (o["allowsAccessRequests"] as? Bool) ?? false
        share.participants = try list(o, "participants", at).enumerated().map { i, item in
            guard let p = item as? [String: Any] else { throw PolicyInputError("\(at)participants[\(i + 1)] must be an object") }
            return try participant(p, "\(at)participants[\(i + 1)].")
        }
        return share
    }

    private static func participant(_ o: [String: Any], _ at: String) throws -> Participant {
        func value<T: RawRepresentable<String>>(_ key: String, _ fallback: T) throws -> T {
            guard let s = try string(o, key, at) else { return fallback }
            guard let v = T(rawValue: s) else { throw PolicyInputError("\(at)\(key): '\(Naming.printable(s))' is not one of its values") }
            return v
        }
        let p = Participant(
            participantID: try string(o, "participantID", at) ?? RandomIdentifier.uuidString(),
            userIdentity: try dict(o, "userIdentity", at).map { try identity($0, "\(at)userIdentity.") }
                ?? UserIdentity(userRecordID: nil, lookupInfo: nil, nameComponents: nil, hasiCloudAccount: false),
            role: try value("role", ParticipantRole.privateUser),
            permission: try value("permission", ParticipantPermission.readOnly),
            acceptanceStatus: try value("acceptanceStatus", ParticipantAcceptanceStatus.unknown)
        )
        p.isApprovedRequester = (o["isApprovedRequester"] as? Bool) ?? false
        p.isOneTimeURLParticipant = (o["isOneTimeURLParticipant"] as? Bool) ?? false
        p.dateAddedToShare = try number(o, "dateAddedToShare", at).map { Date(timeIntervalSince1970: $0) }
        return p
    }

    private static func identity(_ o: [String: Any], _ at: String) throws -> UserIdentity {
        var info: LookupInfo?
        if let l = try dict(o, "lookupInfo", at) {
            do {
                info = try LookupInfo(
                    emailAddress: try string(l, "emailAddress", "\(at)lookupInfo."),
                    phoneNumber: try string(l, "phoneNumber", "\(at)lookupInfo."),
                    userRecordID: try string(l, "userRecordID", "\(at)lookupInfo.")
                )
            } catch {
                throw PolicyInputError("\(at)lookupInfo: \(error)")
            }
        }
        return UserIdentity(
            userRecordID: try string(o, "userRecordID", at),
            lookupInfo: info,
            nameComponents: nil,
            hasiCloudAccount: (o["hasiCloudAccount"] as? Bool) ?? false
        )
    }

    private static func string(_ o: [String: Any], _ key: String, _ at: String) throws -> String? {
        guard let v = o[key], !(v is NSNull) else { return nil }
        guard let s = v as? String else { throw PolicyInputError("\(at)\(key) must be a string") }
        guard s.utf8.count <= maxString else { throw PolicyInputError("\(at)\(key) is \(s.utf8.count) bytes; at most \(maxString)") }
        return s
    }

    private static func number(_ o: [String: Any], _ key: String, _ at: String) throws -> Double? {
        guard let v = o[key], !(v is NSNull) else { return nil }
        guard let n = v as? Double, n.isFinite else { throw PolicyInputError("\(at)\(key) must be a finite number") }
        return n
    }

    private static func strings(_ o: [String: Any], _ key: String, _ at: String) throws -> [String]? {
        guard o[key] != nil, !(o[key] is NSNull) else { return nil }
        return try list(o, key, at).enumerated().map { i, v in
            guard let s = v as? String, s.utf8.count <= maxString else { throw PolicyInputError("\(at)\(key)[\(i + 1)] must be a string") }
            return s
        }
    }

    private static func dict(_ o: [String: Any], _ key: String, _ at: String) throws -> [String: Any]? {
        guard let v = o[key], !(v is NSNull) else { return nil }
        guard let d = v as? [String: Any] else { throw PolicyInputError("\(at)\(key) must be an object") }
        return d
    }

    private static func list(_ o: [String: Any], _ key: String, _ at: String) throws -> [Any] {
        guard let v = o[key], !(v is NSNull) else { return [] }
        guard let l = v as? [Any] else { throw PolicyInputError("\(at)\(key) must be a list") }
        guard l.count <= maxItems else { throw PolicyInputError("\(at)\(key) has \(l.count) items; at most \(maxItems)") }
        return l
    }
}

/// An input `PolicyInput` could not read back: the message names the field.
public struct PolicyInputError: Error, CustomStringConvertible {
    /// What is wrong, naming the field (`share.participants[2].role: …`).
    public let message: String
    /// An error saying `message`.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}
