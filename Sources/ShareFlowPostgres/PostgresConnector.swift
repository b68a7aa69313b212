import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import ShareFlow

/// How every connection to one PostgreSQL store is opened: its place, its password (found
/// once), TLS, and the session's settings. The store's connection, the decision log's, the
/// rate buckets' and the change listener's all open through it, so none holds the store.
struct PostgresConnector: Sendable {
    let location: PostgresLocation
    let settings: PostgresSettings
    /// The password the URL, the environment or a password file gives, found once.
    private let password: Result<String?, any Error>
    let logger: Logger

    init(location: PostgresLocation, settings: PostgresSettings) {
        self.location = location
        self.settings = settings
        password = Result { try PostgresPassword.find(for: location, passwordFile: settings.passwordFile) }
        var logger = Logger(label: "shareflow.postgres")
        logger.logLevel = .critical
        self.logger = logger
    }

    /// A new connection whose statements give up after `statementTimeoutMs`, as does opening
    /// it, and whose answers are waited for `answerMarginMs` more: the engine's (the store's
    /// settings) and the shared decision log's (its own, shorter).
    static let checkClient = """
        DO $$ BEGIN PERFORM set_config('client_connection_check_interval', '250', false);
        EXCEPTION WHEN undefined_object THEN NULL; END $$
        """

    func openSession(statementTimeoutMs: Int, answerMarginMs: Int = 5_000) throws -> PostgresSession {
        var configuration = try configuration()
        configuration.options.connectTimeout = .milliseconds(Int64(statementTimeoutMs))
        configuration.options.additionalStartupParameters = configuration.options.additionalStartupParameters.map {
            $0.0 == "statement_timeout" ? ($0.0, String(statementTimeoutMs)) : $0
        }
        do {
            let connection = try PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.next(),
                configuration: configuration,
                id: 2,
                logger: logger
            ).wait()
            let session = PostgresSession(
                connection: connection,
                label: location.label,
                logger: logger,
                statementTimeoutMs: statementTimeoutMs,
                answerMarginMs: answerMarginMs
            )
            // A statement still running when its connection is closed (a lock asked for on the
            // spare that the node ended, a node killed while its write waits for a lock) is
            // ended within a quarter second: PostgreSQL otherwise notices a closed client only
            // when it next writes to it, and the waiting statement would hold the locks it has
            // until it got the rest or timed out. PostgreSQL 14 and later; older ones go without.
            session.pipeline(PostgresConnector.checkClient)
            return session
        } catch let error as PSQLError {
            throw PostgresFailure(error, sql: "")
        }
    }

    /// A new connection for asynchronous work (the rate buckets, the change listener).
    func connect(id: Int) async throws -> PostgresConnection {
        try await PostgresConnection.connect(on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration(), id: id, logger: logger)
    }

    /// How every connection of this store is opened: its place, TLS, and the session's settings.
    func configuration() throws -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: location.host,
            port: location.port,
            username: location.user,
            password: try password.get(),
            database: location.database,
            tls: .disable
        )
        if location.requiresTLS {
            do {
                configuration.tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            } catch {
                throw ShareFlowError(.serviceUnavailable, "store \(location.label): TLS cannot be set up (\(error))").forOperator()
            }
        }
        configuration.options.connectTimeout = .milliseconds(Int64(settings.statementTimeoutMs))
        // Settings of the session, sent with the start-up message (no round trip): the schema,
        // and a cap on each statement and on a transaction left idle (a node killed mid-write
        // releases its lock when PostgreSQL notices the connection gone; a stalled one, here).
        configuration.options.additionalStartupParameters = [
            ("search_path", PostgresSchema.name),
            ("statement_timeout", String(settings.statementTimeoutMs)),
            ("idle_in_transaction_session_timeout", String(max(settings.statementTimeoutMs * 4, 10_000))),
            ("application_name", "shareflow"),
        ]
        return configuration
    }
}
