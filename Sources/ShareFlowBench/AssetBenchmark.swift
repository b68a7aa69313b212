import CShareFlowSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTLS
import Logging
import NIOCore
import ShareFlow
import ShareFlowServer

/// `shareflow bench --only assets` (SPEC §19, issue 45): a 10 MiB asset uploaded and downloaded
/// over https through ShareFlow (the upload URL, the download URL, the blob saved and read),
/// against the same bytes through a bare loopback TLS route of the same framework and TLS
/// stack in the same run — a POST whose body is read whole and a GET answering 10 MiB —
/// both driven by the same client (curl, one process per transfer). `openssl` makes a
/// throw-away certificate; without it the figure is not made.
extension Benchmarks {
    struct AssetFigures {
        /// MiB per second of upload plus download.
        var shareflow = 0.0
        var bare = 0.0
    }

    static let assetBytes = 10 << 20

    func assets(in scratch: URL) throws -> AssetFigures? {
        guard let tls = try benchCertificate(in: scratch) else {
            progress("assets: no openssl to make a certificate with; figure skipped")
            return nil
        }
        progress("assets: 10 MiB up and down over https, through ShareFlow and through a bare TLS route, \(max(1, sizes.repetitions)) rounds each")
        let engine = Engine(store: try Store(path: scratch.appendingPathComponent("assets.sqlite").path))
        engine.logger.logLevel = .critical
        let account = try engine.accounts.create(emails: ["owner@example.com"])
        let payload = scratch.appendingPathComponent("asset.bin")
        var bytes = [UInt8](repeating: 0, count: Self.assetBytes)
        for i in 0..<bytes.count { bytes[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 13) }
        try Data(bytes).write(to: payload)
        let rounds = max(1, sizes.repetitions)

        // ShareFlow: the upload URL, then the download URL of the record saved with it.
        let shareflow = try withServer(tls: tls.configuration, router: nil, engine: engine) { base in
            let db = try engine.session(for: account).container(Self.serveContainer).privateCloudDatabase
            func uploadURL() throws -> String {
                let slot = try engine.reserveAssetUploads([.init(recordName: "asset", fieldName: "file")], zoneName: nil, in: db)[0]
                return "\(base)/assets/1/upload/\(slot.secret)"
            }
            let first = try curl(["-X", "POST", "--data-binary", "@" + payload.path, try uploadURL()], ca: tls.ca)
            guard let single = (try? JSONSerialization.jsonObject(with: first)) as? [String: Any],
                let file = single["singleFile"] as? [String: Any], let receipt = file["receipt"] as? String
            else { throw BenchError("assets: the upload answered \(String(decoding: first.prefix(300), as: UTF8.self))") }
            let record = Record(recordType: "Blob", recordID: RecordID(recordName: "asset", zoneID: .default))
            record["file"] = .asset(Asset(.receipt(receipt)))
            if let e = try db.modifyRecords(saving: [record]).error { throw e }
            guard case .asset(let saved)? = record["file"], let sum = saved.checksum else { throw BenchError("assets: no asset saved") }
            let token = try engine.assetDownloadToken(checksum: sum, field: "file", record: record.recordID, for: Engine.AssetReader(db))
            let download = "\(base)/assets/1/download/\(token)/asset.bin"
            var seconds = 0.0
            for _ in 0..<rounds {
                let url = try uploadURL()
                let start = sf_now_ns()
                _ = try curl(["-X", "POST", "--data-binary", "@" + payload.path, url], ca: tls.ca)
                let got = try curl([download], ca: tls.ca)
                seconds += Double(sf_now_ns() - start) / 1e9
                guard got.count == Self.assetBytes else { throw BenchError("assets: the download gave \(got.count) bytes") }
            }
            return Double(2 * rounds * Self.assetBytes) / Double(1 << 20) / seconds
        }

        // The floor: the same framework and TLS, no engine, no store.
        let source = ByteBuffer(bytes: bytes)
        let router = Router()
        router.post("/sink") { request, _ -> String in
            var request = request
            let body = try await request.collectBody(upTo: Self.assetBytes + 1)
            return String(body.readableBytes)
        }
        router.get("/source") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: .init(byteBuffer: source))
        }
        let bare = try withServer(tls: tls.configuration, router: router, engine: nil) { base in
            var seconds = 0.0
            for _ in 0..<rounds {
                let start = sf_now_ns()
                _ = try curl(["-X", "POST", "--data-binary", "@" + payload.path, "\(base)/sink"], ca: tls.ca)
                let got = try curl(["\(base)/source"], ca: tls.ca)
                seconds += Double(sf_now_ns() - start) / 1e9
                guard got.count == Self.assetBytes else { throw BenchError("assets: the bare route gave \(got.count) bytes") }
            }
            return Double(2 * rounds * Self.assetBytes) / Double(1 << 20) / seconds
        }
        return AssetFigures(shareflow: shareflow, bare: bare)
    }

    /// A certificate for 127.0.0.1 made with openssl in `scratch`, and its file (the CA a
    /// client trusts); nil without openssl.
    private func benchCertificate(in scratch: URL) throws -> (configuration: ServerTLS, ca: String)? {
        let key = scratch.appendingPathComponent("bench.key").path
        let cert = scratch.appendingPathComponent("bench.pem").path
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
            "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ]
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        do { try openssl.run() } catch { return nil }
        openssl.waitUntilExit()
        guard openssl.terminationStatus == 0 else { return nil }
        return (try ServerTLS(certificate: cert, key: key), cert)
    }

    /// Runs `body` with a https server on a free loopback port: ShareFlow's over `engine`, or
    /// `router` bare.
    private func withServer<T>(tls: ServerTLS, router: Router<BasicRequestContext>?, engine: Engine?, _ body: (String) throws -> T) throws -> T {
        let listening = DispatchSemaphore(value: 0)
        let port = BenchPort()
        let task: Task<Void, Error>
        if let engine {
            var server = CloudKitServer(engine: engine, host: "127.0.0.1", port: 0, logger: Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() })
            server.tls = tls
            server.onListening = { p in
                port.value = p
                listening.signal()
            }
            // URLs the server makes (upload, download) name it as the client reaches it.
            let running = server
            task = Task { try await running.run() }
        } else if let router {
            let app = Application(
                router: router,
                server: try .tls(.http1(), tlsConfiguration: tls.configuration),
                configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { channel in
                    port.value = channel.localAddress?.port ?? 0
                    listening.signal()
                },
                logger: Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
            )
            task = Task { try await app.runService() }
        } else {
            throw BenchError("assets: no server to run")
        }
        defer { task.cancel() }
        guard listening.wait(timeout: .now() + 30) == .success else { throw BenchError("assets: the server did not start") }
        return try body("https://127.0.0.1:\(port.value)")
    }

    /// What curl read from a https URL trusting `ca` (its body), or a failure naming it.
    private func curl(_ arguments: [String], ca: String) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "-sS", "--fail", "-H", "Expect:", "--cacert", ca, "-o", "-"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("assets: curl \(arguments.last ?? "") failed (\(process.terminationStatus))") }
        return data
    }
}

/// A server's port, written before its `listening` semaphore signals.
final class BenchPort: @unchecked Sendable { var value = 0 }
