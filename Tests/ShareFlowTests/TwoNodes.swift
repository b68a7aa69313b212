import Foundation
import ShareFlowEngineTestKit

@testable import ShareFlow
@testable import ShareFlowPostgres

/// Two nodes (engines, as two servers would hold) on one scratch PostgreSQL database made
/// from `template`, for the tests of writes that meet across nodes.
struct TwoNodes {
    let a: Engine
    let b: Engine
    private let url: String

    init(template: String, postgres settings: PostgresSettings = PostgresSettings()) throws {
        let url = try PostgresStore.makeScratch(template: template)
        do {
            a = Engine(store: try Store.open(url, postgres: settings))
            b = Engine(store: try Store.open(url, postgres: settings))
        } catch {
            PostgresStore.dropScratch(url)
            throw error
        }
        self.url = url
    }

    /// Alice's account, made through node A, and her private database (container iCloud.t)
    /// through each node.
    func alice() throws -> (onA: CloudDatabase, onB: CloudDatabase) {
        _ = try a.accounts.create(emails: ["alice@example.com"])
        let container = { (node: Engine) in try node.session(for: "alice@example.com").container("iCloud.t") }
        return (try container(a).privateCloudDatabase, try container(b).privateCloudDatabase)
    }

    /// Takes node A's policies named `policyPrefix` off first (when given), so none runs
    /// on a closing store; then closes both nodes and drops the database.
    func close(removingPoliciesNamed policyPrefix: String? = nil) {
        if let policyPrefix { a.policies.removeAll(namePrefix: policyPrefix) }
        a.store.close()
        b.store.close()
        PostgresStore.dropScratch(url)
    }
}
