import ShareFlow
import ShareFlowServer

/// The accounts and tokens the in-process server tests share: Alice (discoverable, named
/// Alice A), Bob (named Bob, not discoverable), an API token of iCloud.test's development
/// environment and an hour's web auth token for each.
struct ServerTestAccounts {
    let api: String
    let alice: String
    let bob: String

    init(engine: Engine) throws {
        let a = try engine.accounts.create(
            emails: ["alice@example.com"],
            name: NameComponents(givenName: "Alice", familyName: "A"),
            discoverable: true
        )
        let b = try engine.accounts.create(emails: ["bob@example.com"], name: NameComponents(givenName: "Bob"))
        api = try Credentials.newAPIToken(container: "iCloud.test", engine: engine)
        alice = try Credentials.newWebAuthToken(container: "iCloud.test", account: a, ttl: 3600, engine: engine)
        bob = try Credentials.newWebAuthToken(container: "iCloud.test", account: b, ttl: 3600, engine: engine)
    }
}
