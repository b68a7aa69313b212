// swift-tools-version:6.1
import PackageDescription

// `make sanitize` and `make tsan` build ShareFlow's own targets, C and Swift, under a sanitizer
// (SHAREFLOW_SANITIZER=address or thread) in the same scratch path as the plain build, and reuse
// its build of the dependencies as it is: rebuilding SwiftNIO, Hummingbird, GRDB and two copies
// of BoringSSL instrumented took two of a CI run's three builds, about half its hour. Lua and
// SQLite are the system's libraries, never instrumented; LeakSanitizer sees every allocation.
let sanitizer = Context.environment["SHAREFLOW_SANITIZER"].flatMap { ["address", "thread"].contains($0) ? $0 : nil }
// SHAREFLOW_SANITIZE_RECOVER=1 keeps a process running past its first report (triage, not CI).
let recover = sanitizer == "address" && Context.environment["SHAREFLOW_SANITIZE_RECOVER"] == "1"
let sanitizedSwift: [SwiftSetting] =
    sanitizer.map { [.unsafeFlags(["-sanitize=\($0)"] + (recover ? ["-sanitize-recover=address"] : []))] } ?? []
let sanitizedC: [CSetting] =
    sanitizer.map { [.unsafeFlags(["-fsanitize=\($0)"] + (recover ? ["-fsanitize-recover=address"] : []))] } ?? []
let sanitizedLink: [LinkerSetting] = sanitizer.map { [.unsafeFlags(["-sanitize=\($0)"])] } ?? []

