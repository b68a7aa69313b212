import Foundation
import ShareFlowTestKit
import XCTest

@testable import ShareFlow
@testable import ShareFlowLua

/// An engine error whose message is the operator's (it names the store: a PostgreSQL user,
/// host and database, or a file's path) reaches a sandboxed state as a client would read it,
/// whichever way it crosses (an error value returned, one raised, any Swift error a binding
/// throws): a plugin cannot hand it on to a client as a policy's reason. And a store outage a
/// policy meets fails the request as that outage (retried), not as a denial (final).
final class WithheldErrorTests: XCTestCase {
    private let detail = "store postgres://app@db.internal:5432/shareflow is busy: another writer holds the whole store"

    private func outage() -> ShareFlowError {
        ShareFlowError(.serviceUnavailable, detail, retryAfter: 1).forOperator()
    }

    /// `raw()` throws the outage out of a binding; `asData()` returns it as `nil, err`.
    private func host(engine: Engine, sandboxed: Bool) throws -> ScriptHost {
        let folder = try makeTemporaryFolder("sf-withheld")
        let host = sandboxed ? try ScriptHost(engine: engine, labelPrefix: "p/", sandboxFolder: folder.path) : try ScriptHost(engine: engine)
        let error = outage()
        host.lua.push(function: "raw") { _ in throw error }
        host.lua.setGlobal("raw")
        let bindings = host.bindings!
        host.lua.push(function: "asData") { _ in try bindings.pushResult { throw error } }
        host.lua.setGlobal("asData")
        return host
    }

    func testAPluginReadsAnOperatorOnlyErrorWithoutItsDetail() throws {
        let engine = Engine(store: try Store(path: ":memory:"))
        engine.logger.logLevel = .critical
        let code = """
            local _, raised = pcall(raw)
            local _, data = asData()
            return tostring(raised), tostring(data), data.message, data.code, data.retryAfter
            """
        let plugin = try host(engine: engine, sandboxed: true).run(code)
        for i in 0..<3 {
            let text = plugin[i].stringValue ?? ""
            XCTAssertFalse(text.contains("db.internal") || text.contains("postgres://"), "a plugin read the store's address: \(text)")
            XCTAssertTrue(text.contains("the service is unavailable; try again later (incident "), text)
        }
        XCTAssertEqual(plugin[3].stringValue, "serviceUnavailable")
        XCTAssertEqual(plugin[4], .number(1))
        // The operator's own scripts read it whole.
        let trusted = try host(engine: engine, sandboxed: false).run(code)
        XCTAssertTrue(trusted[0].stringValue?.contains("db.internal") == true, "\(trusted[0])")
        XCTAssertTrue(trusted[2].stringValue?.contains("db.internal") == true, "\(trusted[2])")
    }

    /// Owner shares a record with Bob, with `policy` as a plugin's share.accept policy; Bob
    /// accepts. Returns his accept's error: code, retryAfter, message.
    private func acceptUnder(policy: String) throws -> [LuaValue] {
        let engine = Engine(store: try Store(path: ":memory:"))
        engine.logger.logLevel = .critical
        let trusted = try ScriptHost(engine: engine)
        try trusted.run(
            """
            local sf = require("shareflow")
            sf.accounts.create{ email = "owner@example.com" }
            sf.accounts.create{ email = "bob@example.com" }
            """
        )
        let plugin = try host(engine: engine, sandboxed: true)
        try plugin.run("require('shareflow').policy('share.accept', function() \(policy) end)")
        return try trusted.run(
            """
            local sf = require("shareflow")
            local c = sf.as("owner@example.com"):container("iCloud.p")
            local zone = c.privateCloudDatabase:saveZone("Z")
            local r = sf.Record{ recordType = "Doc", recordName = "d", zone = zone }
            local s = sf.Share{ rootRecord = r }
            s:addParticipant(c:fetchShareParticipants{ "bob@example.com" }[1])
            assert(not select(2, c.privateCloudDatabase:modifyRecords{ save = { r, s } }))
            local bc = sf.as("bob@example.com"):container("iCloud.p")
            local shares, err = bc:acceptShares{ bc:fetchShareMetadata{ s.url }[s.url] }
            assert(not shares[1], "accepted")
            local e = select(2, next(err.partialErrors))
            return e.code, e.retryAfter, e.message
            """
        )
    }

