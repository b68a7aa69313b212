import Crypto
import Foundation
import ShareFlowTestKit
import XCTest

/// Who a request to `shareflow serve` acts as, and what it may do (SPEC §13): server-to-server
/// keys, a plugin's authenticator, policies on the wire, discovery, R16's potential matches,
/// and bodies too big or malformed.
final class ServeAuthTests: ServerTestCase {
    private func iso8601(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        return f.string(from: date)
    }

    /// A request signed as Apple's server-to-server keys sign: ECDSA P-256 over
    /// `date:base64(sha256(body)):subpath`, DER, base64.
    private func signed(
        _ key: P256.Signing.PrivateKey,
        keyID: String,
        subpath: String,
        body: String,
        date: Date = Date(),
        query: String = ""
    ) throws -> (Int, [String: Any]) {
        let path = db + "/" + subpath
        let stamp = iso8601(date)
        let hash = Data(SHA256.hash(data: Data(body.utf8))).base64EncodedString()
        let signature = try key.signature(for: Data("\(stamp):\(hash):\(path)".utf8)).derRepresentation.base64EncodedString()
        return try call(
            "POST",
            path,
            query: query,
            body: body,
            headers: [
                "X-Apple-CloudKit-Request-KeyID: \(keyID)", "X-Apple-CloudKit-Request-ISO8601Date: \(stamp)",
                "X-Apple-CloudKit-Request-SignatureV1: \(signature)",
            ]
        )
    }