let package = Package(
    name: "ShareFlow",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "ShareFlow", targets: ["ShareFlow"]),
        .library(name: "ShareFlowLua", targets: ["ShareFlowLua"]),
        .executable(name: "shareflow", targets: ["shareflow"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // Already under Hummingbird; named for the connection deadlines (NIOHTTPTypes) and the
        // shutdown deadline (ServiceGroup).
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // Already under Hummingbird; named for the server's channel handlers (NIOCore).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        // The second store (SPEC §16): PostgreSQL.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // What a node counts (swift-metrics, already under Hummingbird), and `GET /metrics` in
        // Prometheus' text format (SPEC §16).
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // liblua5.4 from the system (Debian: liblua5.4-dev), with a shim for Lua's macros.
        .systemLibrary(
            name: "CLua",
            pkgConfig: "lua5.4",
            providers: [.apt(["liblua5.4-dev"]), .brew(["lua"])]
        ),
        // What must be C: the trampoline that raises Lua errors, the accounting allocator,
        // the CPU-limit hook, and the raw C baseline for `shareflow bench`.
        .target(
            name: "CShareFlowSupport",
            dependencies: ["CLua"]
        ),
        // SQLite's process-wide configuration, which Swift cannot set (sqlite3_config is variadic).
        .target(
            name: "CShareFlowSQLite",
            dependencies: [.product(name: "GRDBSQLite", package: "GRDB.swift")]
        ),
        // The engine: domain, rules, operations, events, store.
        .target(
            name: "ShareFlow",
            dependencies: [
                "CShareFlowSQLite",
                .product(name: "GRDB", package: "GRDB.swift"),
                // The store reads its rows' columns in place (`StoredRow`).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                // Change tokens are signed (HMAC-SHA256, SPEC §14 S1).
                .product(name: "Crypto", package: "swift-crypto"),
                // Store failures and retries, injected faults: counted for `GET /metrics`.
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        // The PostgreSQL driver (SPEC §16 M6): a `StoreDriver` the engine reaches only through
        // that protocol, so neither the engine nor the Lua host links PostgreSQL or TLS.
        .target(
            name: "ShareFlowPostgres",
            dependencies: [
                "ShareFlow",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The Lua host: state, value bridge, bindings, sandbox, limits, plugins.
        .target(
            name: "ShareFlowLua",
            dependencies: [
                "ShareFlow", "CLua", "CShareFlowSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Lua"],
            plugins: ["EmbedLua"]
        ),
        // The host's own Lua (a target's Lua/ folder: preludes, the console's printer) built
        // into the binary as `EmbeddedLua`. Apart from Plugins/, which holds ShareFlow's plugins.
        .plugin(
            name: "EmbedLua",
            capability: .buildTool(),
            dependencies: ["EmbedLuaGenerator"],
            path: "BuildTools/EmbedLua"
        ),
        .executableTarget(
            name: "EmbedLuaGenerator",
            path: "BuildTools/EmbedLuaGenerator"
        ),
        // The console of `shareflow repl`: libedit for the line, the host for the Lua.
        .systemLibrary(
            name: "CEditLine",
            pkgConfig: "libedit",
            providers: [.apt(["libedit-dev"]), .brew(["libedit"])]
        ),
        .target(
            name: "ShareFlowConsole",
            dependencies: ["ShareFlowLua", "ShareFlow", "CLua", "CShareFlowSupport", "CEditLine"],
            exclude: ["Lua"],
            plugins: ["EmbedLua"]
        ),
        // `shareflow bench`: the SPEC §12 figures beside their baselines (in C, the raw ones).
        .target(
            name: "CShareFlowBench",
            dependencies: ["CLua", "CShareFlowSupport"]
        ),
        .target(
            name: "ShareFlowBench",
            dependencies: [
                "ShareFlowLua", "ShareFlow", "ShareFlowPostgres", "ShareFlowServer", "CLua", "CShareFlowSupport", "CShareFlowBench",
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                // The bare TLS route the asset figure is held against.
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // `shareflow serve`: CloudKit Web Services over HTTP (SPEC §13), on Hummingbird 2.
        .target(
            name: "ShareFlowServer",
            dependencies: [
                "ShareFlow",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "shareflow",
            dependencies: [
                "ShareFlow", "ShareFlowPostgres", "ShareFlowLua", "ShareFlowConsole", "ShareFlowBench", "ShareFlowServer", "CLua",
                "CShareFlowSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Lua"],
            linkerSettings: [
                // The static Swift runtime's link arguments export every symbol of the binary
                // (-export-dynamic, ~33,000): nothing looks them up, but each start pays for
                // them (the dynamic loader's lookups, and the runtime's dladdr at start-up scans
                // them all). Cold start, SPEC §12.
                .unsafeFlags(["-Xlinker", "--no-export-dynamic"], .when(platforms: [.linux])),
                // The release binary's ~145,000 relative relocations as RELR (glibc 2.36+):
                // 3.4 MB of RELA entries the dynamic loader read and applied one by one at every
                // start, packed into a few kilobytes (lld; gold cannot). Cold start, SPEC §12.
                .unsafeFlags(
                    ["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"],
                    .when(platforms: [.linux], configuration: .release)
                ),
            ],
            plugins: ["EmbedLua"]
        ),
        // What the tests share. ShareFlowTestKit links no part of ShareFlow (the end-to-end tests
        // drive the built binary): the binary and its folders, tmux, `serve` on a free port,
        // curl, Python's sqlite3, a seeded generator. ShareFlowEngineTestKit: the engine's
        // fixtures (the World, old stores).
        .target(name: "ShareFlowTestKit", path: "Tests/ShareFlowTestKit"),
        .target(
            name: "ShareFlowEngineTestKit",
            dependencies: ["ShareFlow", "ShareFlowPostgres", "ShareFlowTestKit", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/ShareFlowEngineTestKit"
        ),
        .testTarget(
            name: "ShareFlowTests",
            dependencies: [
                "ShareFlow", "ShareFlowPostgres", "ShareFlowEngineTestKit", "ShareFlowTestKit", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(name: "ShareFlowLuaTests", dependencies: ["ShareFlowLua", "ShareFlow", "ShareFlowTestKit", "CLua", "CShareFlowSupport"]),
        .testTarget(
            name: "ShareFlowServerTests",
            dependencies: [
                "ShareFlowServer", "ShareFlow", "ShareFlowTestKit",
                // A test counts the transactions of a request through SQLite's trace hook.
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["ShareFlowTestKit", .product(name: "Crypto", package: "swift-crypto")],
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Under a sanitizer, every target of ShareFlow's own code is instrumented, and everything that
// links it links the sanitizer's runtime. The build tool (EmbedLuaGenerator) runs during the
// build and stays plain.
if sanitizer != nil {
    for target in package.targets where target.name != "EmbedLuaGenerator" {
        switch target.type {
        case .regular, .executable, .test:
            if target.name.hasPrefix("C") {
                target.cSettings = (target.cSettings ?? []) + sanitizedC
            } else {
                target.swiftSettings = (target.swiftSettings ?? []) + sanitizedSwift
            }
            target.linkerSettings = (target.linkerSettings ?? []) + sanitizedLink
        default:
            continue
        }
    }
}
