import CShareFlowSupport
import Foundation
import GRDBSQLite
import Hummingbird
import Logging
import NIOCore
import ShareFlow
import ShareFlowPostgres
import ShareFlowServer

#if canImport(Glibc)
import Glibc
#endif

/// `shareflow bench --only serve` (SPEC §12, §13): records/resolve and records/accept over
/// loopback HTTP with many connections, beside the same engine calls in-process in the same
/// run, and the latency of the HTTP calls.
extension Benchmarks {
    static let serveContainer = "iCloud.com.example.bench"

    struct ServeFigures {
        var resolveHTTP = 0.0, resolveInProcess = 0.0, acceptHTTP = 0.0, acceptInProcess = 0.0
        /// Over HTTP on SQLite, requests per CPU second of the whole machine, by endpoint.
        var perCPUSecond: [String: Double] = [:]
        var resolveP50 = 0.0, resolveP99 = 0.0, acceptP50 = 0.0, acceptP99 = 0.0
        var resolveWhileLocked: (Double, Double, Double)?
        var resolveBesideAccepts: (alone: (Double, Double), beside: (Double, Double), accepts: Double)?
        /// The same with no reading threads (every request on the engine's thread).
        var resolveBesideAcceptsOneThread: (alone: (Double, Double), beside: (Double, Double), accepts: Double)?
        /// records/resolve against the bare route (`bareRoute`), in alternating rounds: each
        /// round's rate of each.
        var resolveRounds: [Double] = [], bareRounds: [Double] = []
        var errors = 0
        /// By node count, on PostgreSQL (with `postgres` set).
        var postgres: [Int: HTTPFigures] = [:]
    }

    func serve(in scratch: URL) throws -> ServeFigures {
        let engine = Engine(store: try Store(path: scratch.appendingPathComponent("serve.sqlite").path))
        engine.logger.logLevel = .critical
        let connections = sizes.connections
        // One user per connection, each invited to every share; each connection asks for the
        // shares in turn.
        var guests: [Account] = []
        for i in 0..<connections { guests.append(try engine.accounts.create(emails: ["guest\(i)@example.com"])) }
        let urls = try bulkShares(engine, count: sizes.serveShares, guests: guests.map { ($0.id, $0.email!) })
        let guids = urls.map { Engine.shareToken(url: $0)! }
        let api = try Credentials.newAPIToken(container: Self.serveContainer, engine: engine)
        let tokens = try guests.map { try Credentials.newWebAuthToken(container: Self.serveContainer, account: $0, ttl: 3600, engine: engine) }
        var f = ServeFigures()

        // In-process: what each endpoint asks of the engine, one call after another.
        let containers = try guests.map { try engine.session(for: $0).container(Self.serveContainer) }
        func inProcess(_ accept: Bool) throws -> Double {
            var n = 0
            let start = sf_now_ns()
            let end = start + Int64(sizes.serveSeconds * 1e9)
            while sf_now_ns() < end {
                let c = containers[n % containers.count]
                let url = urls[(n / containers.count) % urls.count]
                let meta = try c.fetchShareMetadataResults([url]).0[0].1.get()
                if accept {
                    _ = try c.acceptShareResults([meta]).0[0].1.get()
                    _ = try c.fetchShareMetadataResults([url]).0[0].1.get()
                }
                n += 1
            }
            return Double(n) / (Double(sf_now_ns() - start) / 1e9)
        }
        progress("serve: in-process resolve and accept, \(sizes.serveSeconds) s each")
        // Accept first, so that the HTTP accepts after it find the same (accepted) state.
        f.acceptInProcess = try inProcess(true)
        f.resolveInProcess = try inProcess(false)

        // Over HTTP: the server on a free loopback port, in this process.
        let sqlite = try overHTTP([engine], label: "SQLite", guids: guids, api: api, tokens: tokens, lockedStore: engine.store.path)
        (f.resolveHTTP, f.resolveP50, f.resolveP99) = sqlite.resolve
        f.perCPUSecond = sqlite.perCPUSecond
        (f.acceptHTTP, f.acceptP50, f.acceptP99) = sqlite.accept
        f.errors += sqlite.errors
        f.resolveWhileLocked = sqlite.resolveWhileLocked
        f.resolveBesideAccepts = sqlite.resolveBesideAccepts
        (f.resolveRounds, f.bareRounds) = (sqlite.resolveRounds, sqlite.bareRounds)
        // The same node with every request on the engine's thread (before SPEC §16 M5).
        let oneThread = try overHTTP(
            [engine],
            label: "SQLite, no reading threads",
            guids: guids,
            api: api,
            tokens: tokens,
            readingThreads: 0,
            onlyBeside: true
        )
        f.resolveBesideAcceptsOneThread = oneThread.resolveBesideAccepts

        // The same store copied to PostgreSQL (SPEC §16): one node, then three nodes on it (each
        // its own engine and connection, in this process, the load spread over them in turn).
        if let template = postgres {
            let url = try PostgresStore.makeScratch(template: template)
            defer { PostgresStore.dropScratch(url) }
            do {
                let cluster = try Store.open(url)
                _ = try engine.store.copy(to: cluster)
                cluster.close()
            }
            for count in [1, 3] {
                let nodes = try (0..<count).map { _ -> Engine in
                    let node = Engine(store: try Store.open(url))
                    node.logger.logLevel = .critical
                    return node
                }
                defer { for node in nodes { node.store.close() } }
                let pg = try overHTTP(nodes, label: "PostgreSQL, \(count) node\(count == 1 ? "" : "s")", guids: guids, api: api, tokens: tokens)
                f.postgres[count] = pg
                f.errors += pg.errors
            }
        }
        return f
    }

