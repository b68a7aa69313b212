import Foundation
import Hummingbird
import ShareFlow

/// C1: the pages that read, each as the account the operator acts as: accounts, an account's
/// containers, a database's zones, a zone's records, the public database's records of a type,
/// and a record.
extension WebConsole {
    /// How many records a zone's page lists.
    static let pageSize = 50
    /// How many accounts the accounts page lists.
    static let accountsShown = 200

    func registerBrowsing(on router: Router<ServerRequestContext>) {
        page(.accounts, on: router) { call in try await accounts(call) }
        page(.account, on: router) { call in try await account(call) }
        page(.database, on: router) { call in try await database(call) }
        page(.zone, on: router) { call in try await zone(call) }
        page(.publicRecords, on: router) { call in try await publicRecords(call) }
        page(.record, on: router) { call in try await record(call) }
    }

    private func accounts(_ call: ConsoleCall) async throws -> ConsolePage {
        let engine = self.engine
        let q = call.query.text("q")
        let (accounts, total) = try await thread.read { () -> ([Account], Int) in
            if let q {
                let found = (try? ConsolePlace.account(q, engine: engine)).map { [$0] } ?? []
                return (found, found.count)
            }
            return (try engine.accounts.list(limit: WebConsole.accountsShown), try engine.accounts.count())
        }
        let rows = accounts.map { a -> HTML in
            """
            <tr><td>\(a.name.formatted)</td><td><code>\(a.userRecordID)</code></td><td>\(a.emails.joined(separator: ", "))</td>
            <td>\(a.phones.joined(separator: ", "))</td><td>\(a.discoverability.rawValue)</td>
            <td><a href="\(ConsoleLink(.account, ["as": a.userRecordID]))">Act as</a></td></tr>
            """
        }
        let shown: HTML =
            q == nil && total > accounts.count
            ? "<p class=\"muted\">The first \(accounts.count) of \(total) accounts; find one by address or ID.</p>" : .empty
        return ConsolePage(
            title: "Accounts",
            body: """
                <h1>Accounts</h1>
                <form method="get" action="\(ConsoleLink(.accounts))" class="row" role="search">
                <label>Find by email, phone or userRecordID<input name="q" value="\(q ?? "")"></label><button type="submit">Find</button></form>
                \(shown)
                <table><caption class="muted">Act as an account to see the world as its apps do.</caption>
                <thead><tr><th scope="col">Name</th><th scope="col">userRecordID</th><th scope="col">Emails</th><th scope="col">Phones</th>
                <th scope="col">Discoverability</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
                <tbody>\(rows)</tbody></table>
                \(accounts.isEmpty ? "<p>No account matches.</p>" : HTML.empty)
                """
        )
    }

    private func account(_ call: ConsoleCall) async throws -> ConsolePage {
        let engine = self.engine
        let who = try call.required("as")
        let (account, containers) = try await thread.read { () -> (Account, [ContainerID]) in
            let a = try ConsolePlace.account(who, engine: engine)
            return (a, try engine.accounts.containers(of: a))
        }
        let rows = containers.map { c -> HTML in
            let links = DatabaseScope.allCases.map { scope -> HTML in
                let link = ConsoleLink(
                    .database,
                    ["as": account.userRecordID, "container": c.identifier, "environment": c.environment.rawValue, "database": scope.rawValue]
                )
                return "<a href=\"\(link)\">\(scope.rawValue)</a> "
            }
            return "<tr><td><code>\(c.identifier)</code></td><td>\(c.environment.rawValue)</td><td>\(links)</td></tr>"
        }
        return ConsolePage(
            title: account.userRecordID,
            acting: WebConsole.label(account),
            body: """
                <h1>\(WebConsole.label(account))</h1>
                <h2>Containers</h2>
                <table><thead><tr><th scope="col">Container</th><th scope="col">Environment</th><th scope="col">Databases</th></tr></thead>
                <tbody>\(rows)</tbody></table>
                \(containers.isEmpty ? "<p class=\"muted\">This account has no zone, share or token in any container yet.</p>" : HTML.empty)
                <h2>Open a container</h2>
                <form method="get" action="\(ConsoleLink(.database))" class="row">
                <input type="hidden" name="as" value="\(account.userRecordID)">
                <label>Container<input name="container" required placeholder="iCloud.com.example.app"></label>
                <label>Environment<select name="environment"><option>development</option><option>production</option></select></label>
                <label>Database<select name="database"><option>private</option><option>shared</option><option>public</option></select></label>
                <button type="submit">Open</button></form>
                <p><a href="\(ConsoleLink(.link, ["as": account.userRecordID]))">Open a share link as this account</a></p>
                """
        )
    }

