import XCTest

@testable import ShareFlow

/// SPEC §15 F1 and F3: a rule's keys are checked in one place, each error naming the key and
/// the value; rules match what they name; the same seed and requests give the same faults.
final class FaultRuleTests: XCTestCase {
    private func rule(_ fields: [String: FaultRule.Value]) throws -> FaultRule {
        try FaultRule(fields, name: "faults[2]")
    }

    private func assertRefused(_ fields: [String: FaultRule.Value], _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try rule(fields), file: file, line: line) { error in
            let e = error as? ShareFlowError
            XCTAssertEqual(e?.code, .invalidArguments, file: file, line: line)
            XCTAssertEqual(e?.message, message, file: file, line: line)
        }
    }

    func testEveryKeyIsReadWithItsDefaults() throws {
        let r = try rule([
            "operation": .string("records/modify"), "container": .string("iCloud.x"), "environment": .string("production"),
            "database": .string("shared"), "zone": .string("Z"), "recordType": .string("Note"), "recordName": .string("n-*"),
            "caller": .string("bob@example.com"), "fault": .string("partialFailure"), "itemCode": .string("quotaExceeded"),
            "retryAfter": .number(1.5), "probability": .number(0.25), "seed": .number(42), "after": .number(2),
            "count": .number(3), "latencyMs": .number(10),
        ])
        XCTAssertEqual(r.operation, "records/modify")
        XCTAssertEqual(r.environment, .production)
        XCTAssertEqual(r.database, "shared")
        XCTAssertEqual(r.fault, .partialFailure)
        XCTAssertEqual(r.itemCode, .quotaExceeded)
        XCTAssertEqual(r.retryAfter, 1.5)
        XCTAssertEqual(r.seed, 42)
        XCTAssertEqual(r.after, 2)
        XCTAssertEqual(r.count, 3)
        let plain = try rule(["fault": .string("serviceUnavailable")])
        XCTAssertEqual(plain.operation, "*")
        XCTAssertEqual(plain.retryAfter, 3)
        XCTAssertEqual(plain.probability, 1)
        XCTAssertEqual(plain.after, 0)
        XCTAssertNil(plain.count)
        XCTAssertEqual(plain.when, .beforeCommit)
        XCTAssertEqual(try rule(["latencyMs": .number(5)]).fault, nil, "latency only")
    }

    func testABadKeyOrValueIsNamed() {
        assertRefused(
            ["fault": .string("requestRateLimited"), "probabilty": .number(1)],
            "faults[2]: unknown key 'probabilty' (expected \(FaultRule.keys.joined(separator: ", ")))"
        )
        assertRefused(
            ["fault": .string("requestRateLimited"), "probability": .number(2)],
            "faults[2].probability must be a number from 0 to 1, got 2"
        )
        assertRefused(
            ["fault": .string("requestRateLimited"), "probability": .number(.nan)],
            "faults[2].probability must be a number from 0 to 1, got nan"
        )
        assertRefused(
            ["fault": .string("requestRateLimited"), "count": .number(1.5)],
            "faults[2].count must be an integer from 1 to 1000000000, got 1.5"
        )
        assertRefused(
            ["fault": .string("requestRateLimited"), "after": .number(-1)],
            "faults[2].after must be an integer from 0 to 1000000000, got -1"
        )
        assertRefused(
            ["fault": .string("requestRateLimited"), "seed": .string("7")],
            "faults[2].seed must be an integer from 0 to 9007199254740991, got \"7\" (a string)"
        )
        assertRefused(
            ["fault": .string("teapot")],
            "faults[2].fault must be one of \(FaultRule.Fault.allCases.map(\.rawValue).joined(separator: ", ")), got \"teapot\" (a string)"
        )
        assertRefused(
            ["fault": .other(type: "table")],
            "faults[2].fault must be one of \(FaultRule.Fault.allCases.map(\.rawValue).joined(separator: ", ")), got a table"
        )
        assertRefused(
            ["fault": .string("zoneBusy"), "database": .string("iCloud")],
            "faults[2].database must be one of private, shared, public, got \"iCloud\" (a string)"
        )
        assertRefused(
            ["fault": .string("zoneBusy"), "environment": .boolean(true)],
            "faults[2].environment must be one of development, production, got true (a boolean)"
        )
        assertRefused(
            ["fault": .string("zoneBusy"), "zone": .string("")],
            "faults[2].zone must be a non-empty string of at most 1024 bytes, got \"\" (a string)"
        )
        assertRefused(
            ["fault": .string("zoneBusy"), "itemCode": .string("limitExceeded")],
            "faults[2].itemCode applies to fault partialFailure only (the rule's fault is zoneBusy)"
        )
        assertRefused(
            ["fault": .string("zoneBusy"), "when": .string("afterCommit")],
            "faults[2].when applies to fault networkFailure only (the rule's fault is zoneBusy)"
        )
        assertRefused([:], "faults[2] has no fault and no latencyMs: it would do nothing")
        XCTAssertThrowsError(try rule(["operation": .string("records/modfy"), "fault": .string("zoneBusy")])) { error in
            XCTAssertTrue((error as? ShareFlowError)?.message.hasPrefix("faults[2].operation must be *, an operation (") == true, "\(error)")
        }
        XCTAssertThrowsError(try rule(["recordName": .string(String(repeating: "*", count: 1025)), "fault": .string("zoneBusy")]))
    }

    func testGlobs() {
        XCTAssertTrue(FaultRule.globMatches("*", ""))
        XCTAssertTrue(FaultRule.globMatches("n-*", "n-1"))
        XCTAssertTrue(FaultRule.globMatches("n-?", "n-1"))
        XCTAssertFalse(FaultRule.globMatches("n-?", "n-12"))
        XCTAssertTrue(FaultRule.globMatches("*-*-x", "a-b-c-x"))
        XCTAssertFalse(FaultRule.globMatches("a*b", "a-c"))
        XCTAssertTrue(FaultRule.globMatches("é*", "étoile"))
        // Linear, not exponential, on the patterns that make a backtracking matcher explode.
        let name = String(repeating: "a", count: 5_000)
        let start = Date()
        XCTAssertFalse(FaultRule.globMatches(String(repeating: "*a", count: 500) + "b", name))
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
    }

    /// The compiled glob agrees with a plain dynamic program on random patterns and names
    /// (stars runs, `?`, a pattern past 64 characters for the multi-word carries).
    func testTheCompiledGlobAgreesWithAReferenceMatcher() {
        func reference(_ glob: String, _ name: String) -> Bool {
            let p = Array(glob)
            let s = Array(name)
            var row = [Bool](repeating: false, count: s.count + 1)
            row[0] = true
            for c in p {
                var next = [Bool](repeating: false, count: s.count + 1)
                if c == "*" { next[0] = row[0] }
                for j in 0..<s.count {
                    next[j + 1] = c == "*" ? (row[j + 1] || next[j]) : (row[j] && (c == "?" || c == s[j]))
                }
                row = next
            }
            return row[s.count]
        }
        var generator = SplitMix64(seed: 11)
        func pick(_ n: Int) -> Int { Int(generator.next() % UInt64(n)) }
        let alphabet: [Character] = ["a", "b", "é", "*", "?"]
        for round in 0..<4_000 {
            let long = round % 10 == 0
            let glob = String((0..<pick(long ? 150 : 9)).map { _ in alphabet[pick(5)] })
            let name = String((0..<pick(long ? 200 : 9)).map { _ in alphabet[pick(3)] })
            XCTAssertEqual(FaultRule.globMatches(glob, name), reference(glob, name), "\(glob) ~ \(name)")
        }
        XCTAssertTrue(
            FaultRule.globMatches(
                String(repeating: "a", count: 70) + "*" + String(repeating: "?", count: 70),
                String(repeating: "a", count: 200)
            )
        )
    }

    /// A thousand `*aaa…ab` rules against a modify of 400 names `aaa…a1`: the worst case of a
    /// backtracking walk (~1 ms a rule and an item in a debug build: 400 s for the modify).
    func testAThousandPathologicalGlobsAreCheapToAsk() throws {
        func time(_ pattern: String, items: Int) throws -> TimeInterval {
            let injector = FaultInjector()
            for seed in 0..<1_000 {
                try injector.add(
                    try FaultRule(
                        ["recordName": .string(pattern), "fault": .string("partialFailure"), "seed": .number(Double(seed))],
                        name: "t"
                    )
                )
            }
            let name = String(repeating: "a", count: 254) + "1"
            let start = Date()
            for _ in 0..<items { XCTAssertNil(injector.decide(request(name: name), stage: .item)) }
            return Date().timeIntervalSince(start)
        }
        // Measured against the same thousand rules of one character, refused at once (the cost
        // of asking a rule at all), in the same run: a busy machine slows both alike, and a
        // backtracking walk would be hundreds of times slower than either bound.
        let asking = try time("b", items: 400)
        // Longer than any name: refused before a character is read.
        let long = try time("*" + String(repeating: "a", count: 1_022) + "b", items: 400)
        XCTAssertLessThan(long, asking * 3 + 0.2, "asking: \(asking) s")
        // As long as a name can be: one pass over it per rule.
        // (a tenth of the items: at most thirty times the cost of asking, per item).
        let pass = try time("*" + String(repeating: "a", count: 253) + "b", items: 40)
        XCTAssertLessThan(pass, asking * 3 + 0.2, "asking: \(asking) s")
        print("pathological globs: asking \(asking) s, too long \(long) s, one pass \(pass) s")
    }

    private func request(
        _ operation: String = "modifyRecords",
        subpath: String? = nil,
        zone: String? = "Z",
        name: String? = "n-1",
        caller: String = "_bob",
        email: String? = "Bob@Example.com"
    ) -> FaultRequest {
        FaultRequest(
            operation: operation,
            subpath: subpath,
            container: "iCloud.x",
            environment: .development,
            database: "private",
            zone: zone,
            recordType: "Note",
            recordName: name,
            callerID: caller,
            callerEmail: email
        )
    }

    func testARuleMatchesWhatItNamesAndNothingElse() throws {
        let injector = FaultInjector()
        try injector.add(
            try rule([
                "operation": .string("records/modify"), "zone": .string("Z"), "recordName": .string("n-*"),
                "caller": .string("bob@example.com"), "fault": .string("zoneBusy"),
            ])
        )
        XCTAssertNotNil(injector.decide(request(), stage: .item), "a native call of what the subpath runs")
        XCTAssertNotNil(injector.decide(request(subpath: "records/modify"), stage: .item))
        XCTAssertNil(injector.decide(request("fetchRecords"), stage: .item))
        XCTAssertNil(injector.decide(request(zone: "Other"), stage: .item))
        XCTAssertNil(injector.decide(request(name: "m-1"), stage: .item))
        XCTAssertNil(injector.decide(request(name: nil), stage: .item), "a record-name rule never matches what has none")
        XCTAssertNil(injector.decide(request(caller: "_carol", email: "carol@example.com"), stage: .item))
        XCTAssertNotNil(injector.decide(request(caller: "_x", email: "BOB@example.com"), stage: .item), "an email matches whatever its case")

        let changes = FaultInjector()
        try changes.add(try rule(["operation": .string("changes/zone"), "fault": .string("zoneBusy")]))
        XCTAssertNotNil(changes.decide(request("recordZoneChanges", subpath: "changes/zone"), stage: .zone))
        XCTAssertNil(changes.decide(request("recordZoneChanges", subpath: "records/changes"), stage: .zone), "another subpath that runs the same")
        XCTAssertNotNil(changes.decide(request("recordZoneChanges"), stage: .zone))
        XCTAssertNil(changes.decide(request("recordZoneChanges", subpath: "changes/zone")), "a zone's fault is not the request's")
    }

    func testEachFaultIsAskedWhereItStrikes() throws {
        let injector = FaultInjector()
        try injector.add(try rule(["fault": .string("partialFailure")]))
        try injector.add(try rule(["fault": .string("zonePurged")]))
        try injector.add(try rule(["fault": .string("authenticationFailed")]))
        XCTAssertNil(injector.decide(request()), "partialFailure is per item")
        XCTAssertEqual(injector.decide(request(), stage: .item)?.rule.fault, .partialFailure)
        XCTAssertEqual(injector.decide(request("databaseChanges"), stage: .databaseFeed)?.rule.fault, .zonePurged)
        var http = request(subpath: "records/modify")
        XCTAssertNil(injector.decide(http), "authenticationFailed only over HTTP")
        http.overHTTP = true
        XCTAssertEqual(injector.decide(http)?.rule.fault, .authenticationFailed)
    }

    func testARequestMatchesWhenOneOfItsItemsDoes() throws {
        let injector = FaultInjector()
        try injector.add(try rule(["fault": .string("requestRateLimited"), "zone": .string("Z"), "recordType": .string("Note")]))
        let both = FaultRequest(
            operation: "fetchRecords",
            container: "iCloud.x",
            environment: .development,
            database: "private",
            items: [
                FaultItem(zone: "Y", recordType: "Note"), FaultItem(zone: "Z", recordType: "Trip"),
                FaultItem(zone: "Z", recordType: "Note", recordName: "n"),
            ]
        )
        XCTAssertEqual(injector.decide(both)?.injection.recordName, "n", "the item that matched is recorded")
        var neither = both
        neither.items.removeLast()
        XCTAssertNil(injector.decide(neither), "zone and type must match on one item")
        neither.items = []
        XCTAssertNil(injector.decide(neither))
    }

    func testAfterCountAndChanceAndTheirOrder() throws {
        let injector = FaultInjector()
        let id = try injector.add(try rule(["fault": .string("requestRateLimited"), "after": .number(2), "count": .number(3)]))
        let fired = (0..<8).map { _ in injector.decide(request()) != nil }
        XCTAssertEqual(fired, [false, false, true, true, true, false, false, false])
        XCTAssertEqual(injector.history().map(\.rule), [id, id, id])
        XCTAssertEqual(injector.history().first?.caller, "Bob@Example.com")

        // A second rule is asked when the first matches but does not fire.
        let two = FaultInjector()
        try two.add(try rule(["fault": .string("requestRateLimited"), "count": .number(1)]))
        try two.add(try rule(["fault": .string("serviceUnavailable")]))
        XCTAssertEqual(
            (0..<3).compactMap { _ in two.decide(request())?.rule.fault },
            [.requestRateLimited, .serviceUnavailable, .serviceUnavailable]
        )
    }

    func testTheSameSeedReplaysTheSameFaults() throws {
        func run(seed: Double) throws -> [Bool] {
            let injector = FaultInjector()
            try injector.add(try rule(["fault": .string("serviceUnavailable"), "probability": .number(0.3), "seed": .number(seed)]))
            return (0..<200).map { _ in injector.decide(request()) != nil }
        }
        let first = try run(seed: 7)
        XCTAssertEqual(try run(seed: 7), first)
        XCTAssertNotEqual(try run(seed: 8), first)
        let share = Double(first.filter { $0 }.count) / 200
        XCTAssertGreaterThan(share, 0.15)
        XCTAssertLessThan(share, 0.45)
    }

    func testClearKeepsTheConfigsRulesAndAPluginsGoWithIt() throws {
        let injector = FaultInjector()
        let config = try injector.add(try rule(["fault": .string("zoneBusy")]), owner: .config)
        try injector.add(try rule(["fault": .string("zoneBusy")]))
        try injector.add(try rule(["fault": .string("zoneBusy")]), owner: .plugin("chaos"))
        XCTAssertEqual(injector.removeAll { $0 == .plugin("chaos") }, 1)
        XCTAssertEqual(injector.list().map(\.owner), [.config, .runtime])
        try injector.add(try rule(["fault": .string("zoneBusy")]), owner: .plugin("chaos"))
        XCTAssertEqual(injector.clear(), 2, "a plugin's rules were armed at run time too")
        XCTAssertEqual(injector.list().map(\.id), [config])
        XCTAssertTrue(injector.remove(id: config))
        XCTAssertFalse(injector.remove(id: config))
        XCTAssertNil(injector.decide(request()))
    }

    func testTheHistoryKeepsTheLastThousand() throws {
        let injector = FaultInjector()
        try injector.add(try rule(["fault": .string("zoneBusy")]))
        for i in 0..<1_005 { _ = injector.decide(request(name: "n-\(i)"), stage: .item) }
        let history = injector.history()
        XCTAssertEqual(history.count, FaultInjector.historyLimit)
        XCTAssertEqual(history.first?.recordName, "n-5")
        XCTAssertEqual(history.last?.recordName, "n-1004")
    }
}
