import Foundation
import Hummingbird
import ShareFlow

/// C1–C2: a share as the acted-as account sees it (participants by R15, requesters and blocked
/// identities only for the owner and administrators, R40), and sharing by hand: create, invite,
/// change a permission, remove, approve, deny or block a requester, unblock, change the
/// settings. Each action is one engine save of the share as that account, so R8–R11, R26,
/// R41–R42, the policies and the events apply as they do to an app's save; each form carries
/// the share's change tag, and a share changed since its page was made is not saved.
extension WebConsole {
    func registerSharing(on router: Router<ServerRequestContext>) {
        page(.share, on: router) { call in try await sharePage(call) }
        let back: @Sendable (ConsoleCall) -> ConsoleLink = { call in
            guard let place = try? ConsolePlace(call, needsZone: true), let share = call.value("share") else { return ConsoleLink(.accounts) }
            return place.link(.share, [("share", share)])
        }
        let backToRecord: @Sendable (ConsoleCall) -> ConsoleLink = { call in
            guard let place = try? ConsolePlace(call, needsZone: true) else { return ConsoleLink(.accounts) }
            return call.value("record").map { place.link(.record, [("record", $0)]) } ?? place.link(.zone)
        }
        action(.shareCreate, on: router, back: backToRecord) { call in try await createShare(call) }
        action(.shareInvite, on: router, back: back) { call in
            let lookup = try call.required("lookup")
            let permission = try WebConsole.permission(call.value("permission") ?? "readOnly")
            let request = WebConsole.lookupRequest(lookup)
            return try await changeShare(call) { share, container in
                let (results, error) = container.fetchShareParticipantResults([request])
                if let error { throw error }
                let participant = try results[0].1.get()
                participant.permission = permission
                share.addParticipant(participant)
                return "Invited \(lookup) (\(permission.rawValue))."
            }
        }
        action(.sharePermission, on: router, back: back) { call in
            let id = try call.required("participant")
            let permission = try WebConsole.permission(try call.required("permission"))
            let role = try call.value("role").map(WebConsole.role)
            return try await changeShare(call) { share, _ in
                guard let p = share.participants.first(where: { $0.participantID == id }) else {
                    throw ConsoleProblem("that participant is not on the share any more")
                }
                p.permission = permission
                if let role { p.role = role }
                share.addParticipant(p)
                return "Changed \(WebConsole.who(p.userIdentity)) to \(permission.rawValue)\(role.map { ", \($0.rawValue)" } ?? "")."
            }
        }
        action(.shareRemove, on: router, back: back) { call in
            let id = try call.required("participant")
            return try await changeShare(call) { share, _ in
                guard let p = share.participants.first(where: { $0.participantID == id }) else {
                    throw ConsoleProblem("that participant is not on the share any more")
                }
                share.removeParticipant(p)
                return "Removed \(WebConsole.who(p.userIdentity))."
            }
        }
        action(.shareRequesters, on: router, back: back) { call in
            let id = try call.required("requester")
            let decision = try call.required("decision")
            let permission = try WebConsole.permission(call.value("permission") ?? "readOnly")
            return try await changeShare(call) { share, _ in
                guard let r = share.requesters.first(where: { $0.requestID == id }) else {
                    throw ConsoleProblem("that request is not open any more")
                }
                let name = WebConsole.who(r.userIdentity)
                switch decision {
                case "approve":
                    share.approveRequesters([r], permission: permission)
                    return "Approved \(name) (\(permission.rawValue)): they can now accept."
                case "deny":
                    share.denyRequesters([r])
                    return "Denied \(name)'s request."
                case "block":
                    share.blockRequesters([r])
                    return "Blocked \(name)."
                default: throw ConsoleProblem("decision must be approve, deny or block")
                }
            }
        }
        action(.shareUnblock, on: router, back: back) { call in
            let id = try call.required("blocked")
            return try await changeShare(call) { share, _ in
                guard let b = share.blockedIdentities.first(where: { $0.blockID == id }) else {
                    throw ConsoleProblem("that identity is not blocked any more")
                }
                share.unblockIdentities([b])
                return "Unblocked \(WebConsole.who(b.userIdentity))."
            }
        }
        action(.shareSettings, on: router, back: back) { call in
            let permission = try WebConsole.permission(try call.required("publicPermission"))
            let requests = call.value("allowsAccessRequests") == "1"
            let title = call.value("title")
            return try await changeShare(call) { share, _ in
                share.publicPermission = permission
                share.allowsAccessRequests = requests
                if let title { share.title = title.isEmpty ? nil : title }
                return "Saved the share's settings."
            }
        }
    }