    private func database(_ call: ConsoleCall) async throws -> ConsolePage {
        let engine = self.engine
        let place = try ConsolePlace(call)
        let zones = try await thread.read { try place.database(engine: engine).fetchAllRecordZones().map(\.zoneID) }
        let tabs = DatabaseScope.allCases.map { scope -> HTML in
            scope == place.scope
                ? "<strong aria-current=\"page\">\(scope.rawValue)</strong> "
                : "<a href=\"\(place.with(scope: scope).link(.database))\">\(scope.rawValue)</a> "
        }
        let rows = zones.map { z -> HTML in
            let at = place.with(zone: z)
            return """
                <tr><td><a href="\(at.link(.zone))">\(z.zoneName)</a></td><td><code>\(z.ownerName)</code></td>
                <td>\(place.scope == .public || z.isDefaultZone ? HTML.empty : "<a href=\"\(at.link(.feed))\">live feed</a>")</td></tr>
                """
        }
        let publicForm: HTML =
            place.scope == .public
            ? """
            <h2>Public records by type</h2>
            <form method="get" action="\(ConsoleLink(.publicRecords))" class="row">\(place.hiddenFields)
            <label>Record type<input name="type" required></label><button type="submit">List</button></form>
            """ : .empty
        return ConsolePage(
            title: "\(place.container ?? "") \(place.scope.rawValue)",
            acting: place.who,
            body: """
                <h1><code>\(place.container ?? "")</code> · \(place.environment.rawValue)</h1>
                <p>Database: \(tabs)</p>
                <h2>Zones</h2>
                <table><thead><tr><th scope="col">Zone</th><th scope="col">Owner</th><th scope="col">Feed</th></tr></thead><tbody>\(rows)</tbody></table>
                \(publicForm)
                """
        )
    }

    private func zone(_ call: ConsoleCall) async throws -> ConsolePage {
        let engine = self.engine
        let place = try ConsolePlace(call, needsZone: true)
        let after = call.query.text("after")
        let type = call.query.text("type")
        guard let zoneID = place.zone else { throw ConsoleProblem("zone is required") }
        // A default zone (and the public database) has no change feed, as in CloudKit: its
        // records are found by type, as an app's query finds them.
        let byType = zoneID.isDefaultZone || place.scope == .public
        let (rows, next, owner) = try await thread.read { () -> ([HTML], String?, Bool) in
            let db = try place.database(engine: engine)
            let me = try ConsolePlace.account(place.who, engine: engine).userRecordID
            let records: [Record]
            var next: String?
            if byType {
                guard let type else { return ([], nil, false) }
                records = try db.records(matching: Query(recordType: type), inZoneWith: zoneID, desiredKeys: [], resultsLimit: WebConsole.pageSize)
                    .records
            } else {
                let changes = try db.recordZoneChanges(zoneID, since: after, resultsLimit: WebConsole.pageSize, desiredKeys: [])
                records = changes.modifications
                next = changes.moreComing ? changes.changeToken : nil
            }
            let rows = records.map { r -> HTML in
                let link = place.link(.record, [("record", r.recordID.recordName)])
                let shared: HTML = r.share != nil ? " <span class=\"badge\">shared</span>" : .empty
                return """
                    <tr><td><a href="\(link)">\(r.recordID.recordName)</a>\(shared)</td><td>\(r.recordType)</td>
                    <td>\(WebConsole.time(r.modificationDate))</td></tr>
                    """
            }
            return (rows, next, zoneID.ownerName == me && place.scope == .private)
        }
        let more: HTML = next.map { "<p><a href=\"\(place.link(.zone, [("after", $0)]))\">Next page</a></p>" } ?? .empty
        let shareZone: HTML =
            owner && !zoneID.isDefaultZone
            ? """
            <form method="post" action="\(ConsoleLink(.shareCreate))" class="row">\(call.csrfField)\(place.hiddenFields)
            <input type="hidden" name="zoneShare" value="1"><button type="submit" class="quiet">Share this zone</button></form>
            """ : .empty
        let typeForm: HTML =
            byType
            ? """
            <form method="get" action="\(ConsoleLink(.zone))" class="row">\(place.hiddenFields)
            <label>Record type<input name="type" required value="\(type ?? "")"></label><button type="submit">List</button></form>
            <p class="muted">This zone has no change feed (a default zone): its records are listed by type, the first \(WebConsole.pageSize).</p>
            """ : .empty
        let feed: HTML = byType ? .empty : " · <a href=\"\(place.link(.feed))\">live feed</a>"
        return ConsolePage(
            title: zoneID.zoneName,
            acting: place.who,
            body: """
                <h1>Zone <code>\(zoneID.zoneName)</code></h1>
                <p class="muted">Owner <code>\(zoneID.ownerName)</code> · <a href="\(place.link(.database, zone: false))">all zones</a>\(feed)</p>
                \(shareZone)\(typeForm)
                <table><thead><tr><th scope="col">Record</th><th scope="col">Type</th><th scope="col">Modified</th></tr></thead><tbody>\(rows)</tbody></table>
                \(rows.isEmpty ? "<p class=\"muted\">No records.</p>" : HTML.empty)
                \(more)
                """
        )
    }

