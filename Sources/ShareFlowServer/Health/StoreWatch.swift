import Foundation
import Logging
import ServiceLifecycle
import ShareFlow

/// What a node knows of its store between requests (SPEC §16): whether the store answered
/// the last probe (`/readyz`); the credentials' generation, which any process on the store
/// moves when it revokes a token (`shareflow tokens revoke`): on a change the node forgets the
/// credentials it remembered, so a revoked token is refused by every node within a second; and
/// the directory's, moved by any change to an account: the node reads its accounts again.
final class StoreHealth: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var failure: String?
    private var probing: ContinuousClock.Instant?

    /// A probe unanswered this long makes the node unready before the probe fails: a frozen
    /// store holds it (and the requests queued with it) for the statement timeout and more.
    static let stalledAfter: Duration = .seconds(5)

    /// Nil while the store answers; else why it did not, in one line.
    var problem: String? {
        lock.withLock {
            if let failure { return failure }
            guard let probing else { return nil }
            let waited = ContinuousClock.now - probing
            guard waited >= StoreHealth.stalledAfter else { return nil }
            return "the store has not answered for \(waited.components.seconds) s"
        }
    }

    func probe() { lock.withLock { probing = ContinuousClock.now } }
    func answered() {
        lock.withLock {
            failure = nil
            probing = nil
        }
    }
    func failed(_ why: String) {
        lock.withLock {
            failure = why
            probing = nil
        }
    }
}

/// Probes the store once a second on the engine's thread (one small read), for `StoreHealth`
/// and the credentials' generation.
struct StoreWatch: Service {
    let engine: Engine
    let thread: EngineThread
    let authenticator: CallerAuthenticator
    let health: StoreHealth
    /// The change streams, ended when a credential is revoked.
    var signal: ChangeSignal?
    let logger: Logger
    var interval: Duration = .seconds(1)

    func run() async throws {
        // SIGTERM: change streams end at once (they would otherwise hold the shutdown for
        // `shutdownSeconds`, each waiting for its next poll).
        try await withGracefulShutdownHandler {
            try await watch()
        } onGracefulShutdown: { [signal] in
            signal?.close()
        }
    }

    private func watch() async throws {
        var known: (credentials: Int64, directory: Int64)?
        // SPEC §19 A3: orphan blobs collected every quarter of the grace, the first a minute
        // after start (a node starting is busy enough).
        var nextCollection = ContinuousClock.now + .seconds(min(engine.options.assetGraceSeconds / 4, 60))
        // SPEC §20 N3: idle device tokens pruned hourly, the first an hour after start.
        var nextTokenPrune = ContinuousClock.now + .seconds(3600)
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            if ContinuousClock.now >= nextTokenPrune {
                nextTokenPrune = ContinuousClock.now + .seconds(3600)
                _ = try? await thread.run { [engine] in try engine.pruneIdleDeviceTokens() }
            }
            if ContinuousClock.now >= nextCollection {
                let grace = engine.options.assetGraceSeconds
                nextCollection = ContinuousClock.now + .seconds(max(grace / 4, 1))
                do {
                    let done = try await thread.run { [engine] in try engine.store.collectOrphanAssets(grace: grace) }
                    if done.removed > 0 { logger.info("store \(engine.store.path): removed \(done.removed) asset blob(s) no record names") }
                } catch is CancellationError {
                    return
                } catch {
                    logger.warning("store \(engine.store.path): orphan assets not collected: \((error as? ShareFlowError)?.message ?? "\(error)")")
                }
            }
            do {
                health.probe()
                let generation = try await thread.run { [engine] in try engine.credentials.generations() }
                if health.problem != nil {
                    logger.notice("store \(engine.store.path) answers again")
                    // What was remembered before the store went away may be stale.
                    authenticator.forgetCredentials()
                }
                health.answered()
                // The first probe may come after requests were answered and a token revoked:
                // what was remembered before it is read again (else a revocation between the
                // node's first answers and its first probe went unseen for good).
                if known == nil { authenticator.forgetCredentials() }
                if let known, known.credentials != generation.credentials {
                    authenticator.forgetCredentials()
                    signal?.credentialsChanged()
                }
                if let known, known.directory != generation.directory {
                    // An account changed on another node: cached accounts (the authenticator's,
                    // the Lua bindings') are read again.
                    let engine = self.engine
                    try await thread.run { engine.accountsChanged() }
                    authenticator.forgetCredentials()
                }
                known = generation
            } catch is CancellationError {
                return
            } catch {
                let line = (error as? ShareFlowError)?.message ?? "\(error)"
                if health.problem == nil { logger.error("store \(engine.store.path) does not answer: \(line)") }
                health.failed(line)
            }
            try? await Task.sleep(for: interval)
        }
    }
}
