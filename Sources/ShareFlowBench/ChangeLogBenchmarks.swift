import CShareFlowSupport
import Foundation
import ShareFlow

/// What the change log (SPEC §14) adds to the save path: the same saves and accepts on a store
/// that logs and on one that does not (`Store.logsChanges`: a baseline only a bench makes, its
/// feeds wrong), in alternating rounds on file stores, each figure the median of the rounds'
/// ratios of time (1.10 = the log adds 10%).
extension Benchmarks {
    /// One figure: microseconds per operation in each round, logged and not.
    struct LogCost {
        let key: String
        var logged: [Double] = []
        var unlogged: [Double] = []
    }

    /// The cases, in the order they run each round.
    static let logCostCases = ["save_batch", "save_batch_shared", "save_one", "save_one_shared", "edit_one", "accept"]

    func changeLogCost(in scratch: URL) throws -> [LogCost] {
        let rounds = max(2 * sizes.repetitions, 2)
        let batch = sizes.logBatch
        let ones = sizes.logOnes
        let stores = try [true, false].map { logs in
            try LogCostStore(
                path: scratch.appendingPathComponent(logs ? "logged.sqlite" : "unlogged.sqlite").path,
                logs: logs,
                accepts: rounds * ones,
                bench: self
            )
        }
        var figures = Benchmarks.logCostCases.map { LogCost(key: $0) }
        for round in 0..<rounds {
            // Alternate which store goes first, so neither gets the warmer cache.
            for store in round % 2 == 0 ? stores : stores.reversed() {
                let times = try store.round(round, batch: batch, ones: ones)
                for (i, time) in times.enumerated() {
                    if store.logs { figures[i].logged.append(time) } else { figures[i].unlogged.append(time) }
                }
            }
            progress(
                String(
                    format: "  log on/off, round %d: batch %.2f, one %.2f, accept %.2f",
                    round + 1,
                    figures[0].logged.last! / figures[0].unlogged.last!,
                    figures[2].logged.last! / figures[2].unlogged.last!,
                    figures[5].logged.last! / figures[5].unlogged.last!
                )
            )
        }
        return figures
    }
}

/// One store of the log-cost figures: an owner's unshared zone and a zone shared whole with
/// a reader who accepted, and shares seeded for another guest to accept.
private struct LogCostStore {
    let logs: Bool
    let db: CloudDatabase
    let plain: RecordZoneID, shared: RecordZoneID
    let guest: Container
    let metadatas: [ShareMetadata]

    init(path: String, logs: Bool, accepts: Int, bench: Benchmarks) throws {
        self.logs = logs
        let engine = Engine(store: try Store(path: path))
        engine.store.logsChanges = logs
        engine.logger.logLevel = .critical
        let guestAccount = try engine.accounts.create(emails: ["guest@log.example"])
        _ = try engine.accounts.create(emails: ["reader@log.example"])
        let urls = try bench.bulkShares(engine, count: accepts, guests: [(guestAccount.id, "guest@log.example")])
        let container = try engine.session(for: "owner@example.com").container("iCloud.com.example.bench")
        db = container.privateCloudDatabase
        plain = try db.saveZone("Plain").zoneID
        shared = try db.saveZone("Shared").zoneID
        let share = Share(zoneID: shared)
        share.addParticipant(try container.fetchShareParticipantResults([LookupRequest(emailAddress: "reader@log.example")]).0[0].1.get())
        if let e = try db.modifyRecords(saving: [share]).error { throw e }
        let reader = try engine.session(for: "reader@log.example").container("iCloud.com.example.bench")
        _ = try reader.acceptShareResults([try reader.fetchShareMetadataResults([share.url!]).0[0].1.get()]).0[0].1.get()
        guest = try engine.session(for: guestAccount).container("iCloud.com.example.bench")
        let (metas, error) = guest.fetchShareMetadataResults(urls)
        if let error { throw error }
        metadatas = try metas.map { try $0.1.get() }
    }

    /// One round of every case (`Benchmarks.logCostCases`): µs per record saved or share accepted.
    func round(_ n: Int, batch: Int, ones: Int) throws -> [Double] {
        func timed(_ count: Int, _ body: () throws -> Void) throws -> Double {
            let start = sf_now_ns()
            try body()
            return Double(sf_now_ns() - start) / 1e3 / Double(count)
        }
        func record(_ zone: RecordZoneID, _ name: String, _ i: Int) -> Record {
            Record(
                recordType: "Book",
                recordID: RecordID(recordName: name, zoneID: zone),
                fields: ["title": .string("Book \(i)"), "n": .integer(Int64(i))]
            )
        }
        func save(_ records: [Record]) throws {
            if let e = try db.modifyRecords(saving: records).error { throw e }
        }
        var times: [Double] = []
        for zone in [plain, shared] {
            times.append(try timed(batch) { try save((0..<batch).map { record(zone, "b\(n)-\($0)", $0) }) })
        }
        for zone in [plain, shared] {
            times.append(try timed(ones) { for i in 0..<ones { try save([record(zone, "o\(n)-\(i)", i)]) } })
        }
        // Edits: the round's one-record saves in the unshared zone, fetched and changed.
        let fetched = try (0..<ones).map { i in try db.fetchRecord(RecordID(recordName: "o\(n)-\(i)", zoneID: plain)) }
        times.append(
            try timed(ones) {
                for (i, record) in fetched.enumerated() {
                    record["n"] = .integer(Int64(-i))
                    try save([record])
                }
            }
        )
        let slice = Array(metadatas[n * ones..<(n + 1) * ones])
        times.append(
            try timed(ones) {
                let (results, error) = guest.acceptShareResults(slice)
                if let error { throw error }
                precondition(results.count == slice.count)
            }
        )
        return times
    }
}
