import Foundation
import Logging
import ShareFlow
import ShareFlowPostgres
import ShareFlowServer

#if canImport(Glibc)
import Glibc
#endif

/// `shareflow bench --only notify` (SPEC §12 wave 4, §20): what subscriptions cost a write, and
/// how long a committed write takes to reach a held webcourier poll.
///
/// - `notify_1000_subscriptions_write_ratio`: one-record saves in a zone 1,000 subscriptions
///   watch (a zone subscription and 999 query subscriptions) against the same saves in an
///   unwatched zone of a store built the same way, in alternating rounds, the engine dispatching
///   as `serve` does (`.deferred`: the write leaves one outbox row; the subscriptions are
///   evaluated after it, off its path). The fan-out is reported beside it, not hidden:
///   `notify_fanout_1000_us`, one dispatch of one change to those 1,000 subscriptions.
/// - `notify_delay_p50_ms` / `_p99_ms`: a server in this process; a poll held on one loopback
///   connection, a records/modify sent on another; from the write's request sent to the poll's
///   answer read (the write's own time included). With `--postgres`, two nodes on a copy of
///   the store, writing through one and polling the other (`notify_delay_pg2_*`).
extension Benchmarks {
    struct NotifyFigures {
        var watched: [Double] = [], unwatched: [Double] = []
        var fanout: [Double] = []
        var delays: [Double] = []
        var delaysPG: [Double] = []
    }

    static let notifyContainer = "iCloud.com.example.notify"

    func notifications(in scratch: URL) throws -> NotifyFigures {
        var f = NotifyFigures()
        let subscriptions = sizes.notifySubscriptions
        let stores = try [true, false].map { watched in
            try NotifyStore(
                path: scratch.appendingPathComponent(watched ? "watched.sqlite" : "plain.sqlite").path,
                subscriptions: watched ? subscriptions : 0
            )
        }
        let rounds = max(2 * sizes.repetitions, 2)
        let saves = sizes.logOnes
        for round in 0..<rounds {
            for store in round % 2 == 0 ? stores : stores.reversed() {
                let time = try store.saves(saves, round: round)
                if store.subscriptions > 0 {
                    f.watched.append(time)
                    // The fan-out of what the round wrote, after it, outside its time.
                    let start = DispatchTime.now().uptimeNanoseconds
                    var report = try store.engine.dispatchNotifications()
                    while report.more { report = try store.engine.dispatchNotifications() }
                    f.fanout.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000 / Double(saves))
                } else {
                    f.unwatched.append(time)
                }
            }
            progress(
                String(
                    format: "  notify, round %d: watched %.1f µs, plain %.1f µs, fan-out %.0f µs",
                    round + 1,
                    f.watched.last!,
                    f.unwatched.last!,
                    f.fanout.last!
                )
            )
        }
        for store in stores { store.engine.store.close() }
        f.delays = try notificationDelays(in: scratch, postgres: nil)
        if let template = postgres { f.delaysPG = try notificationDelays(in: scratch, postgres: template) }
        return f
    }

    /// From a write's request sent to the held poll's answer read, in ms, `sizes.notifyDelays`
    /// times; on PostgreSQL through two nodes (write on one, poll the other).
    private func notificationDelays(in scratch: URL, postgres template: String?) throws -> [Double] {
        let path = scratch.appendingPathComponent("delay-\(UUID().uuidString).sqlite").path
        let seed = Engine(store: try Store(path: path))
        seed.logger.logLevel = .critical
        let owner = try seed.accounts.create(emails: ["owner@notify.example"])
        let db = try seed.session(for: owner).container(Self.notifyContainer).privateCloudDatabase
        let zone = try db.saveZone("Live").zoneID
        try db.save(.zone(zone, id: "live"))
        let api = try Credentials.newAPIToken(container: Self.notifyContainer, engine: seed)
        let web = try Credentials.newWebAuthToken(container: Self.notifyContainer, account: owner, ttl: 3600, engine: seed)
        let secret = try seed.createDeviceToken(
            account: owner.id,
            container: ContainerID(Self.notifyContainer),
            apnsEnvironment: "production",
            credentialHash: nil,
            clientID: nil
        ).pollSecret
        var engines = [seed]
        var scratchURL: String?
        if let template {
            let url = try PostgresStore.makeScratch(template: template)
            scratchURL = url
            let cluster = try Store.open(url)
            _ = try seed.store.copy(to: cluster)
            cluster.close()
            seed.store.close()
            engines = try (0..<2).map { _ in
                let node = Engine(store: try Store.open(url))
                node.logger.logLevel = .critical
                return node
            }
        }
        defer {
            for engine in engines { engine.store.close() }
            if let scratchURL { PostgresStore.dropScratch(scratchURL) }
        }
        let (ports, tasks) = try Self.startServers(engines) { $0.pollSeconds = 30 }
        defer { for task in tasks { task.cancel() } }
        progress("notify: \(sizes.notifyDelays) writes to a held poll (\(template == nil ? "SQLite, one node" : "PostgreSQL, two nodes"))")
        let writer = try HTTPConnection(port: ports[0])
        let poller = try HTTPConnection(port: ports.last!)
        defer {
            writer.close()
            poller.close()
        }
        let write = "/database/1/\(Self.notifyContainer)/development/private/records/modify?ckAPIToken=\(api)&ckWebAuthToken=\(web)"
        var delays: [Double] = []
        // The poll's connection is used by its thread alone while the write goes out on another.
        final class Answer: @unchecked Sendable {
            var poller: HTTPConnection?
            var at: UInt64 = 0
            var body = ""
            var error: Error?
        }
        for n in 0..<sizes.notifyDelays {
            let answer = Answer()
            answer.poller = poller
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                do {
                    answer.body = try answer.poller!.get("/webcourier/1/\(secret)").1
                } catch { answer.error = error }
                answer.at = DispatchTime.now().uptimeNanoseconds
                done.signal()
            }
            thread.start()
            // The poll is held by now (and if not, the write's notification waits in its queue).
            usleep(UInt32.random(in: 20_000...60_000))
            let sent = DispatchTime.now().uptimeNanoseconds
            let body =
                #"{"zoneID":{"zoneName":"Live"},"operations":[{"operationType":"create","record":{"recordType":"Note","recordName":"n\#(n)","fields":{}}}]}"#
            let (status, failed) = try writer.post(write, body: body)
            guard status == 200, !failed else { throw BenchError("a write the poll waits for failed: \(status)") }
            guard done.wait(timeout: .now() + 30) == .success else { throw BenchError("a poll was not answered in 30 s") }
            if let e = answer.error { throw e }
            guard answer.body.contains("\"fet\"") else { throw BenchError("a poll answered without the notification: \(answer.body)") }
            delays.append(Double(answer.at - sent) / 1e6)
        }
        return delays
    }

    /// The `p`th percentile (0…1) of `values`.
    func percentile(_ values: [Double], _ p: Double) -> Double {
        let s = values.sorted()
        return s[min(s.count - 1, Int((Double(s.count) * p).rounded(.down)))]
    }
}