    /// records/resolve then records/accept over HTTP, each node a server on a free loopback
    /// port in this process: requests per second, p50 and p99 (ms).
    struct HTTPFigures {
        var resolve = (0.0, 0.0, 0.0), accept = (0.0, 0.0, 0.0)
        /// Requests per CPU second of the whole machine, by endpoint ("resolve", "accept").
        var perCPUSecond: [String: Double] = [:]
        /// Resolve again while another process holds the write lock and a write of another
        /// caller's waits for it (SPEC §16 M5; SQLite only): rate, p50, p99.
        var resolveWhileLocked: (Double, Double, Double)?
        /// Resolve on half the connections alone, then beside accepts as fast as they go on
        /// the other half (SPEC §12 wave 4; SQLite only): (alone, beside) rate, p99 of each.
        var resolveBesideAccepts: (alone: (Double, Double), beside: (Double, Double), accepts: Double)?
        /// records/resolve and the bare route, alternating (SQLite only; `bareRoute`).
        var resolveRounds: [Double] = [], bareRounds: [Double] = []
        var errors = 0
    }

    /// A server on a free loopback port in this process for each of `engines`, each set up by
    /// `configure`: their ports, and the tasks to cancel when done.
    static func startServers(
        _ engines: [Engine],
        configure: (inout CloudKitServer) -> Void = { _ in }
    ) throws -> (ports: [Int], tasks: [Task<Void, Error>]) {
        final class Port: @unchecked Sendable { var value = 0 }  // written before `listening` signals
        var ports: [Int] = []
        var tasks: [Task<Void, Error>] = []
        for engine in engines {
            let listening = DispatchSemaphore(value: 0)
            let port = Port()
            var server = CloudKitServer(engine: engine, host: "127.0.0.1", port: 0, logger: Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() })
            configure(&server)
            server.onListening = { p in
                port.value = p
                listening.signal()
            }
            let running = server
            tasks.append(Task { try await running.run() })
            guard listening.wait(timeout: .now() + 30) == .success else {
                for task in tasks { task.cancel() }
                throw BenchError("the server did not start")
            }
            ports.append(port.value)
        }
        return (ports, tasks)
    }

    private func overHTTP(
        _ engines: [Engine],
        label: String,
        guids: [String],
        api: String,
        tokens: [String],
        lockedStore: String? = nil,
        readingThreads: Int? = nil,
        onlyBeside: Bool = false
    ) throws -> HTTPFigures {
        let (ports, tasks) = try Self.startServers(engines) { $0.readingThreads = readingThreads }
        defer { for task in tasks { task.cancel() } }
        var figures = HTTPFigures()
        let connections = sizes.connections
        if onlyBeside {
            figures.resolveBesideAccepts = try resolveBesideAccepts(ports: ports, guids: guids, api: api, tokens: tokens)
            return figures
        }
        for (name, accept) in [("resolve", false), ("accept", true)] {
            progress("serve: records/\(name) over HTTP (\(label)), \(connections) connections, \(sizes.serveSeconds) s")
            let path = "/database/1/\(Self.serveContainer)/development/public/records/\(name)"
            let load = try HTTPLoad(ports: ports, connections: connections, seconds: sizes.serveSeconds) { c, n in
                let body = #"{"shortGUIDs":[{"value":"\#(guids[n % guids.count])"}]}"#
                return (path + "?ckAPIToken=\(api)&ckWebAuthToken=\(tokens[c])", body)
            }
            figures.errors += load.errors
            if accept { figures.accept = (load.rate, load.p50, load.p99) } else { figures.resolve = (load.rate, load.p50, load.p99) }
            if let cpus = load.cpus { figures.perCPUSecond[name] = load.rate / cpus }
        }
        if let lockedStore {
            let bare = try againstBareRoute(port: ports[0], guids: guids, api: api, tokens: tokens)
            (figures.resolveRounds, figures.bareRounds) = (bare.resolve, bare.bare)
            figures.errors += bare.errors
            figures.resolveBesideAccepts = try resolveBesideAccepts(ports: ports, guids: guids, api: api, tokens: tokens)
            figures.resolveWhileLocked = try resolveWhileLocked(lockedStore, ports: ports, guids: guids, api: api, tokens: tokens)
        }
        return figures
    }

    /// records/resolve against the framework's floor (SPEC §12 wave 4: within 2×, i.e.
    /// resolve/bare ≥ 0.5): a bare Hummingbird route on the same HTTP/1 server, with no engine,
    /// that answers each request with the bytes ShareFlow answered it (read from the server just
    /// before, keyed by the request's body), under the same load (every connection, the same
    /// client, paths, tokens and bodies). Alternating rounds, the order flipped each round: a
    /// pause on a noisy machine moves one round's pair, not the median of the pairs' ratios.
    private func againstBareRoute(
        port: Int,
        guids: [String],
        api: String,
        tokens: [String]
    ) throws -> (
        resolve: [Double], bare: [Double], errors: Int
    ) {
        let path = "/database/1/\(Self.serveContainer)/development/public/records/resolve"
        let query: @Sendable (Int) -> String = { c in "?ckAPIToken=\(api)&ckWebAuthToken=\(tokens[c])" }
        let body: @Sendable (Int) -> String = { n in #"{"shortGUIDs":[{"value":"\#(guids[n % guids.count])"}]}"# }
        // What ShareFlow answers each share's resolve (as the first connection's user sees it;
        // the others' answers differ only in who they name).
        var answers: [String: ByteBuffer] = [:]
        let client = try HTTPConnection(port: port)
        defer { client.close() }
        for n in 0..<guids.count {
            let (status, answer) = try client.post(path + query(0), body: body(n), keepBody: true)
            guard status == 200, !answer.contains("serverErrorCode") else {
                throw BenchError("serve: records/resolve answered \(status) before the bare route's rounds: \(answer.prefix(300))")
            }
            answers[body(n)] = ByteBuffer(string: answer)
        }
        let (bare, task) = try Self.startBareRoute(answering: answers, at: path)
        defer { task.cancel() }
        let rounds = max(2, sizes.repetitions)
        let seconds = max(0.2, sizes.serveSeconds / Double(rounds))
        progress("serve: records/resolve against a bare Hummingbird route, \(rounds) alternating rounds of \(seconds) s each")
        var (resolve, floor, errors) = ([Double](), [Double](), 0)
        for round in 0..<rounds {
            for toBare in round % 2 == 0 ? [false, true] : [true, false] {
                let load = try HTTPLoad(ports: [toBare ? bare : port], connections: sizes.connections, seconds: seconds) { c, n in
                    (path + query(c), body(n))
                }
                errors += load.errors
                if toBare { floor.append(load.rate) } else { resolve.append(load.rate) }
            }
        }
        return (resolve, floor, errors)
    }

    /// The bare route: one Hummingbird route on a free loopback port, on the HTTP/1 server
    /// `CloudKitServer` runs (no TLS, the same server name), answering each request whose body
    /// is a key of `answers` with its bytes as JSON, after reading the body whole as the
    /// server does; no middleware, no engine. Its port, and the task to cancel when done.
    static func startBareRoute(answering answers: [String: ByteBuffer], at path: String) throws -> (port: Int, task: Task<Void, Error>) {
        let router = Router()
        router.post(RouterPath(path)) { request, _ -> Response in
            var request = request
            let body = try await request.collectBody(upTo: 16 << 20)
            guard let answer = answers[String(buffer: body)] else { return Response(status: .badRequest) }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: answer))
        }
        let listening = DispatchSemaphore(value: 0)
        let port = BenchPort()
        let app = Application(
            router: router,
            server: .http1(),
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "ShareFlow"),
            onServerRunning: { channel in
                port.value = channel.localAddress?.port ?? 0
                listening.signal()
            },
            logger: Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
        )
        let task = Task { try await app.runService() }
        guard listening.wait(timeout: .now() + 30) == .success else {
            task.cancel()
            throw BenchError("the bare route's server did not start")
        }
        return (port.value, task)
    }

    /// records/resolve on half the connections alone, then again while the other half accept
    /// as fast as they can (SPEC §12 wave 4: ≥ 0.7×): reads run beside the writes (SPEC §16
    /// M5), not behind them.
    private func resolveBesideAccepts(
        ports: [Int],
        guids: [String],
        api: String,
        tokens: [String]
    )
        throws -> (alone: (Double, Double), beside: (Double, Double), accepts: Double)
    {
        let half = max(1, sizes.connections / 2)
        let resolvePath = "/database/1/\(Self.serveContainer)/development/public/records/resolve"
        let acceptPath = "/database/1/\(Self.serveContainer)/development/public/records/accept"
        let body: @Sendable (Int) -> String = { n in #"{"shortGUIDs":[{"value":"\#(guids[n % guids.count])"}]}"# }
        progress("serve: records/resolve over HTTP, \(half) connections alone, \(sizes.serveSeconds) s")
        let alone = try HTTPLoad(ports: ports, connections: half, seconds: sizes.serveSeconds) { c, n in
            (resolvePath + "?ckAPIToken=\(api)&ckWebAuthToken=\(tokens[c])", body(n))
        }
        progress("serve: records/resolve over HTTP, \(half) connections, while \(half) others accept, \(sizes.serveSeconds) s")
        final class Rate: @unchecked Sendable {
            var value = 0.0
            var errors = 0
        }  // written before `acceptsDone` signals
        let accepts = Rate()
        let acceptsDone = DispatchSemaphore(value: 0)
        let (seconds, acceptTokens) = (sizes.serveSeconds, Array(tokens[half..<min(tokens.count, 2 * half)]))
        let bodies = guids
        Thread.detachNewThread {
            defer { acceptsDone.signal() }
            guard
                let load = try? HTTPLoad(
                    ports: ports,
                    connections: acceptTokens.count,
                    seconds: seconds,
                    request: { c, n in
                        (
                            acceptPath + "?ckAPIToken=\(api)&ckWebAuthToken=\(acceptTokens[c])",
                            #"{"shortGUIDs":[{"value":"\#(bodies[n % bodies.count])"}]}"#
                        )
                    }
                )
            else {
                accepts.errors = -1
                return
            }
            accepts.value = load.rate
            accepts.errors = load.errors
        }
        let beside = try HTTPLoad(ports: ports, connections: half, seconds: sizes.serveSeconds) { c, n in
            (resolvePath + "?ckAPIToken=\(api)&ckWebAuthToken=\(tokens[c])", body(n))
        }
        acceptsDone.wait()
        guard alone.errors == 0, beside.errors == 0, accepts.errors == 0 else {
            throw BenchError("resolves beside accepts failed: \(alone.errors) alone, \(beside.errors) beside, \(accepts.errors) accepts")
        }
        return ((alone.rate, alone.p99), (beside.rate, beside.p99), accepts.value)
    }

    /// records/resolve on every connection but one while another process holds the store's
    /// write lock and the last connection's caller saves a record, waiting for the lock (each
    /// save waits `store.busyTimeoutMs`, then is a 503): before SPEC §16 M5 every resolve
    /// waited behind it.
    private func resolveWhileLocked(_ store: String, ports: [Int], guids: [String], api: String, tokens: [String]) throws -> (Double, Double, Double)
    {
        var other: OpaquePointer?
        guard sqlite3_open(store, &other) == SQLITE_OK, sqlite3_exec(other, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK else {
            sqlite3_close(other)
            throw BenchError("cannot take the write lock of \(store)")
        }
        defer {
            sqlite3_exec(other, "ROLLBACK", nil, nil, nil)
            sqlite3_close(other)
        }
        let connections = sizes.connections
        progress(
            "serve: records/resolve over HTTP while another process holds the write lock and a save waits for it, \(connections) connections, \(sizes.serveSeconds) s"
        )
        let writerDone = DispatchSemaphore(value: 0)
        let (seconds, port, token) = (sizes.serveSeconds, ports[0], tokens[connections - 1])
        let container = Self.serveContainer
        Thread.detachNewThread {
            defer { writerDone.signal() }
            _ = try? HTTPLoad(ports: [port], connections: 1, seconds: seconds) { _, n in
                (
                    "/database/1/\(container)/development/private/records/modify?ckAPIToken=\(api)&ckWebAuthToken=\(token)",
                    #"{"operations":[{"operationType":"create","record":{"recordName":"locked-\#(n)","recordType":"Note","fields":{}}}]}"#
                )
            }
        }
        let path = "/database/1/\(Self.serveContainer)/development/public/records/resolve"
        let load = try HTTPLoad(ports: ports, connections: max(1, connections - 1), seconds: sizes.serveSeconds) { c, n in
            (path + "?ckAPIToken=\(api)&ckWebAuthToken=\(tokens[c])", #"{"shortGUIDs":[{"value":"\#(guids[n % guids.count])"}]}"#)
        }
        writerDone.wait()
        guard load.errors == 0 else { throw BenchError("\(load.errors) resolves failed while a save waited for the lock") }
        return (load.rate, load.p50, load.p99)
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// A load client: `connections` threads, each with one keep-alive HTTP/1.1 connection on
/// blocking sockets, sending POSTs back to back for `seconds`. A request that does not answer
/// 200 with results free of `serverErrorCode` counts as an error.
struct HTTPLoad {
    private(set) var rate = 0.0
    private(set) var p50 = 0.0, p99 = 0.0
    private(set) var errors = 0
    /// CPU seconds the whole machine spent per second of the load (every process: the
    /// server, PostgreSQL beside it, the load client), from `/proc/stat`; nil where it cannot
    /// be read. `rate / cpus` is requests per CPU second: where the cores are the limit, what
    /// a request costs.
    private(set) var cpus: Double?

    /// Connection `c` goes to `ports[c % ports.count]`: several nodes share the load in turn.
    init(ports: [Int], connections: Int, seconds: Double, request: @escaping @Sendable (Int, Int) -> (String, String)) throws {
        final class Results: @unchecked Sendable {  // guarded by `lock`
            let lock = NSLock()
            var latencies: [Double] = []
            var errors = 0
            var failure: String?
        }
        let results = Results()
        let group = DispatchGroup()
        let busyBefore = HTTPLoad.machineTicks()
        let start = sf_now_ns()
        let end = start + Int64(seconds * 1e9)
        for c in 0..<connections {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                var mine: [Double] = []
                var errors = 0
                do {
                    let socket = try HTTPConnection(port: ports[c % ports.count])
                    defer { socket.close() }
                    var n = c
                    while sf_now_ns() < end {
                        let (path, body) = request(c, n)
                        let t0 = sf_now_ns()
                        let (status, failed) = try socket.post(path, body: body)
                        mine.append(Double(sf_now_ns() - t0) / 1e6)
                        if status != 200 || failed { errors += 1 }
                        n += connections
                    }
                } catch {
                    results.lock.lock()
                    results.failure = "\(error)"
                    results.lock.unlock()
                }
                results.lock.lock()
                results.latencies += mine
                results.errors += errors
                results.lock.unlock()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()
        let busyAfter = HTTPLoad.machineTicks()
        if let failure = results.failure { throw BenchError("HTTP load: \(failure)") }
        let elapsed = Double(sf_now_ns() - start) / 1e9
        if let b = busyBefore, let a = busyAfter, a.total > b.total {
            let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
            cpus = cores * Double(a.busy - b.busy) / Double(a.total - b.total)
        }
        let sorted = results.latencies.sorted()
        rate = Double(sorted.count) / elapsed
        p50 = sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        p99 = sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
        errors = results.errors
    }
}

extension HTTPLoad {
    /// The machine's CPU time so far, busy and in all (`/proc/stat`'s first line, in ticks:
    /// idle and I/O wait are not busy).
    static func machineTicks() -> (busy: Int64, total: Int64)? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return nil }
        let ticks = line.split(separator: " ").dropFirst().prefix(8).compactMap { Int64($0) }
        guard ticks.count >= 5 else { return nil }
        let total = ticks.reduce(0, +)
        return (total - ticks[3] - ticks[4], total)
    }
}

/// One keep-alive HTTP/1.1 connection over a blocking socket.
final class HTTPConnection {
    private let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw BenchError("connect to port \(port): \(String(cString: strerror(errno)))")
        }
    }

    func close() { Glibc.close(fd) }

    /// Sends one POST and reads its answer: the status, and whether the body names a
    /// `serverErrorCode` (a per-item failure). The body is searched as bytes, never decoded: the
    /// client shares the machine's cores with the server it measures.
    func post(_ path: String, body: String) throws -> (Int, Bool) {
        let (status, failed, _) = try exchange(Self.postRequest(path, body: body), keepBody: false)
        return (status, failed)
    }

    /// Sends one POST and reads its answer: the status and the body.
    func post(_ path: String, body: String, keepBody: Bool) throws -> (Int, String) {
        let (status, _, answer) = try exchange(Self.postRequest(path, body: body), keepBody: true)
        return (status, answer ?? "")
    }

    private static func postRequest(_ path: String, body: String) -> String {
        "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    /// Sends one GET and reads its answer: the status and the body (a webcourier poll's).
    func get(_ path: String) throws -> (Int, String) {
        let (status, _, body) = try exchange("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", keepBody: true)
        return (status, body ?? "")
    }

    private func exchange(_ request: String, keepBody: Bool) throws -> (Int, Bool, String?) {
        var bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeMutableBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw BenchError("send: \(String(cString: strerror(errno)))") }
            sent += n
        }
        // The head, then Content-Length bytes of body.
        var headEnd: Int?
        while true {
            if let i = find([13, 10, 13, 10]) {
                headEnd = i
                break
            }
            try fill()
        }
        // Read as bytes: through Foundation (`components(separatedBy:)`, `split` by characters)
        // the client spent more on each head than the bare route spends on a request.
        let head = buffer[..<headEnd!]
        let status = Self.status(head)
        let length = Self.contentLength(head)
        let bodyStart = headEnd! + 4
        while buffer.count < bodyStart + length { try fill() }
        let failed = find(HTTPConnection.errorCode, in: bodyStart..<bodyStart + length) != nil
        let body = keepBody ? String(decoding: buffer[bodyStart..<bodyStart + length], as: UTF8.self) : nil
        buffer.removeFirst(bodyStart + length)
        return (status, failed, body)
    }

    private static let errorCode = Array("serverErrorCode".utf8)
    private static let contentLengthName = Array("content-length:".utf8)

    /// The status a head starts with (`HTTP/1.1 200 OK`: the digits after the first space), or 0.
    private static func status(_ head: ArraySlice<UInt8>) -> Int {
        guard let space = head.firstIndex(of: UInt8(ascii: " ")) else { return 0 }
        var value = 0
        for byte in head[(space + 1)...] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { break }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// The Content-Length a head names (the field's name in any case, blanks around the
    /// value), or 0 without one or with a value that is not a number.
    private static func contentLength(_ head: ArraySlice<UInt8>) -> Int {
        let name = contentLengthName
        var start = head.startIndex
        while start < head.endIndex {
            let end = head[start...].firstIndex(of: 13) ?? head.endIndex
            let line = head[start..<end]
            // `| 0x20` lowers ASCII letters and keeps `-` and `:` as they are.
            if line.count > name.count, zip(line, name).allSatisfy({ $0 | 0x20 == $1 }) {
                var value = 0
                var digits = 0
                for byte in line.dropFirst(name.count) where byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") {
                    guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return 0 }
                    value = value * 10 + Int(byte - UInt8(ascii: "0"))
                    digits += 1
                }
                return digits > 0 ? value : 0
            }
            start = end + 2
        }
        return 0
    }

    /// Where `needle` first starts in `range` of the buffer (all of it by default).
    private func find(_ needle: [UInt8], in range: Range<Int>? = nil) -> Int? {
        let range = range ?? 0..<buffer.count
        guard range.count >= needle.count else { return nil }
        return buffer.withUnsafeBufferPointer { bytes in
            needle.withUnsafeBufferPointer { needle in
                var i = range.lowerBound
                let last = range.upperBound - needle.count
                while i <= last {
                    if bytes[i] == needle[0] {
                        var j = 1
                        while j < needle.count && bytes[i + j] == needle[j] { j += 1 }
                        if j == needle.count { return i }
                    }
                    i += 1
                }
                return nil
            }
        }
    }

    /// What `fill` receives into, made once (not zeroed again for every read).
    private var chunk = [UInt8](repeating: 0, count: 16384)

    private func fill() throws {
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw BenchError("recv: \(n == 0 ? "connection closed" : String(cString: strerror(errno)))") }
        buffer.append(contentsOf: chunk[0..<n])
    }
}
