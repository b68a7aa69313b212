import Foundation
import HTTPTypes
import Hummingbird
import ShareFlow

/// A page of the console before its frame: its title, who it acts as, its content.
struct ConsolePage: Sendable {
    let title: String
    /// The account the page shows the world as (the banner names it).
    var acting: String?
    let body: HTML
}

/// The frame every console page is drawn in: the navigation, the "acting as" banner, the last
/// action's message, sign-out; and the pages for errors and refusals.
enum ConsoleLayout {
    /// A whole document around `body`.
    static func document(title: String, body: HTML, nav: HTML = .empty) -> HTML {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(title) · ShareFlow console</title>
        <link rel="stylesheet" href="\(ConsoleLink(.stylesheet))">
        <script src="\(ConsoleLink(.script))" defer></script>
        </head><body>
        \(nav)<main id="main">
        \(body)
        </main></body></html>
        """
    }

    /// A page in the frame of a signed-in session.
    static func render(_ page: ConsolePage, call: ConsoleCall, flash: ConsoleSessions.Flash?) -> HTML {
        let banner: HTML = page.acting.map { "<p class=\"acting\">Acting as <strong>\($0)</strong></p>" } ?? .empty
        return document(title: page.title, body: "\(banner)\(flashHTML(flash))\(page.body)", nav: nav(call))
    }

    static func nav(_ call: ConsoleCall) -> HTML {
        """
        <header><nav aria-label="Console"><a class="brand" href="\(ConsoleLink(.accounts))">ShareFlow console</a>
        <a href="\(ConsoleLink(.accounts))">Accounts</a>
        <a href="\(ConsoleLink(.link))">Share links</a>
        <a href="\(ConsoleLink(.decisions))">Decisions</a>
        <a href="\(ConsoleLink(.faults))">Faults</a>
        <form method="post" action="\(ConsoleLink(.signOut))" class="inline">\(call.csrfField)<button type="submit">Sign out</button></form>
        </nav></header>
        """
    }

    static func flashHTML(_ flash: ConsoleSessions.Flash?) -> HTML {
        guard let flash else { return .empty }
        var denial = HTML.empty
        if let d = flash.denial {
            denial = """
                <dl class="denial"><dt>Policy</dt><dd>\(Naming.printable(d.policy))</dd>
                <dt>Reason</dt><dd>\(Naming.printable(d.reason))</dd>
                <dt>Where</dt><dd><code>\(Naming.printable(d.location))</code></dd>
                <dt>Decision</dt><dd><a href="\(ConsoleLink(.decisions, ["point": d.point, "denied": "1"]))">#\(d.decision) at \(d.point)</a></dd></dl>
                """
        }
        return """
            <div class="flash \(flash.ok ? "good" : "bad")" role="\(flash.ok ? "status" : "alert")"><p>\(flash.text)</p>\(denial)</div>
            """
    }

    /// The status and words an error is shown with: a request's problem as it is, the engine's
    /// refusal by its code and client words, anything else by incident only.
    static func describe(_ error: any Error) -> (HTTPResponse.Status, String) {
        switch error {
        case let p as ConsoleProblem: return (.badRequest, p.message)
        case is CancellationError: return (.serviceUnavailable, "the server is stopping")
        default:
            let e = CloudKitError.from(error)
            let code = e.body["serverErrorCode"] as? String ?? "ERROR"
            return (e.status, "\(code): \(e.reason)")
        }
    }

    /// An error page inside the frame (the session is open).
    static func errorPage(status: HTTPResponse.Status, _ message: String, csrf: String) -> Response {
        let body: HTML = """
            <h1>\(String(status.code)) \(status.reasonPhrase)</h1>
            <p class="flash bad" role="alert">\(message)</p>
            <p><a href="\(ConsoleLink(.accounts))">Back to the accounts</a></p>
            """
        return PageHeaders.page(document(title: "Error", body: body), status: status)
    }

    /// A refused POST (no session, a forgery, a bad form): 403, nothing changed.
    static func refused(_ why: String) -> Response {
        let body: HTML = """
            <h1>Refused</h1>
            <p class="flash bad" role="alert">Nothing was changed: \(why).</p>
            <p><a href="\(ConsoleLink(.home))">Open the console</a></p>
            """
        return PageHeaders.page(document(title: "Refused", body: body), status: .forbidden)
    }
}
