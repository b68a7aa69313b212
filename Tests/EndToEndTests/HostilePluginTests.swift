import Foundation
import ShareFlowTestKit
import XCTest

/// The hostile plugin corpus (`Fixtures/hostile`, SPEC §6–§8): plugins that try to crash,
/// hang, corrupt or outlive the host, each run by `drive.lua CASE` in a child process of the
/// built binary, so a crash or a hang fails one test and not the run.
///
/// Every case must end with exit status 0 (a crash shows as the signal's number — 4 SIGILL,
/// 5 SIGTRAP, 6 SIGABRT, 11 SIGSEGV —, a hang as the timeout), print `ok CASE` (the driver's
/// own checks: what must not change did not, the next request is served, each hostile call
/// took at most 2× its CPU budget), and never print "unprotected Lua error".
/// `Fixtures/hostile/README.md` lists the cases and what each expects.
final class HostilePluginTests: XCTestCase {
    static let corpus = "Tests/EndToEndTests/Fixtures/hostile"
    /// A case takes well under a second once the host holds; a hang is cut here.
    static let timeout: TimeInterval = 15

    // MARK: Class 1 — nested values: depth limits and cycle detection

    func testDeepRecordFieldInConstructor() throws { try drive("deep-record-field") }
    func testDeepRecordField200InConstructor() throws { try drive("deep-record-field-200") }
    func testDeepRecordFieldThroughFieldsView() throws { try drive("deep-record-field-view") }
    func testDeepRecordFieldThroughSet() throws { try drive("deep-record-field-set") }
    func testJSONEncodeCyclic() throws { try drive("json-encode-cyclic") }
    func testJSONEncodeDeep() throws { try drive("json-encode-deep") }
    func testInitReturnsDeepValue() throws { try drive("return-deep-value") }
    func testInitReturnsDeepValueAtStartup() throws { try startup("return-deep-value") }
    func testConfigDefaultDeep() throws { try drive("config-default-deep") }
    func testScriptCyclicAndDeepFieldValues() throws { try drive("script-cyclic-field") }
    func testScriptDeepAndCyclicPluginSettings() throws { try drive("script-deep-plugin-settings") }

    // MARK: Class 2 — every access to a plugin's state is protected

    func testVerdictIndexRaises() throws { try drive("verdict-index-raises") }
    func testVerdictIndexLoops() throws { try drive("verdict-index-loops") }
    func testGlobalNewindexRaises() throws { try drive("global-newindex-raises") }
    func testGlobalNewindexRaisesAtStartup() throws { try startup("global-newindex-raises") }
    func testGlobalNewindexLoops() throws { try drive("global-newindex-loops") }
    func testGlobalIndexRaises() throws { try drive("global-index-raises") }
    func testStateHeldAtMemoryCap() throws { try drive("memory-cap-hold", config: "memory-cap.config.lua") }

    // MARK: Class 3 — numeric arguments are validated (bad argument, never a trap)

    func testDecisionsLimitNegative() throws { try drive("decisions-limit-negative") }
    func testDecisionsLimitNaN() throws { try drive("decisions-limit-nan") }
    func testDecisionsLimitInfinite() throws { try drive("decisions-limit-inf") }
    func testDecisionsLimitHuge() throws { try drive("decisions-limit-huge") }
    func testDecisionsLimitTwoToThe63() throws { try drive("decisions-limit-2p63") }
    func testDecisionsLimitMaxInteger() throws { try drive("decisions-limit-maxinteger") }
    func testPriorityNaNOnObserver() throws { try drive("priority-nan-on") }
    func testPriorityInfiniteOnObserver() throws { try drive("priority-inf-on") }
    func testPriorityMinusInfiniteOnPolicy() throws { try drive("priority-neginf-policy") }
    func testPriorityHugeOnPolicy() throws { try drive("priority-huge-policy") }
    func testConfigSchemaInfiniteBound() throws { try drive("config-schema-inf-bound") }
    func testConfigFileHugeCPUBudget() throws { try configFile(limits: "cpuMillis = 1e300") }
    func testConfigFileInfiniteMemoryCap() throws { try configFile(limits: "memoryMiB = 1/0") }