    private func publicRecords(_ call: ConsoleCall) async throws -> ConsolePage {
        let engine = self.engine
        let place = try ConsolePlace(call).with(scope: .public)
        let type = try call.required("type")
        let (rows, more) = try await thread.read { () -> ([HTML], Bool) in
            let db = try place.database(engine: engine)
            let (records, cursor) = try db.records(matching: Query(recordType: type), desiredKeys: [], resultsLimit: WebConsole.pageSize)
            let rows = records.map { r -> HTML in
                let at = place.with(zone: r.recordID.zoneID)
                return """
                    <tr><td><a href="\(at.link(.record, [("record", r.recordID.recordName)]))">\(r.recordID.recordName)</a></td>
                    <td>\(WebConsole.time(r.modificationDate))</td></tr>
                    """
            }
            return (rows, cursor != nil)
        }
        return ConsolePage(
            title: "Public \(type)",
            acting: place.who,
            body: """
                <h1>Public records of type <code>\(type)</code></h1>
                <table><thead><tr><th scope="col">Record</th><th scope="col">Modified</th></tr></thead><tbody>\(rows)</tbody></table>
                \(more ? "<p class=\"muted\">The first \(WebConsole.pageSize) are shown.</p>" : HTML.empty)
                """
        )
    }

    private func record(_ call: ConsoleCall) async throws -> ConsolePage {
        let engine = self.engine
        let place = try ConsolePlace(call, needsZone: true)
        let name = try call.required("record")
        guard let zoneID = place.zone else { throw ConsoleProblem("zone is required") }
        let body = try await thread.read { () -> HTML in
            let db = try place.database(engine: engine)
            let me = try ConsolePlace.account(place.who, engine: engine).userRecordID
            let r = try db.fetchRecord(RecordID(recordName: name, zoneID: zoneID))
            let fields = r.fields.keys.sorted().map { key -> HTML in
                "<tr><th scope=\"row\"><code>\(key)</code></th><td>\(r.fields[key]?.typeName ?? "")</td><td>\(RecordView.value(r.fields[key]!, place: place))</td></tr>"
            }
            var meta: [HTML] = [
                "<tr><th scope=\"row\">Type</th><td>\(r.recordType)</td></tr>",
                "<tr><th scope=\"row\">Change tag</th><td><code>\(r.recordChangeTag ?? "")</code></td></tr>",
                "<tr><th scope=\"row\">Created</th><td>\(WebConsole.time(r.creationDate)) by <code>\(r.creatorUserRecordID?.recordName ?? "")</code></td></tr>",
                "<tr><th scope=\"row\">Modified</th><td>\(WebConsole.time(r.modificationDate)) by <code>\(r.lastModifiedUserRecordID?.recordName ?? "")</code></td></tr>",
            ]
            if let parent = r.parent {
                meta.append(
                    "<tr><th scope=\"row\">Parent</th><td><a href=\"\(place.link(.record, [("record", parent.recordName)]))\">\(parent.recordName)</a></td></tr>"
                )
            }
            if let share = r.share {
                meta.append(
                    "<tr><th scope=\"row\">Share</th><td><a href=\"\(place.link(.share, [("share", share.recordName)]))\">\(share.recordName)</a></td></tr>"
                )
            }
            if r is Share {
                meta.append(
                    "<tr><th scope=\"row\">Share</th><td><a href=\"\(place.link(.share, [("share", name)]))\">participants and settings</a></td></tr>"
                )
            }
            let canShare = r.share == nil && !(r is Share) && zoneID.ownerName == me && place.scope == .private && r.parent == nil
            let shareForm: HTML =
                canShare
                ? """
                <form method="post" action="\(ConsoleLink(.shareCreate))" class="row">\(call.csrfField)\(place.hiddenFields)
                <input type="hidden" name="record" value="\(name)">
                <label>Title<input name="title" placeholder="what invitees see"></label>
                <button type="submit">Share this record</button></form>
                """ : .empty
            return """
                <h1>Record <code>\(name)</code></h1>
                <p class="muted">Zone <a href="\(place.link(.zone))">\(zoneID.zoneName)</a> of <code>\(zoneID.ownerName)</code></p>
                \(shareForm)
                <h2>Fields</h2>
                <table><thead><tr><th scope="col">Key</th><th scope="col">Type</th><th scope="col">Value</th></tr></thead><tbody>\(fields)</tbody></table>
                <h2>Metadata</h2>
                <table><tbody>\(meta)</tbody></table>
                """
        }
        return ConsolePage(title: name, acting: place.who, body: body)
    }