    /// Alice's zone Z, her record doc in it (with a short GUID of its own when asked) and a
    /// share of it with `email`, read-only, made over HTTP; the share's short GUID.
    private func shareDoc(with email: String, createShortGUID: Bool = false) throws -> String {
        _ = try call("POST", db + "/private/zones/modify", body: #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Z"}}}]}"#)
        let r = try call(
            "POST",
            db + "/private/records/modify",
            body: """
                {"zoneID":{"zoneName":"Z"},"operations":[
                 {"operationType":"create","record":{"recordName":"doc","recordType":"Doc",\(createShortGUID ? #""createShortGUID":true,"# : "")"fields":{}}},
                 {"operationType":"create","record":{"recordName":"share","recordType":"cloudkit.share","forRecord":{"recordName":"doc"},
                  "participants":[{"type":"USER","permission":"READ_ONLY","userIdentity":{"lookupInfo":{"emailAddress":"\(email)"}}}]}}]}
                """
        )
        return try XCTUnwrap((r.1["records"] as? [[String: Any]])?.last?["shortGUID"] as? String, "\(r.1)")
    }

    func testServerToServerKeysSignRequestsToThePublicDatabase() throws {
        let key = P256.Signing.PrivateKey()
        let pem = dir.appendingPathComponent("key.pub.pem")
        try CLI.write(key.publicKey.pemRepresentation, to: pem)
        let added = try CLI.run(["keys", "add", "--store", store, "--container", "iCloud.test", "--public-key", pem.path])
        XCTAssertEqual(added.status, 0, added.stderr)
        let keyID = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertNotNil(keyID.range(of: "^[0-9a-f]{64}$", options: .regularExpression), keyID)
        // A private key is refused, naming the file and what to give instead.
        let secret = dir.appendingPathComponent("key.pem")
        try CLI.write(key.pemRepresentation, to: secret)
        let refused = try CLI.run(["keys", "add", "--store", store, "--container", "iCloud.test", "--public-key", secret.path])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("key.pem: is a private key"), refused.stderr)

        let body =
            #"{"operations":[{"operationType":"create","record":{"recordName":"notice","recordType":"Notice","fields":{"text":{"value":"hello"}}}}]}"#
        var r = try signed(key, keyID: keyID, subpath: "public/records/modify", body: body)
        XCTAssertEqual(r.0, 200, "\(r.1)")
        XCTAssertEqual((r.1["records"] as? [[String: Any]])?.first?["recordName"] as? String, "notice", "\(r.1)")
        r = try signed(key, keyID: keyID, subpath: "public/records/lookup", body: #"{"records":[{"recordName":"notice"}]}"#)
        XCTAssertEqual(
            (((r.1["records"] as? [[String: Any]])?.first?["fields"] as? [String: Any])?["text"] as? [String: Any])?["value"] as? String,
            "hello",
            "\(r.1)"
        )

        // Every way a signature fails is 401, naming the cause.
        func refusedBecause(_ r: (Int, [String: Any]), _ words: String, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertEqual(r.0, 401, "\(r.1)", file: file, line: line)
            XCTAssertEqual(r.1["serverErrorCode"] as? String, "AUTHENTICATION_FAILED", file: file, line: line)
            XCTAssertTrue((r.1["reason"] as? String)?.contains(words) ?? false, "\(r.1)", file: file, line: line)
        }
        let path = db + "/public/records/lookup"
        let lookup = #"{"records":[{"recordName":"notice"}]}"#
        let stamp = iso8601(Date())
        let hash = Data(SHA256.hash(data: Data(lookup.utf8))).base64EncodedString()
        let good = try key.signature(for: Data("\(stamp):\(hash):\(path)".utf8)).derRepresentation.base64EncodedString()
        refusedBecause(
            try call(
                "POST",
                path,
                query: "",
                body: lookup + " ",
                headers: [
                    "X-Apple-CloudKit-Request-KeyID: \(keyID)", "X-Apple-CloudKit-Request-ISO8601Date: \(stamp)",
                    "X-Apple-CloudKit-Request-SignatureV1: \(good)",
                ]
            ),
            "SignatureV1"
        )
        refusedBecause(
            try signed(key, keyID: keyID, subpath: "public/records/lookup", body: lookup, date: Date().addingTimeInterval(-900)),
            "more than 10 minutes"
        )
        refusedBecause(try signed(P256.Signing.PrivateKey(), keyID: keyID, subpath: "public/records/lookup", body: lookup), "SignatureV1")
        refusedBecause(
            try signed(key, keyID: String(repeating: "0", count: 64), subpath: "public/records/lookup", body: lookup),
            "not a key registered"
        )
        refusedBecause(try signed(key, keyID: keyID, subpath: "private/records/lookup", body: lookup), "public database")
        refusedBecause(try signed(key, keyID: keyID, subpath: "public/users/caller", body: ""), "users/current only")
        refusedBecause(
            try signed(key, keyID: keyID, subpath: "public/records/lookup", body: lookup, query: "ckAPIToken=\(api)"),
            "carries no ckAPIToken"
        )
        // A signature is accepted once: the same signed request sent again is a replay, in
        // whatever case its key ID is written.
        let replayed = try key.signature(for: Data("\(stamp):\(hash):\(path)".utf8)).derRepresentation.base64EncodedString()
        // Its twin (r, n − s) verifies as well and is the same signature.
        let raw = try P256.Signing.ECDSASignature(derRepresentation: Data(base64Encoded: replayed)!).rawRepresentation
        let order: [UInt8] = [
            0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
        ]
        var twinS = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for i in stride(from: 31, through: 0, by: -1) {
            var d = Int(order[i]) - Int(raw[raw.startIndex + 32 + i]) - borrow
            borrow = d < 0 ? 1 : 0
            if d < 0 { d += 256 }
            twinS[i] = UInt8(d)
        }
        let twin = try P256.Signing.ECDSASignature(rawRepresentation: Data(raw.prefix(32)) + twinS).derRepresentation.base64EncodedString()
        for (n, (id, signature)) in [(keyID, replayed), (keyID, replayed), (keyID.uppercased(), replayed), (keyID, twin)].enumerated() {
            let r = try call(
                "POST",
                path,
                query: "",
                body: lookup,
                headers: [
                    "X-Apple-CloudKit-Request-KeyID: \(id)", "X-Apple-CloudKit-Request-ISO8601Date: \(stamp)",
                    "X-Apple-CloudKit-Request-SignatureV1: \(signature)",
                ]
            )
            if n == 0 { XCTAssertEqual(r.0, 200, "\(r.1)") } else { refusedBecause(r, "already used") }
        }
    }

    /// CloudKit JS's server-to-server `setUpAuth` (and Apple's Node sample) starts with
    /// `users/current`: a GET with no body and the library's own parameters, signed over the
    /// path with those parameters and the hash of the empty body, sent as `text/plain`. The key
    /// is its account (SPEC §13 wave 4, issue 42 point 3); `users/caller` stays refused, as
    /// Apple refuses it.
    func testCloudKitJSsServerToServerSetUpAuthAsksUsersCurrent() throws {
        let key = P256.Signing.PrivateKey()
        let pem = dir.appendingPathComponent("key.pub.pem")
        try CLI.write(key.publicKey.pemRepresentation, to: pem)
        let added = try CLI.run(["keys", "add", "--store", store, "--container", "iCloud.test", "--public-key", pem.path, "--as", "bob@example.com"])
        XCTAssertEqual(added.status, 0, added.stderr)
        let keyID = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        func ask(_ route: String) throws -> (Int, [String: Any]) {
            let query = "ckjsBuildVersion=16CProjectDev42&ckjsVersion=1.2.0"
            let path = db + "/public/" + route
            // As the library dates it: ISO 8601 without milliseconds.
            let stamp = iso8601(Date())
            let emptyHash = Data(SHA256.hash(data: Data())).base64EncodedString()
            let signature = try key.signature(for: Data("\(stamp):\(emptyHash):\(path)?\(query)".utf8)).derRepresentation.base64EncodedString()
            return try call(
                "GET",
                path,
                query: query,
                headers: [
                    "content-type: text/plain", "X-Apple-CloudKit-Request-ISO8601Date: \(stamp)",
                    "X-Apple-CloudKit-Request-KeyID: \(keyID)", "X-Apple-CloudKit-Request-SignatureV1: \(signature)",
                ]
            )
        }
        var r = try ask("users/current")
        XCTAssertEqual(r.0, 200, "\(r.1)")
        XCTAssertEqual(r.1["firstName"] as? String, nil, "bob has no name: \(r.1)")
        let bob = try call("GET", db + "/public/users/caller", query: "ckAPIToken=\(api)&ckWebAuthToken=\(try token("bob@example.com"))")
        let bobsName = ((bob.1["users"] as? [[String: Any]])?.first?["userRecordName"] as? String)
        XCTAssertNotNil(bobsName)
        XCTAssertEqual(r.1["userRecordName"] as? String, bobsName, "the key acts as its account")
        r = try ask("users/caller")
        XCTAssertEqual(r.0, 401, "\(r.1)")
        XCTAssertTrue((r.1["reason"] as? String ?? "").contains("users/current only"), "\(r.1)")
    }

    /// The shipped proxy-auth plugin maps a proxy's header to an account; a wrong secret is
    /// refused naming the authenticator; a policy's denial is ACCESS_DENIED naming the policy.
    func testAPluginAuthenticatesAndAPolicyDenialNamesThePolicy() throws {
        stopServer()
        let config = dir.appendingPathComponent("config.lua")
        try CLI.write(
            """
            return { plugins = {
              ["proxy-auth"] = { secret = "open-sesame" },
              ["domain-allowlist"] = { domains = { "example.org" } },
            } }
            """,
            to: config
        )
        try startServer(["--plugins", CLI.root.appendingPathComponent("Plugins").path, "--config", config.path])
        let viaProxy = ["X-Auth-Request-Email: bob@example.com", "X-Proxy-Secret: open-sesame"]
        var r = try call("GET", db + "/public/users/caller", query: "ckAPIToken=\(api)", headers: viaProxy)
        XCTAssertEqual(r.0, 200, "\(r.1)")
        XCTAssertEqual(((r.1["users"] as? [[String: Any]])?.first?["lookupInfo"] as? [String: String])?["emailAddress"], "bob@example.com")
        /// The caller asked for through the proxy as `email` with `secret`: a 401 saying `reason`.
        func assertProxyRefuses(_ email: String, secret: String, _ reason: String, line: UInt = #line) throws {
            let r = try call(
                "GET",
                db + "/public/users/caller",
                query: "ckAPIToken=\(api)",
                headers: ["X-Auth-Request-Email: \(email)", "X-Proxy-Secret: \(secret)"]
            )
            XCTAssertEqual(r.0, 401, line: line)
            XCTAssertTrue((r.1["reason"] as? String)?.contains(reason) ?? false, "\(r.1)", line: line)
        }
        try assertProxyRefuses("bob@example.com", secret: "guess", "authenticator 'proxy-auth/header' refused")
        try assertProxyRefuses("nobody@example.com", secret: "open-sesame", "no account for 'nobody@example.com'")
        r = try call("GET", db + "/public/users/caller", query: "ckAPIToken=\(api)")
        XCTAssertEqual(r.0, 421, "no credential at all: a user is required")
        r = try call("GET", db + "/public/users/caller", query: "", headers: viaProxy)
        XCTAssertEqual(r.0, 401, "the API token is still required")

        // Alice shares with Bob; Bob (through the proxy) accepts; the allow-list denies him.
        let guid = try shareDoc(with: "bob@example.com", createShortGUID: true)
        r = try call(
            "POST",
            db + "/public/records/accept",
            query: "ckAPIToken=\(api)",
            body: #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#,
            headers: viaProxy
        )
        XCTAssertEqual(r.0, 200, "per-item errors inside a 200")
        let denied = try XCTUnwrap((r.1["results"] as? [[String: Any]])?.first, "\(r.1)")
        XCTAssertEqual(denied["serverErrorCode"] as? String, "ACCESS_DENIED", "\(denied)")
        XCTAssertTrue((denied["reason"] as? String)?.contains("domain-allowlist/accept") ?? false, "\(denied)")
        XCTAssertEqual((denied["shortGUID"] as? [String: Any])?["value"] as? String, guid)
    }

    /// An authenticator written by an attacker: it loops, raises, returns tables with raising
    /// metatables, huge or NUL-laden names. Each request is refused (401) within the budget,
    /// naming the authenticator, and the server serves on.
    func testAHostileAuthenticatorFailsClosedAndTheServerServesOn() throws {
        stopServer()
        let plugins = dir.appendingPathComponent("plugins/hostile-auth")
        try FileManager.default.createDirectory(at: plugins, withIntermediateDirectories: true)
        try CLI.write(
            """
            return {
              name = "hostile-auth", version = "1.0.0", description = "attacks the server's authentication",
              setup = function(ctx)
                ctx.authenticate(function(req)
                  local mode = req.headers["x-mode"]
                  if mode == "loop" then while true do end end
                  if mode == "pcall-loop" then while true do pcall(function() while true do end end) end end
                  if mode == "error" then error("boom") end
                  if mode == "table" then return setmetatable({}, { __index = function() error("no") end }) end
                  if mode == "huge" then return string.rep("x", 1e6) end
                  if mode == "nul" then return "bob@example.com\\0.evil.org" end
                  if mode == "number" then return 0/0 end
                  if mode == "bob" then return ctx.accounts.find{ email = "bob@example.com" } end
                  return nil
                end, { name = "attack" })
              end,
            }
            """,
            to: plugins.appendingPathComponent("init.lua")
        )
        let config = dir.appendingPathComponent("hostile.config.lua")
        try CLI.write(#"return { limits = { cpuMillis = 50 }, plugins = { ["hostile-auth"] = true } }"#, to: config)
        try startServer(["--plugins", plugins.deletingLastPathComponent().path, "--config", config.path])
        for (mode, words) in [
            ("loop", "CPU budget"), ("pcall-loop", "CPU budget"), ("error", "boom"), ("table", "returned a table"),
            ("huge", "no account for"), ("nul", "NUL byte"), ("number", "returned a number"),
        ] {
            let start = Date()
            let r = try call("GET", db + "/public/users/caller", query: "ckAPIToken=\(api)", headers: ["X-Mode: \(mode)"])
            XCTAssertEqual(r.0, 401, "\(mode): \(r.1)")
            let reason = r.1["reason"] as? String ?? ""
            XCTAssertTrue(reason.hasPrefix("authenticator 'hostile-auth/attack'") && reason.contains(words), "\(mode): \(reason)")
            // The plugin's file, line and traceback are the operator's: in the log, by incident.
            XCTAssertFalse(reason.contains("init.lua") || reason.contains("traceback") || reason.contains(dir.path), "\(mode): \(reason)")
            XCTAssertLessThan(reason.utf8.count, 10_000, mode)
            XCTAssertLessThan(Date().timeIntervalSince(start), 20, "\(mode) was stopped by the budget")
        }
        var r = try call("GET", db + "/public/users/caller", query: "ckAPIToken=\(api)", headers: ["X-Mode: bob"])
        XCTAssertEqual(((r.1["users"] as? [[String: Any]])?.first?["lookupInfo"] as? [String: String])?["emailAddress"], "bob@example.com", "\(r.1)")
        r = try call("GET", db + "/public/users/caller", query: "ckAPIToken=\(api)")
        XCTAssertEqual(r.0, 421, "nothing returned: no user")
        r = try call("GET", db + "/public/users/caller")
        XCTAssertEqual(r.0, 200, "a web auth token is not the authenticators' business")
        XCTAssertTrue(server.isRunning)
    }

    /// users/discover both ways (R19, R20), and a stranger with an account told where an
    /// invitation went, masked (R16's participantMayNeedVerification as potentialMatchList).
    func testDiscoveryAndPotentialMatches() throws {
        try script(
            """
            local sf = require("shareflow")
            local bob = sf.accounts.find{ email = "bob@example.com" }
            bob:setDiscoverable(true)
            sf.accounts.create{ email = "carol@example.com", name = { given = "Carol" } }
            sf.accounts.find{ email = "alice@example.com" }:addContacts{ "bob@example.com", "carol@example.com" }
            """
        )
        var r = try call("GET", db + "/public/users/discover")
        XCTAssertEqual(r.0, 200, "\(r.1)")
        XCTAssertEqual(
            (r.1["users"] as? [[String: Any]])?.compactMap { ($0["lookupInfo"] as? [String: String])?["emailAddress"] },
            ["bob@example.com"],
            "Carol is a contact but not discoverable: \(r.1)"
        )
        r = try call(
            "POST",
            db + "/public/users/discover",
            body: #"{"lookupInfos":[{"emailAddress":"carol@example.com"},{"emailAddress":"bob@example.com"},{"phoneNumber":"+15555550100"}]}"#
        )
        XCTAssertEqual((r.1["users"] as? [[String: Any]])?.count, 1, "\(r.1)")
        r = try call("POST", db + "/public/users/discover", body: #"{"lookupInfos":[{}]}"#)
        XCTAssertEqual(r.0, 400)
        XCTAssertTrue((r.1["reason"] as? String)?.contains("lookupInfos[0]") ?? false, "\(r.1)")

        let guid = try shareDoc(with: "dave.old@example.com")
        let carol = "ckAPIToken=\(api)&ckWebAuthToken=\(try token("carol@example.com"))"
        r = try call("POST", db + "/public/records/resolve", query: carol, body: #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
        let result = try XCTUnwrap((r.1["results"] as? [[String: Any]])?.first, "\(r.1)")
        let matches = try XCTUnwrap(result["potentialMatchList"] as? [[String: Any]], "\(result)")
        XCTAssertEqual((matches.first?["contactInformation"] as? [String: String])?["emailAddress"], "d•••••••@example.com")
        XCTAssertNil(result["share"], "no share data for a stranger")
        XCTAssertFalse("\(r.1)".contains("dave.old"), "the address itself is not shown")
    }

    /// Tests/fuzz/json_fuzz.py: 1,500 bodies no schema describes (truncated, flipped, invalid
    /// UTF-8, nested 100,000 deep, odd numbers, duplicated keys, NUL), each answered with JSON,
    /// a 200 or a 4xx; the server serves on.
    func testRawJSONFuzzingGetsJSONAnswersAndNo5xx() throws {
        let python = PyiCloudTests.python
        guard FileManager.default.isExecutableFile(atPath: python) else {
            return XCTFail("no Python environment at \(python): run `make pyenv` (make test does)")
        }
        let (status, text) = try runTool(
            python,
            [CLI.root.appendingPathComponent("Tests/fuzz/json_fuzz.py").path, base, "1500", "20261123"],
            environment: ["SF_API": api, "SF_WEB": web],
            timeout: 300
        )
        XCTAssertEqual(status, 0, text)
        XCTAssertTrue(text.contains("1500 cases, 0 failures"), text)
        XCTAssertTrue(server.isRunning)
        XCTAssertEqual(try call("GET", db + "/public/users/caller").0, 200, "and serves on")
    }

    /// config server.rateLimit: a bucket per user token (or API token without one); over it,
    /// THROTTLED 429 with retryAfter in the body and Retry-After in the headers.
    func testRateLimitsPerTokenAreThrottledWithRetryAfter() throws {
        stopServer()
        let config = dir.appendingPathComponent("limits.config.lua")
        try CLI.write("return { server = { rateLimit = { requests = 5, perSeconds = 120 }, maxBodyMiB = 1 } }", to: config)
        try startServer(["--config", config.path])
        for n in 1...5 {
            XCTAssertEqual(try call("GET", db + "/public/users/caller").0, 200, "request \(n) of 5")
        }
        let r = try call("GET", db + "/public/users/caller")
        XCTAssertEqual(r.0, 429, "\(r.1)")
        XCTAssertEqual(r.1["serverErrorCode"] as? String, "THROTTLED")
        let retry = try XCTUnwrap(r.1["retryAfter"] as? Int, "\(r.1)")
        XCTAssertTrue((20...24).contains(retry), "one request refills in 24 s: \(retry)")
        XCTAssertTrue((r.1["_headers"] as? String)?.contains("retry-after: \(retry)") ?? false, "\(r.1)")
        // Bob's token has its own bucket; so has the API token alone.
        let bob = "ckAPIToken=\(api)&ckWebAuthToken=\(try token("bob@example.com"))"
        XCTAssertEqual(try call("GET", db + "/public/users/caller", query: bob).0, 200)
        XCTAssertEqual(try call("GET", db + "/public/users/caller", query: "ckAPIToken=\(api)").0, 421)
        // Users behind one address (a reverse proxy's) never share a bucket: each one's first
        // request, unknown then, is counted as its user, not against the address (after a
        // restart every user's first request took from the address's bucket, and five users
        // used it up for everyone else).
        var users: [String] = []
        for n in 0..<8 {
            let made = try CLI.run(["run", "--store", store, "-e", "require('shareflow').accounts.create{ email = 'user\(n)@example.com' }"])
            XCTAssertEqual(made.status, 0, made.stderr)
            users.append("ckAPIToken=\(api)&ckWebAuthToken=\(try token("user\(n)@example.com"))")
        }
        for user in users { XCTAssertEqual(try call("GET", db + "/public/users/caller", query: user).0, 200, "a first request of a user") }
        // Buckets are the resolved identity's, never the credential's text: guessed tokens
        // take from their address's refusals (401, then 429) and never from Bob's.
        var statuses: [Int] = []
        for n in 0..<8 {
            statuses.append(try call("GET", db + "/public/users/caller", query: "ckAPIToken=\(api)&ckWebAuthToken=guess\(n)").0)
        }
        XCTAssertEqual(statuses.filter { $0 == 401 }.count, 5, "five refusals, then throttled: \(statuses)")
        XCTAssertEqual(statuses.filter { $0 == 429 }.count, 3, "\(statuses)")
        for _ in 0..<3 { XCTAssertEqual(try call("GET", db + "/public/users/caller", query: bob).0, 200, "Bob keeps his own bucket") }
        for user in users { XCTAssertEqual(try call("GET", db + "/public/users/caller", query: user).0, 200, "so does every user seen before") }
        // server.maxBodyMiB from the same config.
        let big = String(repeating: " ", count: 1_100_000) + "{}"
        XCTAssertEqual(try call("POST", db + "/private/records/modify", query: bob, body: big).0, 413)
        // A config with a rate limit out of range is refused at start, naming the key.
        try CLI.write("return { server = { rateLimit = { requests = 0 } } }", to: config)
        let refused = try CLI.run(["serve", "--store", store, "--port", "0", "--config", config.path])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("server.rateLimit.requests must be an integer from 1 to 1000000"), refused.stderr)
    }

    /// The admin routes are inside the rate limit: guessed admin tokens are throttled by
    /// address like any guessed credential (they were never throttled).
    func testGuessedAdminTokensAreThrottled() throws {
        stopServer()
        let config = dir.appendingPathComponent("limits.config.lua")
        try CLI.write("return { server = { rateLimit = { requests = 5, perSeconds = 120 } } }", to: config)
        try startServer(["--config", config.path])
        var statuses: [Int] = []
        for n in 0..<8 {
            statuses.append(try call("GET", "/admin/1/faults", query: "", headers: ["Authorization: Bearer guess\(n)"]).0)
        }
        XCTAssertEqual(statuses.filter { $0 == 401 }.count, 5, "\(statuses)")
        XCTAssertEqual(statuses.filter { $0 == 429 }.count, 3, "\(statuses)")
    }

    func testOversizedAndMalformedBodies() throws {
        let big = dir.appendingPathComponent("big.json")
        let chunk = Data(repeating: UInt8(ascii: " "), count: 1 << 20)
        XCTAssertTrue(FileManager.default.createFile(atPath: big.path, contents: nil))
        let handle = try FileHandle(forWritingTo: big)
        for _ in 0..<17 { handle.write(chunk) }
        try handle.close()
        var r = try call("POST", db + "/private/records/modify", bodyFile: big)
        XCTAssertEqual(r.0, 413, "\(r.1)")
        XCTAssertEqual(r.1["serverErrorCode"] as? String, "QUOTA_EXCEEDED")

        for (body, words) in [
            ("[1,2]", "not a JSON object"), (#"{"operations":[{"operationType":"create"}]}"#, "operations[0]"),
            (#"{"operations":"all"}"#, "operations"), ("{\"operations\":[", "not a JSON object"),
            (#"{"zoneID":{"zoneName":7},"operations":[]}"#, "zoneID.zoneName"),
        ] {
            r = try call("POST", db + "/private/records/modify", body: body)
            XCTAssertEqual(r.0, 400, body)
            XCTAssertEqual(r.1["serverErrorCode"] as? String, "BAD_REQUEST", body)
            XCTAssertTrue((r.1["reason"] as? String)?.contains(words) ?? false, "\(body): \(r.1)")
        }
        r = try call("POST", db + "/private/records/modify", body: #"{"operations":[]}"#, headers: ["Content-Type: application/json"])
        XCTAssertEqual(r.0, 200, "application/json as well as text/plain: \(r.1)")

        // Found by the attack review: values that trapped or wrapped, wrong types taken for
        // "not given", lists without bounds. Each is BAD_REQUEST naming the field.
        func create(_ field: String) -> String {
            #"{"operations":[{"operationType":"create","record":{"recordName":"x","recordType":"T","fields":{"f":\#(field)}}}]}"#
        }
        let lookups = (0...400).map { #"{"recordName":"r\#($0)"}"# }.joined(separator: ",")
        for (path, body, words) in [
            ("records/modify", create(#"{"value":1e300,"type":"TIMESTAMP"}"#), "fields.f must be milliseconds"),
            ("records/modify", create(#"{"value":-1e300,"type":"TIMESTAMP_LIST"}"#), "must be a list"),
            ("records/modify", create(#"{"value":[1e300],"type":"TIMESTAMP_LIST"}"#), "fields.f[0] must be milliseconds"),
            ("records/modify", create(#"{"value":18446744073709551615,"type":"INT64"}"#), "outside INT64"),
            ("records/modify", create(#"{"value":9223372036854775808}"#), "outside INT64"),
            ("records/modify", #"{"atomic":"yes","operations":[]}"#, "atomic must be true or false"),
            ("records/modify", #"{"desiredKeys":"t","operations":[]}"#, "desiredKeys must be a list"),
            (
                "records/modify", #"{"operations":[{"operationType":"create","record":{"recordType":"T","fields":[1,2]}}]}"#,
                "record.fields must be an object"
            ),
            (
                "records/modify", #"{"operations":[{"operationType":"create","record":{"recordType":"T","createShortGUID":"true"}}]}"#,
                "createShortGUID must be true or false"
            ),
            (
                "records/modify", #"{"operations":[{"operationType":"create","record":{"recordType":"T","parent":"root"}}]}"#,
                "record.parent must be an object"
            ),
            (
                "records/modify", #"{"operations":[{"operationType":"frobnicate","record":{"recordName":"s","recordType":"cloudkit.share"}}]}"#,
                "frobnicate"
            ),
            ("records/query", #"{"query":{"recordType":"T","filterBy":{"x":1}}}"#, "query.filterBy must be a list"),
            ("records/query", #"{"resultsLimit":"2","query":{"recordType":"T"}}"#, "resultsLimit must be an integer"),
            ("records/lookup", #"{"records":[\#(lookups)]}"#, "limitExceeded: records has 401 items"),
        ] {
            r = try call("POST", db + "/private/" + path, body: body)
            XCTAssertEqual(r.0, 400, "\(path) \(body.prefix(120)): \(r.1)")
            XCTAssertTrue((r.1["reason"] as? String)?.contains(words) ?? false, "\(words): \(r.1)")
        }
        r = try call("POST", db + "/public/records/resolve", body: #"{"shortGUIDs":[{"value":"x","shouldFetchRootRecord":"yes"}]}"#)
        XCTAssertEqual(r.0, 400, "\(r.1)")
        r = try call("GET", db + "/private/records/modify")
        XCTAssertEqual(r.0, 400, "\(r.1)")
        XCTAssertTrue((r.1["reason"] as? String)?.contains("records/modify is POST, not GET") ?? false, "\(r.1)")
        for (method, path) in [("PUT", db + "/private/records/modify"), ("DELETE", "/database/2/x"), ("GET", "/nothing/here")] {
            r = try call(method, path)
            XCTAssertEqual(r.0, 404, "\(method) \(path)")
            XCTAssertEqual(r.1["serverErrorCode"] as? String, "NOT_FOUND", "JSON like every other answer: \(r.1)")
        }
        r = try call("GET", "/database/1/iCloud%2Etest/development/public/users/caller")
        XCTAssertEqual(r.0, 200, "a percent-encoded container is the container: \(r.1)")
        r = try call(
            "POST",
            db + "/private/zones/modify",
            body: #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Z","ownerRecordName":"_someoneElse"}}}]}"#
        )
        XCTAssertEqual((r.1["zones"] as? [[String: Any]])?.first?["serverErrorCode"] as? String, "ACCESS_DENIED", "\(r.1)")

        // A date no TIMESTAMP holds, made in Lua, is served without a trap.
        try script(
            """
            local sf = require("shareflow")
            local db = sf.as("alice@example.com"):container("iCloud.test").publicCloudDatabase
            assert(db:modifyRecords{ save = { sf.Record{ recordType = "T", recordName = "far", fields = { when = sf.Date(1e300) } } } })
            """
        )
        r = try call("POST", db + "/public/records/lookup", body: #"{"records":[{"recordName":"far"}]}"#)
        XCTAssertEqual(r.0, 200, "\(r.1)")
        XCTAssertEqual(
            ((((r.1["records"] as? [[String: Any]])?.first?["fields"] as? [String: Any])?["when"] as? [String: Any])?["value"] as? Double),
            1e303,
            "\(r.1)"
        )
        XCTAssertTrue(server.isRunning)
    }
}