    /// A policy that meets the outage — raises it, or catches it and fails otherwise, or
    /// raises the error value it was handed — leaves the accept failing as the outage would:
    /// serviceUnavailable, retryable, not permissionFailure.
    func testAPolicyThatMeetsAnOutageFailsTheRequestAsThatOutage() throws {
        for body in ["raw()", "pcall(raw) error('gave up')", "local _, e = asData() error(e)"] {
            let result = try acceptUnder(policy: body)
            XCTAssertEqual(result[0].stringValue, "serviceUnavailable", "policy body \(body): \(result)")
            XCTAssertEqual(result[1], .number(1), "policy body \(body)")
        }
    }

    /// A policy that only quotes the outage in its denial denies (it decided), without the
    /// store's address.
    func testADenialQuotingAnOutageNamesNoStore() throws {
        let result = try acceptUnder(policy: "local _, e = asData() return false, 'cannot check: ' .. tostring(e)")
        XCTAssertEqual(result[0].stringValue, "permissionFailure")
        let message = result[2].stringValue ?? ""
        XCTAssertFalse(message.contains("db.internal"), message)
        XCTAssertTrue(message.contains("cannot check: serviceUnavailable"), message)
    }

    /// An authenticator that meets the outage (raised through, or caught and then failing)
    /// fails as that outage: a 503 the client retries, not a 401 that drops its sign-in (the
    /// third attack).
    func testAnAuthenticatorThatMeetsAnOutageFailsAsThatOutage() throws {
        for body in ["raw()", "pcall(raw) error('gave up')"] {
            let engine = Engine(store: try Store(path: ":memory:"))
            engine.logger.logLevel = .critical
            let plugin = try host(engine: engine, sandboxed: true)
            try plugin.run("require('shareflow').authenticate(function(r) \(body) end)")
            let request = AuthenticationRequest(
                method: "GET",
                path: "/database/1/iCloud.p/development/private/users/caller",
                container: "iCloud.p",
                environment: "development",
                database: "private",
                headers: ["x-user": "bob@example.com"],
                query: [:]
            )
            XCTAssertThrowsError(try engine.authenticators.authenticate(request)) { error in
                let e = error as? ShareFlowError
                XCTAssertEqual(e?.code, .serviceUnavailable, "authenticator body \(body): \(error)")
                XCTAssertTrue(e?.isOutage == true, "authenticator body \(body): \(error)")
            }
            withExtendedLifetime(plugin) {}
        }
    }

    /// A policy whose request's share cannot be read (the store went away during the decision)
    /// and that denies when there is none fails as the outage, not as its denial: the read
    /// raises in Lua rather than give nil (the third attack).
    func testAPolicyWhoseRequestCannotBeReadFailsAsThatOutage() throws {
        let engine = Engine(store: try Store(path: ":memory:"))
        engine.logger.logLevel = .critical
        let plugin = try host(engine: engine, sandboxed: true)
        try plugin.run("require('shareflow').policy('share.accept', function(req) if not req.share then return false, 'no share' end end)")
        let error = outage()
        let objects = PolicyRequest.Objects(share: { throw error }, participant: { nil }, metadata: nil)
        let request = PolicyRequest(point: .shareAccept, caller: nil, container: "iCloud.p", objects: objects)
        XCTAssertThrowsError(try engine.policies.check(request, item: "share at x")) { error in
            XCTAssertEqual((error as? ShareFlowError)?.code, .serviceUnavailable, "\(error)")
        }
    }
}