    // MARK: Class 4 — unload and reload while an event is being delivered (script)

    func testUnloadDuringDelivery() throws { try drive("script-unload-during-delivery") }
    func testReloadDuringDelivery() throws { try drive("script-reload-during-delivery") }
    func testUnloadInPolicyBeforeThePluginsPolicy() throws { try drive("script-unload-in-policy") }

    // MARK: Class 5 — the CPU budget cannot be escaped (2× budget, error names the budget)

    func testBudgetPlainLoop() throws { try drive("budget-plain-loop") }
    func testBudgetPcallLoop() throws { try drive("budget-pcall-loop") }
    func testBudgetLoopingClose() throws { try drive("budget-close-loop") }
    func testBudgetLoopingGCFinalizer() throws { try drive("budget-gc-finalizer") }
    func testBudgetGCPlaceholderSwap() throws { try drive("gc-placeholder-swap") }
    func testBudgetClassMetatableGCSwap() throws { try drive("class-metatable-gc-swap") }
    func testBudget65NestedCoroutines() throws { try drive("budget-coroutine-65") }
    func testBudgetCoroutineWrap() throws { try drive("budget-coroutine-wrap") }
    func testBudgetCoroutineClose() throws { try drive("budget-coroutine-close") }
    func testBudgetXpcallLoopingHandler() throws { try drive("budget-xpcall-handler") }
    func testBudgetErrorObjectLoopingTostring() throws { try drive("budget-error-tostring") }
    func testBudgetPatternFind() throws { try drive("budget-string-find") }
    func testBudgetPatternGsub() throws { try drive("budget-gsub") }
    func testBudgetPlainFind() throws { try drive("budget-find-plain") }
    func testBudgetTableSort() throws { try drive("budget-table-sort") }
    func testBudgetTableMove() throws { try drive("budget-table-move") }
    func testBudgetLoadBigChunk() throws { try drive("budget-load-big-chunk") }
    func testBudgetSetupLoop() throws { try drive("budget-setup-loop") }
    func testMemoryBomb() throws { try drive("memory-bomb") }
    func testDeepRecursion() throws { try drive("deep-recursion") }
    func testYieldAcrossHost() throws { try drive("yield-across-host") }
    func testReentrantPolicySave() throws { try drive("reentrant-policy-save") }
    func testReentrantObserverFetch() throws { try drive("reentrant-observer-fetch") }

    func testBudgetPcallLoopInObserver() throws {
        let r = try drive("budget-observer-pcall-loop")
        XCTAssertTrue(
            r.stderr.contains("plugin 'budget-observer-pcall-loop': CPU budget of 50 ms exceeded"),
            "the observer's error names the budget:\n" + Self.head(r.stderr)
        )
    }

    // MARK: Class 6 — plugins see engine objects read-only

    func testEventObjectsAreReadOnly() throws { try drive("mutate-event-objects") }
    func testPolicyRequestObjectsAreReadOnly() throws { try drive("mutate-policy-request") }

    // MARK: Class 7 — ctx.appendFile: bytes, confinement, quota, private folder

    func testAppendFileBytesAndSymlinks() throws {
        let start = Date()
        let r = try CLI.run(["test", Self.corpus + "/append-probe"], timeout: Self.timeout)
        XCTAssertFalse(r.stderr.contains("unprotected Lua error"), Self.head(r.stderr))
        XCTAssertEqual(r.status, 0, Self.explain(r, elapsed: Date().timeIntervalSince(start)))
        XCTAssertTrue(r.stdout.hasSuffix("6 passed, 0 failed\n"), r.stdout)
    }