    /// The share named by `call`, changed by `change` and saved, as the acted-as account.
    private func changeShare(
        _ call: ConsoleCall,
        _ change: @escaping @Sendable (Share, Container) throws -> String
    ) async throws -> ActionOutcome {
        let place = try ConsolePlace(call, needsZone: true)
        let name = try call.required("share")
        let tag = try call.required("tag")
        guard let zoneID = place.zone else { throw ConsoleProblem("zone is required") }
        let engine = self.engine
        let message = try await thread.run { () -> String in
            let container = try place.container(engine: engine)
            let db = container.database(place.scope)
            guard let share = try db.fetchRecord(RecordID(recordName: name, zoneID: zoneID)) as? Share else {
                throw ConsoleProblem("\(name) is not a share")
            }
            // The page was made from another version: what it showed is not what would change.
            guard share.recordChangeTag == tag else {
                throw ConsoleProblem("the share changed since this page was made; nothing was saved (look again, then act)")
            }
            let message = try change(share, container)
            let result = try db.modifyRecords(saving: [share])
            if let failure = result.errors.first { throw failure.error }
            return message
        }
        return ActionOutcome(message)
    }

    private func createShare(_ call: ConsoleCall) async throws -> ActionOutcome {
        let place = try ConsolePlace(call, needsZone: true)
        guard let zoneID = place.zone else { throw ConsoleProblem("zone is required") }
        let record = call.value("record")
        let title = call.text("title")
        let engine = self.engine
        let shareName = try await thread.run { () -> String in
            let db = try place.database(engine: engine)
            let share: Share
            var saving: [Record] = []
            if let record {
                let root = try db.fetchRecord(RecordID(recordName: record, zoneID: zoneID))
                share = Share(rootRecord: root)
                saving.append(root)
            } else {
                share = Share(zoneID: zoneID)
            }
            if let title { share.title = title }
            saving.append(share)
            let result = try db.modifyRecords(saving: saving)
            if let failure = result.errors.first { throw failure.error }
            return share.recordID.recordName
        }
        return ActionOutcome("Shared. Invite people below.", next: place.link(.share, [("share", shareName)]))
    }

    private func sharePage(_ call: ConsoleCall) async throws -> ConsolePage {
        let engine = self.engine
        let place = try ConsolePlace(call, needsZone: true)
        let name = try call.required("share")
        guard let zoneID = place.zone else { throw ConsoleProblem("zone is required") }
        let body = try await thread.read { () -> HTML in
            let db = try place.database(engine: engine)
            guard let share = try db.fetchRecord(RecordID(recordName: name, zoneID: zoneID)) as? Share else {
                throw ConsoleProblem("\(name) is not a share")
            }
            return WebConsole.shareBody(share, place: place, call: call)
        }
        return ConsolePage(title: "Share \(name)", acting: place.who, body: body)
    }

