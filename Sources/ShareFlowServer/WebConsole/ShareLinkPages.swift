import Foundation
import Hummingbird
import ShareFlow

/// C2: a share link as the acted-as account meets it (R16: what the metadata says to them),
/// with Accept and Request access; and the shares the account is invited to, found by the
/// operator's audit (O8) and each opened as the account.
extension WebConsole {
    func registerShareLinks(on router: Router<ServerRequestContext>) {
        page(.link, on: router) { call in try await linkPage(call) }
        let back: @Sendable (ConsoleCall) -> ConsoleLink = { call in
            guard let place = try? ConsolePlace(call, needsContainer: false) else { return ConsoleLink(.accounts) }
            return place.link(.link, zone: false, [("url", call.value("url") ?? "")])
        }
        action(.linkAccept, on: router, back: back) { call in
            let place = try ConsolePlace(call)
            let url = try self.shareURL(call)
            let engine = self.engine
            try await thread.run {
                let container = try place.container(engine: engine)
                let (fetched, error) = container.fetchShareMetadataResults([url])
                if let error, fetched.isEmpty { throw error }
                let metadata = try fetched[0].1.get()
                let (accepted, failure) = container.acceptShareResults([metadata])
                if let failure, accepted.isEmpty { throw failure }
                _ = try accepted[0].1.get()
            }
            return ActionOutcome("Accepted: the share's zone is now in the shared database.")
        }
        action(.linkRequest, on: router, back: back) { call in
            let place = try ConsolePlace(call)
            let url = try self.shareURL(call)
            let engine = self.engine
            try await thread.run {
                let container = try place.container(engine: engine)
                let (results, error) = container.requestShareAccessResults([url])
                if let error, results.isEmpty { throw error }
                try results[0].1.get()
            }
            return ActionOutcome("Access requested: the owner sees the request on the share.")
        }
    }

    /// The form's `url`: a share URL, or a short GUID made one.
    private func shareURL(_ call: ConsoleCall) throws -> String {
        let text = try call.required("url").trimmingCharacters(in: .whitespaces)
        return text.contains("/") ? text : engine.shareURL(token: text)
    }

    private func linkPage(_ call: ConsoleCall) async throws -> ConsolePage {
        guard let who = call.text("as") else {
            return ConsolePage(
                title: "Share links",
                body: """
                    <h1>Open a share link</h1>
                    <p>Choose whom to open it as:</p>
                    <form method="get" action="\(ConsoleLink(.link))" class="row">
                    <label>Account (email, phone or userRecordID)<input name="as" required></label><button type="submit">Continue</button></form>
                    """
            )
        }
        let place = try ConsolePlace(call, needsContainer: false)
        let engine = self.engine
        let url = call.text("url").map { $0.contains("/") ? $0 : engine.shareURL(token: $0) }
        let body = try await thread.read { () -> HTML in
            let account = try ConsolePlace.account(who, engine: engine)
            var metadata = HTML.empty
            if let url, place.container != nil {
                let container = try place.container(engine: engine)
                let (results, error) = container.fetchShareMetadataResults([url])
                let fields: HTML = "\(call.csrfField)\(place.hiddenFields)<input type=\"hidden\" name=\"url\" value=\"\(url)\">"
                let outcome: Result<ShareMetadata, ShareFlowError> = results.first?.1 ?? .failure(error ?? ShareFlowError(.unknownItem, "no answer"))
                switch outcome {
                case .failure(let e):
                    // R16: to someone not on a private share, the link names nothing; they may
                    // still ask to join when the owner allows requests (R39).
                    let (_, words) = ConsoleLayout.describe(e)
                    metadata = """
                        <h2>As \(WebConsole.label(account)) sees it</h2>
                        <p>\(words)</p>
                        <form method="post" action="\(ConsoleLink(.linkRequest))" class="inline">\(fields)<button type="submit" class="quiet">Request access</button></form>
                        """
                case .success(let m):
                    metadata = """
                        <h2>As \(WebConsole.label(account)) sees it</h2>
                        <table><tbody>
                        <tr><th scope="row">Title</th><td>\(m.share.title ?? "")</td></tr>
                        <tr><th scope="row">Owner</th><td>\(WebConsole.who(m.ownerIdentity))</td></tr>
                        <tr><th scope="row">Your role</th><td>\(m.participantRole.rawValue)</td></tr>
                        <tr><th scope="row">Your status</th><td>\(m.participantStatus.rawValue)</td></tr>
                        <tr><th scope="row">Your permission</th><td>\(m.participantPermission.rawValue)</td></tr>
                        </tbody></table>
                        <form method="post" action="\(ConsoleLink(.linkAccept))" class="inline">\(fields)<button type="submit">Accept</button></form>
                        \(m.share.allowsAccessRequests ? "<form method=\"post\" action=\"\(ConsoleLink(.linkRequest))\" class=\"inline\">\(fields)<button type=\"submit\" class=\"quiet\">Request access</button></form>" as HTML : HTML.empty)
                        """
                }
            }
            // The shares the account is on: not those it was removed from (R16: to it, their
            // links name nothing), which the operator's audit lists too.
            let on = try engine.auditShares(participant: account.userRecordID).filter { s in
                let mine = s.participants.filter { $0.userRecordID == account.userRecordID }
                return mine.isEmpty || mine.contains { $0.acceptanceStatus != .removed }
            }
            let invitations = on.prefix(100).map { s -> HTML in
                let me = s.participants.first { $0.userRecordID == account.userRecordID && $0.acceptanceStatus != .removed }
                let link = ConsoleLink(
                    .link,
                    ["as": account.userRecordID, "container": s.containerIdentifier, "environment": s.environment.rawValue, "url": s.url]
                )
                return """
                    <tr><td>\(s.title ?? "")</td><td><code>\(s.containerIdentifier)</code> \(s.environment.rawValue)</td>
                    <td>\(me?.acceptanceStatus.rawValue ?? "")</td><td><a href="\(link)">Open as this account</a></td></tr>
                    """
            }
            return """
                <h1>Share links</h1>
                <form method="get" action="\(ConsoleLink(.link))" class="row">
                <input type="hidden" name="as" value="\(account.userRecordID)">
                <label>Container<input name="container" required value="\(place.container ?? "")"></label>
                <label>Environment<select name="environment"><option\(place.environment == .development ? " selected" : "")>development</option><option\(place.environment == .production ? " selected" : "")>production</option></select></label>
                <label>Share URL or short GUID<input name="url" required value="\(url ?? "")"></label>
                <button type="submit">Open</button></form>
                \(metadata)
                <h2>Shares this account is on</h2>
                <p class="muted">The operator's view (an audit, O8): each opens as the account sees it.</p>
                <table><thead><tr><th scope="col">Title</th><th scope="col">Container</th><th scope="col">Status</th><th scope="col">Open</th></tr></thead>
                <tbody>\(invitations)</tbody></table>
                """
        }
        return ConsolePage(title: "Share links", acting: who, body: body)
    }
}