/// One store of the subscription-cost figure: an owner's zone, watched by `subscriptions`
/// subscriptions or by none, its saves timed.
private struct NotifyStore {
    let engine: Engine
    let db: CloudDatabase
    let zone: RecordZoneID
    let subscriptions: Int

    init(path: String, subscriptions: Int) throws {
        self.subscriptions = subscriptions
        engine = Engine(store: try Store(path: path))
        engine.logger.logLevel = .critical
        engine.options.notifications.dispatch = .deferred
        engine.options.notifications.maxSubscriptionsPerUser = max(1000, subscriptions)
        engine.options.notifications.queueMax = 100_000
        let owner = try engine.accounts.create(emails: ["owner@notify.example"])
        db = try engine.session(for: owner).container(Benchmarks.notifyContainer).privateCloudDatabase
        zone = try db.saveZone("Watched").zoneID
        if subscriptions > 0 { try db.save(.zone(zone, id: "zone")) }
        for k in 0..<max(0, subscriptions - 1) {
            try db.save(.query(recordType: "Note", predicate: .compare(key: "n", op: .equal, value: .integer(Int64(k))), in: zone, id: "q\(k)"))
        }
        _ = try engine.createDeviceToken(
            account: owner.id,
            container: ContainerID(Benchmarks.notifyContainer),
            apnsEnvironment: "production",
            credentialHash: nil,
            clientID: nil
        )
    }

    /// Microseconds per one-record save of `count` saves.
    func saves(_ count: Int, round: Int) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        for i in 0..<count {
            let record = Record(recordType: "Note", recordID: RecordID(recordName: "r\(round)-\(i)", zoneID: zone), fields: ["n": .integer(Int64(i))])
            if let e = try db.modifyRecords(saving: [record]).error { throw e }
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1000 / Double(count)
    }
}