    private static func shareBody(_ share: Share, place: ConsolePlace, call: ConsoleCall) -> HTML {
        let name = share.recordID.recordName
        let manages = [.owner, .administrator].contains(share.currentUserParticipant?.role)
        let isOwner = share.currentUserParticipant?.role == .owner
        let fields: HTML =
            "\(call.csrfField)\(place.hiddenFields)<input type=\"hidden\" name=\"share\" value=\"\(name)\"><input type=\"hidden\" name=\"tag\" value=\"\(share.recordChangeTag ?? "")\">"
        let participants = share.participants.map { p -> HTML in
            let me = p.participantID == share.currentUserParticipant?.participantID
            var actions = HTML.empty
            if manages && p.role != .owner && !me {
                let choices = ["readOnly", "readWrite"].map { v -> HTML in
                    "<option value=\"\(v)\"\(p.permission.rawValue == v ? " selected" : "")>\(v)</option>"
                }
                let roles: HTML =
                    isOwner
                    ? "<label>Role<select name=\"role\"><option value=\"privateUser\"\(p.role == .privateUser ? " selected" : "")>privateUser</option><option value=\"administrator\"\(p.role == .administrator ? " selected" : "")>administrator</option></select></label>"
                    : .empty
                actions = """
                    <form method="post" action="\(ConsoleLink(.sharePermission))" class="row">\(fields)
                    <input type="hidden" name="participant" value="\(p.participantID)">
                    <label>Permission<select name="permission">\(choices)</select></label>\(roles)<button type="submit" class="quiet">Change</button></form>
                    <form method="post" action="\(ConsoleLink(.shareRemove))" class="inline">\(fields)
                    <input type="hidden" name="participant" value="\(p.participantID)"><button type="submit" class="danger">Remove</button></form>
                    """
            }
            let badges: HTML = """
                \(p.isApprovedRequester ? " <span class=\"badge\">approved requester</span>" : HTML.empty)\(p.isOneTimeURLParticipant ? " <span class=\"badge\">one-time link (hidden)</span>" : HTML.empty)\(me ? " <span class=\"badge\">you</span>" : HTML.empty)
                """
            return """
                <tr><td>\(WebConsole.who(p.userIdentity))\(badges)</td><td>\(p.role.rawValue)</td><td>\(p.permission.rawValue)</td>
                <td>\(p.acceptanceStatus.rawValue)</td><td>\(actions)</td></tr>
                """
        }
        let requesters = share.requesters.map { r -> HTML in
            let decide = ["approve", "deny", "block"].map { d -> HTML in
                """
                <form method="post" action="\(ConsoleLink(.shareRequesters))" class="inline">\(fields)
                <input type="hidden" name="requester" value="\(r.requestID)"><input type="hidden" name="decision" value="\(d)">
                <button type="submit" class="\(d == "approve" ? "quiet" : "danger")">\(d.capitalized)</button></form>
                """
            }
            return "<tr><td>\(WebConsole.who(r.userIdentity))</td><td>\(WebConsole.time(r.requestedAt))</td><td>\(decide)</td></tr>"
        }
        let blocked = share.blockedIdentities.map { b -> HTML in
            """
            <tr><td>\(WebConsole.who(b.userIdentity))</td><td>\(WebConsole.time(b.blockedAt))</td><td>
            <form method="post" action="\(ConsoleLink(.shareUnblock))" class="inline">\(fields)
            <input type="hidden" name="blocked" value="\(b.blockID)"><button type="submit" class="quiet">Unblock</button></form></td></tr>
            """
        }
        let manage: HTML =
            manages
            ? """
            <h2>Invite</h2>
            <form method="post" action="\(ConsoleLink(.shareInvite))" class="row">\(fields)
            <label>Email, phone or userRecordID<input name="lookup" required></label>
            <label>Permission<select name="permission"><option>readOnly</option><option>readWrite</option></select></label>
            <button type="submit">Invite</button></form>
            <h2>Access requests</h2>
            <table><thead><tr><th scope="col">Requester</th><th scope="col">Asked</th><th scope="col">Decide</th></tr></thead><tbody>\(requesters)</tbody></table>
            \(share.requesters.isEmpty ? "<p class=\"muted\">No open request.</p>" : HTML.empty)
            <h2>Blocked</h2>
            <table><thead><tr><th scope="col">Identity</th><th scope="col">Blocked</th><th scope="col">Action</th></tr></thead><tbody>\(blocked)</tbody></table>
            \(share.blockedIdentities.isEmpty ? "<p class=\"muted\">Nobody is blocked.</p>" : HTML.empty)
            """ : "<p class=\"muted\">Requesters and blocked identities are shown to the owner and administrators only (R40).</p>"
        let settings: HTML =
            isOwner
            ? """
            <h2>Settings</h2>
            <form method="post" action="\(ConsoleLink(.shareSettings))" class="row">\(fields)
            <label>Title<input name="title" value="\(share.title ?? "")"></label>
            <label>Public permission<select name="publicPermission">\(["none", "readOnly", "readWrite"].map { v -> HTML in "<option\(share.publicPermission.rawValue == v ? " selected" : "")>\(v)</option>" })</select></label>
            <label><span>Allows access requests</span><input type="checkbox" name="allowsAccessRequests" value="1"\(share.allowsAccessRequests ? " checked" : "")></label>
            <button type="submit">Save settings</button></form>
            """ : .empty
        let root: HTML =
            share.rootRecordID.map { "<a href=\"\(place.link(.record, [("record", $0.recordName)]))\">\($0.recordName)</a>" } ?? "the whole zone"
        return """
            <h1>Share <code>\(name)</code></h1>
            <table><tbody>
            <tr><th scope="row">Shares</th><td>\(root)</td></tr>
            <tr><th scope="row">Title</th><td>\(share.title ?? "")</td></tr>
            <tr><th scope="row">URL</th><td><code>\(share.url ?? "")</code></td></tr>
            <tr><th scope="row">Public permission</th><td>\(share.publicPermission.rawValue)</td></tr>
            <tr><th scope="row">Allows access requests</th><td>\(share.allowsAccessRequests ? "yes" : "no")</td></tr>
            </tbody></table>
            <h2>Participants</h2>
            <table><thead><tr><th scope="col">Who</th><th scope="col">Role</th><th scope="col">Permission</th><th scope="col">Status</th><th scope="col">Actions</th></tr></thead>
            <tbody>\(participants)</tbody></table>
            \(manage)\(settings)
            """
    }

    /// A person as a page names them: the address they were invited at, else their name, else their ID.
    static func who(_ identity: UserIdentity) -> String {
        if let info = identity.lookupInfo {
            switch info {
            case .emailAddress(let v), .phoneNumber(let v): return v
            case .userRecordID(let v): return v
            }
        }
        if let name = identity.nameComponents?.formatted, !name.isEmpty { return name }
        return identity.userRecordID ?? "one-time link (not accepted yet)"
    }

    static func permission(_ text: String) throws -> ParticipantPermission {
        guard let p = ParticipantPermission(rawValue: text), p != .unknown else {
            throw ConsoleProblem("permission must be none, readOnly or readWrite")
        }
        return p
    }

    static func role(_ text: String) throws -> ParticipantRole {
        guard let r = ParticipantRole(rawValue: text), [.privateUser, .administrator].contains(r) else {
            throw ConsoleProblem("role must be privateUser or administrator")
        }
        return r
    }

    /// An address as a lookup: `_…` a userRecordID, with `@` an email, else a phone number.
    static func lookupRequest(_ text: String) -> LookupRequest {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t.hasPrefix("_") { return LookupRequest(userRecordID: t) }
        if t.contains("@") { return LookupRequest(emailAddress: t) }
        return LookupRequest(phoneNumber: t)
    }
}
