import Foundation

/// What a dry run would have changed: counts by kind and sign, and the changes grouped (the
/// accounts, each zone's records, each share with its participants), each group sorted.
///
/// ```swift
/// let before = try engine.snapshot()
/// // … changes made in a transaction that is rolled back afterwards, as `shareflow run --dry-run` does
/// let report = before.changes(to: try engine.snapshot())
/// print("\(report.total) changes (\(report.summary))")
/// for line in report.lines { print(line) }
/// ```
public struct ChangeReport {
    /// One item added (`+`), changed (`~`) or removed (`-`).
    public struct Change: Equatable {
        /// The kind of item: one of `StoreSnapshot.kinds`.
        public var kind: String
        /// `+` added, `~` changed, `-` removed.
        public var sign: String
        /// The item as a person reads it; for a change, the item before and after (`old  →  new`).
        public var text: String
    }

    /// Kind → sign (`+`, `~`, `-`) → how many items.
    public var counts: [String: [String: Int]] = [:]
    /// The changes by group, titled — the accounts, then each zone with its records, then each share with
    /// its participants — each group's sorted by kind, then text.
    public var groups: [(title: String, changes: [Change])] = []

    /// How many items changed, of every kind and sign.
    public var total: Int { counts.values.reduce(0) { $0 + $1.values.reduce(0, +) } }

    /// "+4 accounts, +1 zone, ~1 share, -2 participants", in kind order.
    public var summary: String {
        var parts: [String] = []
        for kind in StoreSnapshot.kinds {
            for sign in ["+", "~", "-"] {
                guard let n = counts[kind]?[sign], n > 0 else { continue }
                parts.append("\(sign)\(n) \(n == 1 ? String(kind.dropLast()) : kind)")
            }
        }
        return parts.joined(separator: ", ")
    }

    /// The report as text, one line per change under its group's title.
    public var lines: [String] {
        groups.flatMap { group in
            ["\(group.title):"] + group.changes.map { "  \($0.sign) \(String($0.kind.dropLast())) \($0.text)" }
        }
    }

    /// The report as JSON-ready values.
    public var json: [String: Any] {
        [
            "changes": total, "counts": counts,
            "groups": groups.map { g in
                ["title": g.title, "changes": g.changes.map { ["kind": $0.kind, "change": $0.sign, "item": $0.text] }] as [String: Any]
            },
        ]
    }
}

extension StoreSnapshot {
    /// What changed from this snapshot to `after`, grouped and sorted.
    public func changes(to after: StoreSnapshot) -> ChangeReport {
        var report = ChangeReport()
        var groups: [String: [ChangeReport.Change]] = [:]
        for kind in StoreSnapshot.kinds {
            let old = items[kind] ?? [:]
            let new = after.items[kind] ?? [:]
            for key in Set(old.keys).union(new.keys) {
                let change: ChangeReport.Change
                switch (old[key], new[key]) {
                case (nil, let n?): change = .init(kind: kind, sign: "+", text: n.text)
                case (let o?, nil): change = .init(kind: kind, sign: "-", text: o.text)
                // Only what an item says counts: a participant whose share was renamed is in a
                // group of another title, not changed.
                case (let o?, let n?) where o.text != n.text: change = .init(kind: kind, sign: "~", text: "\(o.text)  →  \(n.text)")
                default: continue
                }
                report.counts[kind, default: [:]][change.sign, default: 0] += 1
                groups[(new[key] ?? old[key])!.group, default: []].append(change)
            }
        }
        let order = { (g: String) -> (Int, String) in (g == "accounts" ? 0 : g.hasPrefix("zone ") ? 1 : 2, g) }
        report.groups = groups.keys.sorted { order($0) < order($1) }.map { title in
            let kindRank = { (k: String) in StoreSnapshot.kinds.firstIndex(of: k) ?? 9 }
            return (title, groups[title]!.sorted { (kindRank($0.kind), $0.text, $0.sign) < (kindRank($1.kind), $1.text, $1.sign) })
        }
        return report
    }
}
