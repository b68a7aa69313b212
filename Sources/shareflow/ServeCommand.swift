import ArgumentParser
import Foundation
import Logging
import ShareFlow
import ShareFlowLua
import ShareFlowServer

extension ShareFlowCommand {
    struct Serve: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Serve the store over CloudKit Web Services (HTTP), SPEC §13.",
            discussion:
                "Prints 'listening on http://HOST:N' when ready (https with --tls-cert and --tls-key). SIGTERM stops accepting, finishes the requests in flight, checkpoints the store and exits 0. Tokens come from `shareflow tokens`."
        )

        @OptionGroup var global: GlobalOptions

        @Option(name: .long, help: "Address to listen on.")
        var host = "127.0.0.1"

        @Option(name: .long, help: "Port to listen on (0: any free port).")
        var port = 8080

        @Option(name: .long, help: "The URL clients reach this server at (share URLs are made from it).")
        var publicURL: String?

        @Option(
            name: .customLong("cors-origin"),
            help:
                "An origin (https://app.example.com) whose web pages may read the CloudKit routes' answers (CORS); repeatable, or '*' for any (development)."
        )
        var corsOrigins: [String] = []

        @Option(name: .customLong("tls-cert"), help: "Serve https: the certificate chain, PEM (the leaf first). With --tls-key.")
        var tlsCert: String?

        @Option(name: .customLong("tls-key"), help: "Serve https: the certificate's private key, PEM. With --tls-cert.")
        var tlsKey: String?

        @Flag(name: .long, help: "Print every route the server answers (METHOD path-template) and exit; docs/openapi.yaml describes them.")
        var routes = false

        @Flag(
            name: .long,
            help:
                "Serve the web console at /console (sign in with a token of 'shareflow tokens admin') and sign people in at /signin with one-time codes ('shareflow tokens signin')."
        )
        var console = false

        func validate() throws {
            guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535, got \(port)") }
            for origin in corsOrigins where origin != "*" && CloudKitServer.normalizedOrigin(origin) == nil {
                throw ValidationError(
                    "--cors-origin must be an origin like https://app.example.com (scheme, host and port only) or '*', got '\(origin)'"
                )
            }
            if (tlsCert == nil) != (tlsKey == nil) {
                throw ValidationError("--tls-cert and --tls-key go together: https needs the certificate and its private key")
            }
            if let publicURL {
                guard let url = URLComponents(string: publicURL), ["http", "https"].contains(url.scheme ?? ""), url.host?.isEmpty == false,
                    url.query == nil, url.fragment == nil
                else {
                    throw ValidationError(
                        "--public-url must be an http or https URL without query or fragment, like https://share.example.com, got '\(publicURL)'"
                    )
                }
            }
        }

        func run() throws {
            if routes {
                // The console's routes are its own (docs/reference/console.md), not the API's.
                let all = CloudKitAPI.routes + (console ? CloudKitServer.consoleRoutes : [])
                if global.json { printJSON(["routes": all]) } else { for route in all { print(route) } }
                return
            }
            // Read first: a certificate that cannot serve is said before anything opens.
            var tls: ServerTLS?
            if let tlsCert, let tlsKey {
                do {
                    tls = try ServerTLS(certificate: tlsCert, key: tlsKey)
                } catch {
                    throw CLIFailure(message: "serve: \(error)")
                }
            }
            // Before the store opens: its retries are counted for GET /metrics.
            CloudKitServer.bootstrapMetrics()
            let engine = try global.makeEngine()
            if let publicURL {
                var base = publicURL
                while base.hasSuffix("/") { base.removeLast() }
                engine.options.publicURL = base
            }
            let plugins = try global.loadPlugins(into: engine)
            let config = try global.pluginConfig()
            // SPEC §18 P6: candidate versions asked beside the live ones, never deciding.
            var candidates: PluginManager?
            if let folder = config.shadowPlugins {
                let shadow = PluginManager(engine: engine, directories: [folder], config: config, dataDirectory: plugins.dataDirectory)
                shadow.isShadow = true
                do {
                    try shadow.loadEnabled()
                } catch {
                    throw CLIFailure(message: "policies.shadow \(folder): the candidate plugins do not load: \(error)")
                }
                candidates = shadow
            }
            let reloads = Serve.reloadOnHangUp(engine: engine, plugins: plugins, global: global.settings)
            defer { _ = candidates }
            var server = CloudKitServer(engine: engine, host: host, port: port, logger: engine.logger)
            server.rateLimit = config.rateLimit
            server.corsOrigins = corsOrigins
            server.tls = tls
            if console {
                server.console = WebConsoleOptions()
                let loopback = ["127.0.0.1", "::1", "localhost"].contains(host)
                if tls == nil && !loopback {
                    engine.logger.notice(
                        "the console is served over plain http on \(host): its admin token and session cookie cross the network unencrypted (give --tls-cert and --tls-key)"
                    )
                }
            }
            server.maxBodyBytes = Int(config.maxBodyMiB * 1024 * 1024)
            if let v = config.server["maxResponseMiB"] { server.maxResponseBytes = Int(v * 1024 * 1024) }
            if let v = config.server["maxConnections"] { server.maxConnections = Int(v) }
            if let v = config.server["headerSeconds"] { server.deadlines.headerSeconds = v }
            if let v = config.server["bodySeconds"] { server.deadlines.bodySeconds = v }
            if let v = config.server["idleSeconds"] { server.deadlines.idleSeconds = v }
            if let v = config.server["shutdownSeconds"] { server.shutdownSeconds = v }
            if let v = config.notifications["pollSeconds"] { server.pollSeconds = v }
            if let v = config.notifications["maxHeldPolls"] { server.maxHeldPolls = Int(v) }
            // No query holds one of the engine's threads (the writer, or a reader beside it) for
            // long (SPEC §13, wave 3).
            engine.options.queryTimeLimit = config.server["querySeconds"] ?? 2
            // An IPv6 address in brackets: the line is a URL a client can use.
            let host = self.host.contains(":") ? "[\(self.host)]" : self.host
            let scheme = tls == nil ? "http" : "https"
            server.onListening = { port in
                print("listening on \(scheme)://\(host):\(port)")
                fflush(nil)
            }
            let done = DispatchSemaphore(value: 0)
            final class Outcome: @unchecked Sendable { var error: Error? }  // written before `done` signals
            let outcome = Outcome()
            let running = server
            Task {
                do { try await running.run() } catch { outcome.error = error }
                done.signal()
            }
            done.wait()
            reloads.cancel()
            if let error = outcome.error { throw CLIFailure(message: "serve: \(error)") }
        }

        /// SIGHUP re-reads the config file and reloads every enabled plugin (SPEC §18 P1), between
        /// two of the engine's calls: all of them, or — when the config does not parse or any
        /// plugin does not load, check and set up on a scratch engine — none, every plugin
        /// keeping its running version and the log saying why. Never a point without its policies.
        static func reloadOnHangUp(engine: Engine, plugins: PluginManager, global: GlobalSettings) -> DispatchSourceSignal {
            final class Reloading: @unchecked Sendable {  // used on the reload queue alone, under the engine's lock
                let engine: Engine
                let plugins: PluginManager
                let global: GlobalSettings
                init(_ engine: Engine, _ plugins: PluginManager, _ global: GlobalSettings) {
                    (self.engine, self.plugins, self.global) = (engine, plugins, global)
                }
                func reload() {
                    do {
                        let config = try global.pluginConfig()
                        let names = try engine.betweenCalls { () -> [String] in
                            let names = try plugins.reloadAll(with: config)
                            engine.policies.mask = config.policyMask
                            engine.store.decisionLog?.kept = config.keepDecisions
                            return names
                        }
                        engine.logger.notice("SIGHUP: plugins reloaded: \(names.isEmpty ? "none enabled" : names.joined(separator: ", "))")
                    } catch {
                        engine.logger.error("SIGHUP: nothing reloaded, the running plugins stay: \(error)")
                    }
                }
            }
            let reloading = Reloading(engine, plugins, global)
            signal(SIGHUP, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: DispatchQueue(label: "shareflow.reload"))
            source.setEventHandler { reloading.reload() }
            source.resume()
            return source
        }
    }

    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keys",
            abstract: "Register server-to-server keys (ECDSA P-256) that sign requests to the public database.",
            subcommands: [Add.self]
        )

        struct Add: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "add",
                abstract: "Register a public key for a container and print its key ID (X-Apple-CloudKit-Request-KeyID).",
                discussion:
                    "Make a key pair with: openssl ecparam -name prime256v1 -genkey -noout -out eckey.pem && openssl ec -in eckey.pem -pubout -out eckey.pub.pem. Requests signed with it act as --as, or as an account made for the key."
            )
            @OptionGroup var global: GlobalOptions
            @Option(name: .long, help: "The container, e.g. iCloud.com.example.app.")
            var container: String
            @Option(name: .long, help: "The public key, PEM (a private key file is refused).")
            var publicKey: String
            @Option(name: .long, help: "The account the key's requests act as: email, phone or userRecordID (default: an account of its own).")
            var `as`: String?

            func run() throws {
                let pem: String
                do {
                    pem = try String(contentsOfFile: publicKey, encoding: .utf8)
                } catch {
                    throw CLIFailure(message: "--public-key \(publicKey): cannot read it: \((error as NSError).localizedDescription)")
                }
                if pem.contains("PRIVATE KEY") {
                    throw CLIFailure(message: "--public-key \(publicKey): is a private key; give the public one (openssl ec -in eckey.pem -pubout)")
                }
                guard let id = Credentials.keyID(container: container, publicKeyPEM: pem) else {
                    throw CLIFailure(
                        message:
                            "--public-key \(publicKey): not an ECDSA P-256 public key in PEM (openssl ecparam -name prime256v1 -genkey -noout -out eckey.pem && openssl ec -in eckey.pem -pubout)"
                    )
                }
                let engine = try global.makeEngine()
                defer { engine.store.checkpoint() }
                let account: Account
                if let who = `as` {
                    guard let found = try engine.accounts.find(who) else {
                        throw CLIFailure(message: "--as \(who): no account has this address in store \(global.store)")
                    }
                    account = found
                } else if let known = try engine.credentials.find(.serverKey, container: container, environment: .default, hash: id)?.accountID,
                    let found = try engine.accounts.account(id: known)
                {
                    account = found
                } else {
                    // An account needs an address: one under .invalid (RFC 2606), which no
                    // person has, so no invitation ever reaches it by mistake.
                    account = try engine.accounts.create(
                        emails: ["key-\(id.prefix(16))@shareflow.invalid"],
                        name: NameComponents(givenName: "Server key", familyName: String(id.prefix(8)))
                    )
                }
                do {
                    _ = try Credentials.addServerKey(container: container, publicKeyPEM: pem, account: account, engine: engine)
                } catch let e as Credentials.KeyError {
                    throw CLIFailure(message: "--public-key \(publicKey): \(e.description)")
                }
                if global.json { printJSON(["container": container, "keyID": id, "userRecordName": account.userRecordID]) } else { print(id) }
            }
        }
    }

    struct Tokens: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "tokens",
            abstract: "Make tokens for the server: an API token per container, a web auth token or a one-time sign-in code per user; revoke one.",
            subcommands: [API.self, User.self, SignIn.self, Admin.self, Revoke.self]
        )

        struct Revoke: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "revoke",
                abstract: "Revoke a token (API, web auth or admin) or a sign-in code: every server on the store refuses it within a second."
            )
            @OptionGroup var global: GlobalOptions
            @Argument(help: "The token or sign-in code, as it was printed (or a server-to-server key's ID).")
            var token: String

            func run() throws {
                let engine = try global.makeEngine()
                defer { engine.store.checkpoint() }
                // Tokens are kept by their hash; a server-to-server key by its ID.
                var removed = try engine.credentials.revoke(hash: Credentials.hash(token))
                if removed == 0 { removed = try engine.credentials.revoke(hash: token.lowercased()) }
                // A sign-in code by the hash of its normal form, however it was typed.
                if removed == 0, let code = SignInCodes.normalised(token) { removed = try engine.credentials.revoke(hash: Credentials.hash(code)) }
                guard removed > 0 else {
                    throw CLIFailure(message: "no token of store \(engine.store.path) is this one (nothing was revoked)")
                }
                if global.json { printJSON(["revoked": true]) } else { print("revoked") }
            }
        }

        struct Admin: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "admin",
                abstract: "Print a new admin token: it opens the server's admin routes (/admin/1/faults), no container's data."
            )
            @OptionGroup var global: GlobalOptions

            func run() throws {
                let engine = try global.makeEngine()
                defer { engine.store.checkpoint() }
                let token = try Credentials.newAdminToken(engine: engine)
                if global.json { printJSON(["adminToken": token]) } else { print(token) }
            }
        }

        struct API: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "api",
                abstract: "Print a new API token (ckAPIToken) for one environment of a container."
            )
            @OptionGroup var global: GlobalOptions
            @Option(name: .long, help: "The container, e.g. iCloud.com.example.app.")
            var container: String
            @Option(name: .long, help: "The environment the token opens: development or production (R32).")
            var environment: String = CloudEnvironment.default.rawValue

            func validate() throws {
                guard !container.trimmingCharacters(in: .whitespaces).isEmpty, !container.utf8.contains(0) else {
                    throw ValidationError("--container must name a container, e.g. iCloud.com.example.app")
                }
                guard CloudEnvironment(rawValue: environment) != nil else {
                    throw ValidationError("--environment must be development or production, got '\(environment)'")
                }
            }

            func run() throws {
                let engine = try global.makeEngine()
                defer { engine.store.checkpoint() }
                let token = try Credentials.newAPIToken(container: container, environment: try CloudEnvironment(named: environment), engine: engine)
                if global.json { printJSON(["container": container, "environment": environment, "ckAPIToken": token]) } else { print(token) }
            }
        }

        struct User: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "user",
                abstract: "Print a new web auth token (ckWebAuthToken) for a user of a container."
            )
            @OptionGroup var global: GlobalOptions
            @Option(name: .long, help: "The container, e.g. iCloud.com.example.app.")
            var container: String
            @Option(name: .long, help: "The user: email, phone or userRecordID.")
            var `as`: String
            @Option(name: .long, help: "Seconds the token is valid (default 30 minutes).")
            var ttl: Double = 1800

            func validate() throws {
                guard ttl.isFinite, ttl > 0, ttl <= 366 * 86_400 else { throw ValidationError("--ttl must be from 1 second to a year, got \(ttl)") }
            }

            func run() throws {
                let engine = try global.makeEngine()
                defer { engine.store.checkpoint() }
                guard let account = try engine.accounts.find(`as`) else {
                    throw CLIFailure(message: "--as \(`as`): no account has this address in store \(global.store)")
                }
                let token = try Credentials.newWebAuthToken(container: container, account: account, ttl: ttl, engine: engine)
                if global.json {
                    printJSON(["container": container, "ckWebAuthToken": token, "userRecordName": account.userRecordID])
                } else {
                    print(token)
                }
            }
        }
    }
}
