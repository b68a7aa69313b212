import CShareFlowSupport
import Foundation
import GRDBSQLite
import ShareFlow

/// SPEC §14's figures: a participant's first sync of a big shared zone beside a raw SQLite
/// scan of the same rows, and the delta after edits and deletes beside the first sync.
extension Benchmarks {
    struct SyncFigures {
        var firstSeconds: [Double] = []
        var rawSeconds: [Double] = []
        /// The first sync reading every record's fields (a feed page hands them out undecoded).
        var firstReadingSeconds: [Double] = []
        var rawBesideReadingSeconds: [Double] = []
        var deltaSeconds: [Double] = []
        var records = 0
        var saveSeconds = 0.0
    }

    func sync(in scratch: URL) throws -> SyncFigures {
        let path = scratch.appendingPathComponent("sync.sqlite").path
        let engine = Engine(store: try Store(path: path))
        engine.logger.logLevel = .critical
        let owner = try engine.accounts.create(emails: ["owner@sync.example"])
        _ = try engine.accounts.create(emails: ["reader@sync.example"])
        let container = "iCloud.com.example.sync"
        let db = try engine.session(for: owner).container(container).privateCloudDatabase
        let zone = try db.saveZone("Library").zoneID
        // The whole zone shared with the reader (a zone share), accepted before the records come.
        let share = Share(zoneID: zone)
        let reader = try db.container.fetchShareParticipantResults([LookupRequest(emailAddress: "reader@sync.example")]).0[0].1.get()
        share.addParticipant(reader)
        if let e = try db.modifyRecords(saving: [share]).error { throw e }
        let readerContainer = try engine.session(for: "reader@sync.example").container(container)
        let metadata = try readerContainer.fetchShareMetadataResults([share.url!]).0[0].1.get()
        _ = try readerContainer.acceptShareResults([metadata]).0[0].1.get()

        var f = SyncFigures()
        f.records = sizes.syncZone
        // The records, saved as an app would (batches of 400, every save logged): timed, the
        // save path with the log, for the README.
        let body = String(repeating: "x", count: 100)
        let saveStart = sf_now_ns()
        for start in stride(from: 0, to: sizes.syncZone, by: 400) {
            let batch = (start..<min(start + 400, sizes.syncZone)).map { i in
                Record(
                    recordType: "Book",
                    recordID: RecordID(recordName: "b\(i)", zoneID: zone),
                    fields: ["title": .string("Book \(i)"), "n": .integer(Int64(i)), "body": .string(body)]
                )
            }
            if let e = try db.modifyRecords(saving: batch).error { throw e }
        }
        f.saveSeconds = Double(sf_now_ns() - saveStart) / 1e9
        let shared = readerContainer.sharedCloudDatabase

        /// A first sync: every page from nil; the records it gave and the token it ends at.
        func firstSync(readingFields: Bool = false) throws -> (Int, String) {
            var token: String?
            var count = 0
            while true {
                let page = try shared.recordZoneChanges(zone, since: token)
                count += page.modifications.count
                if readingFields { for record in page.modifications { count += record.fields.isEmpty ? 1 : 0 } }
                token = page.changeToken
                if !page.moreComing { return (count, token!) }
            }
        }
        var raw: OpaquePointer?
        guard sqlite3_open_v2(path, &raw, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { throw BenchError("cannot open \(path)") }
        defer { sqlite3_close(raw) }
        var scan: OpaquePointer?
        sqlite3_prepare_v2(
            raw,
            """
            SELECT id, name, type, fields, parentName, tag, modifiedAt, shortGUID, createdAt, createdBy, modifiedBy
            FROM record WHERE zoneID = (SELECT id FROM zone WHERE name = 'Library') ORDER BY name
            """,
            -1,
            &scan,
            nil
        )
        defer { sqlite3_finalize(scan) }
        func rawScan() -> Int {
            sqlite3_reset(scan)
            var n = 0
            while sqlite3_step(scan) == SQLITE_ROW {
                for column in 0..<11 { _ = sqlite3_column_text(scan, Int32(column)) }
                n += 1
            }
            return n
        }
        var end = ""
        /// First syncs beside raw scans, paired; `readingFields`: reading each record's fields
        /// as an app keeping a copy would (a feed page hands them out undecoded).
        func firstSyncsBesideScans(readingFields: Bool) throws -> ([Double], [Double]) {
            try pairedRuns(
                ours: {
                    let start = sf_now_ns()
                    let (count, token) = try firstSync(readingFields: readingFields)
                    // Every record and the share; reading fields also counts the share's, empty.
                    precondition(count == sizes.syncZone + 1 + (readingFields ? 1 : 0), "the first sync gives every record and the share: \(count)")
                    end = token
                    return Double(sf_now_ns() - start) / 1e9
                },
                baseline: {
                    let start = sf_now_ns()
                    precondition(rawScan() == sizes.syncZone + 1, "the scan reads every record and the share")
                    return Double(sf_now_ns() - start) / 1e9
                }
            )
        }
        (f.firstSeconds, f.rawSeconds) = try firstSyncsBesideScans(readingFields: false)
        (f.firstReadingSeconds, f.rawBesideReadingSeconds) = try firstSyncsBesideScans(readingFields: true)

        // The delta: 1,000 edits and 100 deletes (a hundredth and a thousandth at smaller sizes).
        let edits = max(10, sizes.syncZone / 100)
        let deletes = max(1, sizes.syncZone / 1000)
        for start in stride(from: 0, to: edits, by: 400) {
            let ids = (start..<min(start + 400, edits)).map { RecordID(recordName: "b\($0 * 7 % sizes.syncZone)", zoneID: zone) }
            let records = try ids.map { try db.fetchRecord($0) }
            for r in records { r["title"] = .string("Edited") }
            if let e = try db.modifyRecords(saving: records).error { throw e }
        }
        let gone = (0..<deletes).map { RecordID(recordName: "b\($0 * 13 % sizes.syncZone + 1)", zoneID: zone) }
        if let e = try db.modifyRecords(deleting: gone, atomically: false).error { throw e }
        for _ in 0...sizes.repetitions {
            let start = sf_now_ns()
            var token: String? = end
            var changed = 0
            var deleted = 0
            while true {
                let page = try shared.recordZoneChanges(zone, since: token)
                changed += page.modifications.count
                deleted += page.deletions.count
                token = page.changeToken
                if !page.moreComing { break }
            }
            precondition(deleted == deletes && changed + deleted >= edits, "the delta gives the edits and the deletes: \(changed), \(deleted)")
            f.deltaSeconds.append(Double(sf_now_ns() - start) / 1e9)
        }
        f.deltaSeconds.removeFirst()
        return f
    }
}
