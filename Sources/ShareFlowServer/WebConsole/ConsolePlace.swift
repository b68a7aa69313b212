import Foundation
import ShareFlow

/// Where a console page looks, from its query: as whom (`as`: a userRecordID or an address),
/// in which container, environment and database, and in which zone. Every page reads through
/// the engine as that account (`database(engine:)`), so what it shows is what the account's
/// own app would get (R12, R15, R37).
struct ConsolePlace: Sendable {
    let who: String
    var container: String?
    var environment: CloudEnvironment = .development
    var scope: DatabaseScope = .private
    var zone: RecordZoneID?

    /// The place a request names; a 400 naming the parameter when one is malformed.
    init(_ call: ConsoleCall, needsContainer: Bool = true, needsZone: Bool = false) throws {
        who = try call.required("as")
        container = call.value("container").flatMap { $0.isEmpty ? nil : $0 }
        if needsContainer, container == nil { throw ConsoleProblem("container is required") }
        if let e = call.value("environment"), !e.isEmpty {
            guard let env = CloudEnvironment(rawValue: e) else { throw ConsoleProblem("environment must be development or production") }
            environment = env
        }
        if let d = call.value("database"), !d.isEmpty {
            guard let s = DatabaseScope(rawValue: d) else { throw ConsoleProblem("database must be private, shared or public") }
            scope = s
        }
        if let name = call.value("zone"), !name.isEmpty {
            zone = RecordZoneID(zoneName: name, ownerName: try call.required("owner"))
        } else if needsZone {
            throw ConsoleProblem("zone is required")
        }
    }

    /// The account `who` names: a userRecordID, an email address or a phone number.
    static func account(_ who: String, engine: Engine) throws -> Account {
        if who.hasPrefix("_"), let a = try? engine.accounts.get(userRecordID: who) { return a }
        if let a = try engine.accounts.find(who) { return a }
        throw ConsoleProblem("no account is \(Naming.printable(String(who.prefix(200))))")
    }

    /// The container, as the account (on the engine's thread).
    func container(engine: Engine) throws -> Container {
        let account = try ConsolePlace.account(who, engine: engine)
        return try engine.session(for: account).container(container ?? "", environment: environment)
    }

    /// The database, as the account (on the engine's thread).
    func database(engine: Engine) throws -> CloudDatabase {
        try container(engine: engine).database(scope)
    }

    /// The query naming this place, with `extra` after it.
    func query(zone withZone: Bool = true, _ extra: [(String, String)] = []) -> [(String, String)] {
        var q: [(String, String)] = [("as", who)]
        if let container {
            q += [("container", container), ("environment", environment.rawValue), ("database", scope.rawValue)]
        }
        if withZone, let zone { q += [("zone", zone.zoneName), ("owner", zone.ownerName)] }
        return q + extra
    }

    /// The same place in another database.
    func with(scope: DatabaseScope) -> ConsolePlace {
        var p = self
        p.scope = scope
        p.zone = nil
        return p
    }

    /// The same place in a zone.
    func with(zone: RecordZoneID) -> ConsolePlace {
        var p = self
        p.zone = zone
        return p
    }

    /// The link to `path` at this place.
    func link(_ path: ConsoleLink.Path, zone withZone: Bool = true, _ extra: [(String, String)] = []) -> ConsoleLink {
        ConsoleLink(path, pairs: query(zone: withZone, extra))
    }

    /// The place as hidden form fields (a form posts back where it was made).
    var hiddenFields: HTML {
        HTML.joined(query().map { pair -> HTML in "<input type=\"hidden\" name=\"\(pair.0)\" value=\"\(pair.1)\">" })
    }
}
