import CoreMetrics
import Foundation
import Prometheus

/// What a node shows an operator at `GET /metrics`, in Prometheus' text format (SPEC §16):
/// everything counted through swift-metrics in this process (swift-metrics bootstrapped here,
/// once, with swift-prometheus as its backend):
///
/// - `hb_requests` and `http_server_request_duration` (Hummingbird's `MetricsMiddleware`):
///   requests by route template, method and status, and their latency as a histogram;
/// - `shareflow_engine_queue_depth`: jobs waiting for, or running on, the engine's thread;
/// - `shareflow_store_errors_total`, `shareflow_store_retries_total`;
/// - `shareflow_plugin_budget_overruns_total`, `shareflow_faults_injected_total` (`Counted`);
/// - `shareflow_notifications_queued_total`, `shareflow_notifications_delivered_total`,
///   `shareflow_notification_polls_held` (SPEC §20).
///
/// No label holds a caller's value (a token, a name, a path as sent): routes are templates.
///
/// ```sh
/// curl -s localhost:8080/metrics | grep '^hb_requests'
/// ```
enum NodeMetrics {
    /// The process's registry; reading it the first time bootstraps swift-metrics with it.
    static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Request latency in seconds: from a cached read (sub-millisecond) to a slow query.
        factory.defaultDurationHistogramBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
            .map { Duration.nanoseconds(Int64($0 * 1e9)) }
        MetricsSystem.bootstrap(factory)
        return registry
    }()

    static let queueDepth = registry.makeGauge(
        descriptor: MetricNameDescriptor(
            namespace: "shareflow",
            metricName: "engine_queue",
            unitName: "depth",
            helpText: "Jobs waiting for or running on the engine's thread"
        )
    )

    /// SPEC §20: notifications queued by this node's dispatches, handed out by its polls, and
    /// the polls it holds now.
    static let notificationsQueued = Counter(label: "shareflow_notifications_queued_total")
    static let notificationsDelivered = Counter(label: "shareflow_notifications_delivered_total")
    static let notificationPollsHeld = Gauge(label: "shareflow_notification_polls_held")

    /// The scrape: the queue's depth read now, then every metric.
    static func scrape(_ thread: EngineThread) -> [UInt8] {
        queueDepth.set(to: Double(thread.depth))
        return registry.emitToBuffer()
    }
}
