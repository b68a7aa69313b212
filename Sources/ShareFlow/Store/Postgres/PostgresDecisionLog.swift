import Foundation
import GRDB

/// The policy decision log on PostgreSQL, shared by every node (SPEC §16): `sf.decisions{}` on
/// any node reads the decisions of all of them. A decision is queued where it is made, inside
/// the engine's transaction, and written once that transaction has ended — so a denial, whose
/// item's changes are rolled back, is logged all the same — in one INSERT on its own commit.
/// The log keeps the latest `PostgresDecisionLog.kept` decisions.
extension Store {
    /// Queues `decision` for the shared log (`PolicySet` calls it on a PostgreSQL store).
    package func queueDecision(_ decision: PolicyDecision) {
        pendingDecisions.append(decision)
    }

    /// Writes the queued decisions. A failure loses them (the log is for people; the requests
    /// they decided have their answers), never the request.
    func flushDecisions(_ postgres: PostgresStore) {
        guard !pendingDecisions.isEmpty else { return }
        let batch = pendingDecisions
        pendingDecisions.removeAll()
        var values: [DatabaseValue] = []
        for d in batch {
            values += [d.point.databaseValue, PostgresDecisionLog.json(d.policies).databaseValue, (d.allow ? 1 : 0).databaseValue,
                       PostgresDecisionLog.json(d.reasons).databaseValue, d.duration.databaseValue,
                       d.time.timeIntervalSince1970.databaseValue]
        }
        let rows = Array(repeating: "(?, ?, ?, ?, ?, ?)", count: batch.count).joined(separator: ", ")
        try? postgres.autocommit("INSERT INTO decision (point, policies, allow, reasons, duration, at) VALUES \(rows)", values)
        decisionsWritten += batch.count
        if decisionsWritten >= 500 {
            decisionsWritten = 0
            try? postgres.autocommit("DELETE FROM decision WHERE id <= (SELECT MAX(id) FROM decision) - \(PostgresDecisionLog.kept)", [])
        }
    }

    /// The latest `limit` decisions of every node, oldest first; nil when the store cannot be
    /// read (the caller shows its own). Decisions still queued (a transaction is open) come
    /// last, numbered after the log's.
    package func sharedDecisions(limit: Int) -> [PolicyDecision]? {
        guard let postgres else { return nil }
        if !inPostgresTransaction { flushDecisions(postgres) }
        guard let rows = try? read({ tx in
            try tx.rows("SELECT id, point, policies, allow, reasons, duration, at FROM decision ORDER BY id DESC LIMIT ?", [limit])
        }) else { return nil }
        var logged: [PolicyDecision] = rows.reversed().compactMap { row in
            guard row.count == 7, case .int64(let id) = row[0].storage, let point = String.fromDatabaseValue(row[1]),
                  let policies = String.fromDatabaseValue(row[2]), case .int64(let allow) = row[3].storage,
                  let reasons = String.fromDatabaseValue(row[4]), let duration = Double.fromDatabaseValue(row[5]),
                  let at = Double.fromDatabaseValue(row[6]) else { return nil }
            return PolicyDecision(id: Int(id), point: point, policies: PostgresDecisionLog.strings(policies), allow: allow != 0,
                                  reasons: PostgresDecisionLog.strings(reasons), duration: duration,
                                  time: Date(timeIntervalSince1970: at))
        }
        let last = logged.last?.id ?? 0
        for (n, d) in pendingDecisions.enumerated() {
            logged.append(PolicyDecision(id: last + n + 1, point: d.point, policies: d.policies, allow: d.allow, reasons: d.reasons,
                                         duration: d.duration, time: d.time))
        }
        return Array(logged.suffix(limit))
    }
}

enum PostgresDecisionLog {
    /// Decisions the shared log keeps (older ones are deleted every 500 written by a node).
    static let kept = 10_000
    static func json(_ strings: [String]) -> String {
        (try? String(decoding: JSONSerialization.data(withJSONObject: strings), as: UTF8.self)) ?? "[]"
    }

    static func strings(_ json: String) -> [String] {
        (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String] ?? []
    }
}