    /// An account as a heading names it: its name and first address, or its ID.
    static func label(_ a: Account) -> String {
        let name = a.name.formatted
        let address = a.email ?? a.phones.first
        switch (name.isEmpty, address) {
        case (false, let address?): return "\(name) <\(address)>"
        case (false, nil): return name
        case (true, let address?): return address
        case (true, nil): return a.userRecordID
        }
    }

    /// A time as the console shows it (UTC, to the second).
    static func time(_ date: Date?) -> String {
        guard let date else { return "" }
        return ISO8601DateFormatter().string(from: date)
    }
}

/// A field's value on a page: typed, escaped, bounded; an asset by size and checksum only (its
/// download URL is a bearer capability), a reference as a link to the record.
enum RecordView {
    static func value(_ v: FieldValue, place: ConsolePlace, depth: Int = 0) -> HTML {
        switch v {
        case .string(let s): return "<span class=\"text\">\(HTML.cut(s))</span>"
        case .integer(let n): return "\(String(n))"
        case .double(let d): return "\(String(d))"
        case .boolean(let b): return "\(b ? "true" : "false")"
        case .bytes(let data):
            let head = data.prefix(32).map { String(format: "%02x", $0) }.joined()
            return "<code>\(String(data.count)) bytes: \(head)\(data.count > 32 ? "…" : "")</code>"
        case .date(let d): return "\(WebConsole.time(d))"
        case .location(let l): return "\(String(l.latitude)), \(String(l.longitude))"
        case .reference(let id, let action):
            let at = place.with(zone: id.zoneID)
            return
                "<a href=\"\(at.link(.record, [("record", id.recordName)]))\">\(id.recordName)</a> <span class=\"muted\">(\(action.rawValue))</span>"
        case .list(let items):
            guard depth < 2 else { return "<span class=\"muted\">list of \(items.count)</span>" }
            let shown = items.prefix(50).map { "<li>\(RecordView.value($0, place: place, depth: depth + 1))</li>" as HTML }
            return "<ol>\(shown)</ol>\(items.count > 50 ? "<p class=\"muted\">and \(items.count - 50) more</p>" : HTML.empty)"
        case .encrypted(let inner): return "<span class=\"badge\">encrypted</span> \(RecordView.value(inner, place: place, depth: depth + 1))"
        case .asset(let a):
            let size = a.size.map { "\($0) bytes" } ?? "not uploaded"
            return "<span class=\"muted\">asset, \(size)\(a.checksum.map { ", checksum \($0)" } ?? "")</span>"
        }
    }
}
