import Foundation
import ShareFlow
import ShareFlowLua

/// R39's privacy claim measured (SPEC §17): asking about an unknown URL, a share that takes no
/// requests and a share that blocks the caller cost the same, so timing tells a stranger
/// nothing. Bench key `request_access_silent_spread`: the largest over the smallest p50 of the
/// three (≤ 1.2).
extension Benchmarks {
    /// The p50 of each silent case in microseconds (unknown URL, takes no requests, blocked),
    /// their calls interleaved so a pause on a noisy machine falls on all three alike.
    func accessRequestSilentCases(in scratch: URL) throws -> (unknown: Double, closed: Double, blocked: Double) {
        let path = scratch.appendingPathComponent("access-requests.sqlite").path
        let engine = Engine(store: try Store(path: path))
        engine.logger.logLevel = .critical
        let owner = try engine.accounts.create(emails: ["owner@bench.example"])
        let asker = try engine.accounts.create(emails: ["asker@bench.example"])
        let container = try engine.session(for: owner).container("iCloud.com.example.bench")
        let db = container.privateCloudDatabase
        let zone = try db.saveZone("Asks").zoneID
        func share(_ name: String, allows: Bool) throws -> Share {
            let root = Record(recordType: "Doc", recordID: RecordID(recordName: name, zoneID: zone))
            let s = Share(rootRecord: root)
            s.allowsAccessRequests = allows
            if let e = try db.modifyRecords(saving: [root, s]).error { throw e }
            return s
        }
        // Other shares around, so each lookup meets a populated index.
        for i in 0..<200 { _ = try share("filler\(i)", allows: i % 2 == 0) }
        let closed = try share("closed", allows: false)
        let blocking = try share("blocking", allows: true)
        let askers = try engine.session(for: asker).container("iCloud.com.example.bench")
        let url = try savedURL(blocking.url)
        // Asked once, then blocked by the owner: from now on the asker's requests are silent.
        _ = try engine.requestShareAccess(url: url, caller: asker, container: askers.containerID)
        let owned = try db.fetchRecord(blocking.recordID) as! Share
        owned.blockRequesters(owned.requesters)
        if let e = try db.modifyRecords(saving: [owned]).error { throw e }
        let unknown = engine.shareURL(token: "Zm9yZ2VkLXRva2VuLW9mLTMyLWNoYXJhY3RlcnM")
        let urls = [unknown, try savedURL(closed.url), url]
        let calls = max(300, sizes.lookups / 10)
        var times: [[Double]] = [[], [], []]
        for i in 0..<(calls * 3) {
            let which = i % 3
            let start = DispatchTime.now().uptimeNanoseconds
            let outcome = try engine.requestShareAccess(url: urls[which], caller: asker, container: askers.containerID)
            times[which].append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
            guard outcome == .silent else { throw PluginError("bench: silent case \(which) recorded a request (\(outcome))") }
        }
        return (median(times[0]), median(times[1]), median(times[2]))
    }

    private func savedURL(_ url: String?) throws -> String {
        guard let url else { throw PluginError("bench: a saved share has no URL") }
        return url
    }
}
