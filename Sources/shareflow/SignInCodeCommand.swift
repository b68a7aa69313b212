import ArgumentParser
import Foundation
import ShareFlow
import ShareFlowServer

extension ShareFlowCommand.Tokens {
    /// `shareflow tokens signin`: a one-time code an account types on the server's sign-in page
    /// (`serve --console`, SPEC §21) to hand a web auth token to the app that opened it.
    struct SignIn: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "signin",
            abstract:
                "Print a one-time sign-in code for a user of a container: typed on the server's /signin page (serve --console), it signs in once."
        )
        @OptionGroup var global: GlobalOptions
        @Option(name: .long, help: "The container the code signs in to, e.g. iCloud.com.example.app.")
        var container: String
        @Option(name: .long, help: "The user: email, phone or userRecordID.")
        var `as`: String
        @Option(name: .long, help: "Seconds the code is valid (default 10 minutes, at most an hour); the token it yields lasts 30 minutes.")
        var ttl: Double = SignInCodes.defaultTTL

        func validate() throws {
            guard !container.trimmingCharacters(in: .whitespaces).isEmpty, !container.utf8.contains(0) else {
                throw ValidationError("--container must name a container, e.g. iCloud.com.example.app")
            }
            guard ttl.isFinite, ttl >= 1, ttl <= SignInCodes.maxTTL else {
                let given = ttl.isFinite && ttl == ttl.rounded() && abs(ttl) < 1e15 ? String(Int(ttl)) : "\(ttl)"
                throw ValidationError("--ttl must be from 1 to \(Int(SignInCodes.maxTTL)) seconds (an hour), got \(given)")
            }
        }

        func run() throws {
            let engine = try global.makeEngine()
            defer { engine.store.checkpoint() }
            let found: Account?
            do {
                found = try engine.accounts.find(`as`)
            } catch let error as ShareFlowError {
                throw CLIFailure(message: "--as \(`as`): \(error.message)")
            }
            guard let account = found else {
                throw CLIFailure(message: "--as \(`as`): no account has this address in store \(global.store)")
            }
            let minted = try SignInCodes.mint(container: container, account: account, ttl: ttl, engine: engine)
            if global.json {
                printJSON([
                    "code": minted.code, "container": minted.container,
                    "expiresAt": ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: minted.expiresAt)),
                    "userRecordName": account.userRecordID,
                ])
            } else {
                print(minted.code)
            }
        }
    }
}
