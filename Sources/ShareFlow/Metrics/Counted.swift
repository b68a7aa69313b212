import CoreMetrics

/// What the engine counts for an operator, through swift-metrics: a node that bootstraps a
/// backend (`shareflow serve`: Prometheus, `GET /metrics`, SPEC §16) sees them; elsewhere
/// swift-metrics drops them. Every label is from a small set (a cause, an operation's name, a
/// configured plugin), never a caller's value, so no request can grow the series.
///
/// The metric objects are made where they count: each asks the backend, which keeps one per
/// name and labels, so a count made before a backend was bootstrapped is the only one lost.
package enum Counted {
    /// A failure of the store itself, as the caller got it (`serviceUnavailable`): `store` is
    /// `sqlite` or `postgres`, `cause` SQLite's error text or PostgreSQL's SQLSTATE (or
    /// `unreachable`).
    package static func storeError(_ store: String, cause: String) {
        Counter(label: "shareflow_store_errors_total", dimensions: [("store", store), ("cause", cause)]).increment()
    }

    /// The store tried again: a PostgreSQL connection opened again after it was lost
    /// (`reconnect`), an SQLite store opened again while another process was making it (`open`),
    /// a request run again because its write found another process's write lock held
    /// (`lock`, SPEC §16 M5), or given up after `store.busyTimeoutMs` (`lock-timeout`).
    package static func storeRetry(_ store: String, reason: String) {
        Counter(label: "shareflow_store_retries_total", dimensions: [("store", store), ("reason", reason)]).increment()
    }

    /// A fault rule fired (SPEC §15): the operation it struck and the fault (`delay` for a
    /// rule that only delayed).
    package static func faultInjected(operation: String, fault: String) {
        Counter(label: "shareflow_faults_injected_total", dimensions: [("operation", operation), ("fault", fault)]).increment()
    }

    /// A plugin's call ended by its budget: `cpu` or `memory`.
    package static func budgetOverrun(plugin: String, budget: String) {
        Counter(label: "shareflow_plugin_budget_overruns_total", dimensions: [("plugin", plugin), ("budget", budget)]).increment()
    }

    /// A policy decision the shared log (PostgreSQL) could not keep: its queue was full while
    /// the table could not be written.
    package static func decisionsDropped() {
        Counter(label: "shareflow_decisions_dropped_total").increment()
    }
}