    func testAppendFileQuotaFromConfig() throws { try drive("append-quota-config", config: "quota.config.lua") }
    func testAppendFileDefaultQuota() throws { try drive("append-quota-default") }

    func testAppendFileMemoryStoreFolderIsPrivateAndRemoved() throws {
        let r = try drive("append-memory-private", memoryStore: true)
        func value(_ key: String) -> String? {
            r.stdout.split(separator: "\n").first { $0.hasPrefix(key + " ") }.map { String($0.dropFirst(key.count + 1)) }
        }
        guard let folder = value("datafolder"), let file = value("datafile") else {
            return XCTFail("the driver printed no data folder:\n" + r.stdout)
        }
        let shared = (NSTemporaryDirectory() as NSString).appendingPathComponent("shareflow-plugin-data")
        // A run against a host that shares one folder writes there: take back what this
        // case wrote (the folder is append-probe's, a plugin of the corpus only).
        defer {
            if folder.hasPrefix(shared + "/") {
                for name in [(file as NSString).lastPathComponent, "probe.log"] {
                    try? FileManager.default.removeItem(atPath: (folder as NSString).appendingPathComponent(name))
                }
                if (try? FileManager.default.contentsOfDirectory(atPath: folder))?.isEmpty == true {
                    try? FileManager.default.removeItem(atPath: folder)
                }
            }
        }
        XCTAssertFalse(folder.hasPrefix(shared + "/"), "\(folder) is the folder every :memory: process shares")
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder), "\(folder) is still there after exit")
    }

    // MARK: Class 8 — malformed verdicts deny

    func testVerdictAllowStringFalse() throws { try drive("verdict-allow-string-false") }
    func testVerdictAllowZero() throws { try drive("verdict-allow-zero") }
    func testVerdictReasonOnly() throws { try drive("verdict-reason-only") }
    func testVerdictEmptyTable() throws { try drive("verdict-empty-table") }
    func testVerdictTableWithMetatable() throws { try drive("verdict-metatable") }
    func testVerdictIndexProvidesAllow() throws { try drive("verdict-index-allow") }
    func testVerdictUserdata() throws { try drive("verdict-userdata") }
    func testVerdictString() throws { try drive("verdict-string") }
    func testVerdictZero() throws { try drive("verdict-zero") }
    func testVerdictNaN() throws { try drive("verdict-nan") }
    func testVerdictFunction() throws { try drive("verdict-function") }
    func testVerdictThread() throws { try drive("verdict-thread") }
    func testVerdictNilAllows() throws { try drive("verdict-nil") }
    func testVerdictTrueAllows() throws { try drive("verdict-true") }
    func testVerdictAllowAllows() throws { try drive("verdict-allow") }
    func testVerdictDenyDenies() throws { try drive("verdict-deny") }
    func testVerdictFalseReasonDenies() throws { try drive("verdict-false-reason") }

    // MARK: Class 9 — the attack review: no trap, no way out of the folder, the caps or the budget

    func testRequestSerialOverwritten() throws { try drive("request-serial-overwrite") }
    func testRequestNextWithNonTable() throws { try drive("request-next-non-table") }
    func testRequestNextWithMissingKeyKeepsMemoryCap() throws { try drive("request-next-missing-key") }
    func testJSONEncodeKeyTostringRewritesTableKeepsMemoryCap() throws { try drive("json-encode-key-tostring") }
    func testHostCallsFromCoroutines() throws { try drive("coroutine-host-calls") }
    func testCallerParticipantRefusedByPluginShare() throws { try drive("participant-escalate") }
    func testCallerRecordRefusedAsRootAndInSaves() throws { try drive("caller-record-as-root") }
    func testRequireEscapeThroughIpairs() throws { try drive("require-escape-ipairs") }
    func testRequireEscapeThroughStringMethods() throws { try drive("require-escape-string") }
    func testRequireEscapeToFIFO() throws { try drive("require-escape-fifo") }
    func testRequireFIFOLinksAndBigModules() throws { try drive("require-module-files", generatedPlugins: true) }
    func testPackageSearchpathGone() throws { try drive("package-searchpath") }
    func testStringRepEmpty() throws { try drive("string-rep-empty") }
    func testJSONEncodeDAG() throws { try drive("json-encode-dag") }
    func testJSONEncodeRepeatedBigString() throws { try drive("json-encode-amplify") }
    func testJSONEncodeControlCharacters() throws { try drive("json-encode-control-chars") }
    func testInitReturnsDAG() throws { try drive("init-returns-dag") }
    func testInitReturnsDAGAtStartup() throws { try startup("init-returns-dag") }
    func testInitOver1MiB() throws { try drive("init-over-1mib", generatedPlugins: true) }
    func testDenyWithHugeReason() throws { try drive("deny-huge-reason") }
    func testErrorWithHugeMessage() throws { try drive("error-huge-message") }
    func testBudgetChainOfPolicies() throws { try drive("budget-chain-policies", generatedPlugins: true) }
    func testBudgetChainOfObservers() throws { try drive("budget-chain-observers", generatedPlugins: true) }
    func testBudgetUTF8Len() throws { try drive("budget-utf8-len") }

    // MARK: Others

    func testPoisonedStringMetatableStaysInItsState() throws {
        try drive("string-metatable-poison", plugins: ["Plugins"])
    }

    func testScriptStateIsClosedAtExit() throws {
        let r = try drive("script-gc-at-exit")
        XCTAssertTrue(
            r.stdout.contains("ok script-gc-at-exit\ngc at exit\n"),
            "the script's finalizer runs when the process ends (states are closed at exit):\n" + r.stdout
        )
    }

    // MARK: Running a case

    /// Runs `drive.lua name` on a fresh file store (or `:memory:`) in a temporary folder and
    /// asserts a clean exit with "ok name". With `generatedPlugins`, an empty plugins folder in
    /// that temporary folder comes first in `--plugins` and is the driver's second argument:
    /// the case writes there what the repository cannot hold (FIFOs, links, files past 1 MiB).
    @discardableResult
    func drive(
        _ name: String,
        config: String = "hostile.config.lua",
        memoryStore: Bool = false,
        plugins: [String] = [],
        generatedPlugins: Bool = false,
        file: StaticString = #filePath,
        line: UInt = #line
    ) throws -> CLI.Result {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = memoryStore ? ":memory:" : dir.appendingPathComponent("store.sqlite").path
        var first: [String] = []
        var arguments: [String] = []
        if generatedPlugins {
            let generated = dir.appendingPathComponent("generated")
            try FileManager.default.createDirectory(at: generated, withIntermediateDirectories: true)
            first = [generated.path]
            arguments = [generated.path]
        }
        return try run(
            ["--store", store, "--config", Self.corpus + "/" + config],
            firstPlugins: first,
            plugins: plugins,
            script: name,
            arguments: arguments,
            expecting: name,
            file: file,
            line: line
        )
    }

    /// A config that turns `plugin` on at startup: the process either serves (the plugin
    /// loaded) or stops with one clear error naming the plugin; never a crash or a hang.
    func startup(_ plugin: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try runWithConfig(
            "return { limits = { cpuMillis = 50, memoryMiB = 64 }, plugins = { [\"\(plugin)\"] = true } }",
            clearError: "shareflow: plugin '\(plugin)'",
            file: file,
            line: line
        )
    }

    /// An operator's config with out-of-range limits (and one plugin on): refused with one
    /// clear error, or clamped and served; never a trap.
    func configFile(limits: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try runWithConfig(
            "return { limits = { \(limits) }, plugins = { [\"benign-observer\"] = true } }",
            clearError: "shareflow: config file",
            file: file,
            line: line
        )
    }

    /// The startup drive in a folder of its own (its store there), with the config `text`.
    private func runWithConfig(_ text: String, clearError: String, file: StaticString, line: UInt) throws {
        let dir = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("config.lua")
        try CLI.write(text, to: config)
        try runServingOrClearError(
            ["--store", dir.appendingPathComponent("store.sqlite").path, "--config", config.path],
            clearError: clearError,
            file: file,
            line: line
        )
    }

    private func runServingOrClearError(_ options: [String], clearError: String, file: StaticString, line: UInt) throws {
        let start = Date()
        let r = try CLI.run(["run"] + options + ["--plugins", Self.corpus, Self.corpus + "/drive.lua", "startup"], timeout: Self.timeout)
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertFalse(r.stderr.contains("unprotected Lua error"), Self.head(r.stderr), file: file, line: line)
        if r.status == 0 {
            XCTAssertTrue(r.stdout.contains("ok startup\n"), r.stdout, file: file, line: line)
        } else {
            XCTAssertEqual(r.status, 1, Self.explain(r, elapsed: elapsed), file: file, line: line)
            XCTAssertTrue(r.stderr.hasPrefix(clearError), "one clear error line expected:\n" + Self.head(r.stderr), file: file, line: line)
        }
    }

    private func run(
        _ options: [String],
        firstPlugins: [String] = [],
        plugins: [String],
        script name: String,
        arguments: [String] = [],
        expecting: String,
        file: StaticString,
        line: UInt
    ) throws -> CLI.Result {
        let args =
            ["run"] + options + firstPlugins.flatMap { ["--plugins", $0] } + ["--plugins", Self.corpus]
            + plugins.flatMap { ["--plugins", $0] } + [Self.corpus + "/drive.lua", name] + arguments
        let start = Date()
        let r = try CLI.run(args, timeout: Self.timeout)
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertFalse(
            r.stderr.contains("unprotected Lua error"),
            "an unprotected Lua error:\n" + Self.head(r.stderr),
            file: file,
            line: line
        )
        XCTAssertEqual(r.status, 0, Self.explain(r, elapsed: elapsed), file: file, line: line)
        XCTAssertTrue(
            r.stdout.split(separator: "\n").contains(Substring("ok " + expecting)),
            "the driver's checks did not all pass:\n" + r.stdout,
            file: file,
            line: line
        )
        return r
    }

    /// What a non-zero status means, with the output.
    static func explain(_ r: CLI.Result, elapsed: TimeInterval) -> String {
        let what: String
        switch r.status {
        case _ where elapsed >= timeout: what = "hung: killed after \(Int(timeout)) s"
        case 1 where r.stderr.contains("the driver's checks failed"): what = "the driver's checks failed"
        case 1: what = "the script stopped with an error"
        case 4: what = "crashed: SIGILL (a Swift trap)"
        case 5: what = "crashed: SIGTRAP (a Swift trap)"
        case 6: what = "crashed: SIGABRT"
        case 7: what = "crashed: SIGBUS"
        case 11: what = "crashed: SIGSEGV"
        default: what = "exit status \(r.status)"
        }
        return "\(what) after \(String(format: "%.1f", elapsed)) s\n--- stdout\n\(tail(r.stdout))\n--- stderr\n\(head(r.stderr))"
    }

    /// The end of a long output (the driver's verdict is at its end).
    static func tail(_ text: String, lines: Int = 40) -> String {
        let all = text.split(separator: "\n", omittingEmptySubsequences: false)
        return all.count <= lines ? text : "…\n" + all.suffix(lines).joined(separator: "\n")
    }

    /// The start of a long output (a crash report, or the first error, comes first; tracebacks
    /// of deep recursion and register dumps run on for pages).
    static func head(_ text: String, lines: Int = 25) -> String {
        let all = text.split(separator: "\n", omittingEmptySubsequences: false)
        return all.count <= lines ? text : all.prefix(lines).joined(separator: "\n") + "\n…"
    }
}
