import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ShareFlow

#if canImport(Glibc)
import Glibc
#endif

/// The upload and download URLs of assets (SPEC §19 A3): outside the database routes, each
/// URL its own credential (clients send no CloudKit parameters to them: pyicloud posts with a
/// bare session, CloudKit JS with `fetch`). Throttled by address; every "no" is 404, alike for
/// a URL that never existed, one used, one expired and one whose record the reader lost.
///
/// - `POST /assets/1/upload/<secret>`: the raw bytes (any Content-Type); 413 before the body is
///   read when `Content-Length` says more than `assets.maxBytes`; answers `{"singleFile": …}`.
/// - `GET` or `HEAD /assets/1/download/<token>/<any name>`: the bytes, `Range` honoured.
final class AssetTransfer: Sendable {
    let engine: Engine
    let thread: EngineThread
    /// Uploads whose bodies are being written at once: past it, 503 and a time to retry.
    let uploadsAtOnce: Int
    private let inFlight = Locked(InFlight())

    init(engine: Engine, thread: EngineThread, uploadsAtOnce: Int = 32) {
        self.engine = engine
        self.thread = thread
        self.uploadsAtOnce = uploadsAtOnce
    }

    static let routes = ["POST /assets/1/upload/{secret}", "GET /assets/1/download/{token}/{name}", "HEAD /assets/1/download/{token}/{name}"]

    func register(on group: RouterGroup<ServerRequestContext>) {
        group.post("upload/:secret") { [self] request, context in try await upload(request, context: context) }
        for path in ["download/:token", "download/:token/*"] {
            group.get(RouterPath(path)) { [self] request, context in try await download(request, context: context, head: false) }
            group.head(RouterPath(path)) { [self] request, context in try await download(request, context: context, head: true) }
        }
    }

    /// Every "no" of these URLs, alike (a new error ID each time).
    private static var notFound: CloudKitError { CloudKitError(status: 404, code: "NOT_FOUND", reason: "no such asset URL") }

    // MARK: Upload

    private func upload(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let most = engine.options.assetMaxBytes
        let declared = request.headers[.contentLength].flatMap { Int64($0) }
        if let declared, declared > most {
            throw CloudKitError(status: 413, code: "QUOTA_EXCEEDED", reason: "the asset is \(declared) bytes; at most \(most) are taken")
        }
        let secret = context.parameters.get("secret") ?? ""
        // The URL first: one that leads nowhere costs no body.
        guard let pending = try await thread.read({ [engine] in try engine.pendingAssetUpload(secret: secret) }) else { throw Self.notFound }
        let coming = declared ?? most
        let storage = engine.assets
        if let files = storage as? AssetBlobs, let free = files.freeBytes(), free < coming + Self.spareDiskBytes {
            throw CloudKitError(
                ShareFlowError(
                    .serviceUnavailable,
                    "the disk of \(files.folder.path) has \(free) bytes free, too few to take an upload of up to \(coming)",
                    retryAfter: 30
                ).forOperator()
            )
        }
        // What one account may make the store keep for it before it saves: bounded before the
        // body is read, the uploads under way counted at what they may still bring.
        let slot = Slot(account: pending.account, secret: AssetReceipts.hash(secret), bytes: coming)
        switch take(slot, waiting: pending.waitingBytes) {
        case .taken: break
        case .secretBusy: throw Self.notFound
        case .tooMany:
            throw CloudKitError(
                status: 503,
                body: WireFormat.error(code: "TRY_AGAIN_LATER", reason: "too many uploads at once; try again").merging(["retryAfter": 1]) { a, _ in a
                }
            )
        case .overQuota(let held):
            throw CloudKitError(
                status: 413,
                code: "QUOTA_EXCEEDED",
                reason:
                    "this account has \(held) bytes uploaded or uploading and not yet saved; at most \(engine.options.assetMaxPendingBytes) wait at once: save them, or let their receipts expire"
            )
        }
        defer { release(slot) }
        // The body goes to a file as it comes (no upload is held in memory), bounded.
        let file = try storage.temporaryFile()
        defer { unlink(file.path) }
        let fd = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CloudKitError(
                ShareFlowError(.serviceUnavailable, "cannot write \(file.path) (\(String(cString: strerror(errno))))", retryAfter: 5).forOperator()
            )
        }
        let descriptor = FileDescriptorBox(fd)
        defer { close(fd) }
        var total: Int64 = 0
        do {
            for try await chunk in request.body {
                total += Int64(chunk.readableBytes)
                guard total <= most else { throw CloudKitError(status: 413, code: "QUOTA_EXCEEDED", reason: "the asset is more than \(most) bytes") }
                let bytes = chunk
                try await AssetTransfer.offLoop { try descriptor.write(bytes) }
            }
        } catch let e as CloudKitError {
            throw e
        } catch let e as DescriptorWriteFailure {
            throw CloudKitError(ShareFlowError(.serviceUnavailable, "cannot write \(file.path) (\(e.reason))", retryAfter: 5).forOperator())
        } catch {
            throw CloudKitError.badRequest("the body could not be read whole (it ended early?)")
        }
        // Hashing and flushing are no work for the event loop; a database's blob is a write
        // of the engine's, on its thread.
        let saved: AssetBlobs.Saved
        do {
            saved =
                storage.isInDatabase
                ? try await thread.run { try storage.put(contentsOf: file.path, maxBytes: most) }
                : try await AssetTransfer.offLoop { try storage.put(contentsOf: file.path, maxBytes: most) }
        } catch let failure as AssetBlobs.Failure {
            throw CloudKitError(
                ShareFlowError(.serviceUnavailable, "an upload's bytes cannot be saved: \(failure.description)", retryAfter: 5).forOperator()
            )
        }
        let receipt: String
        do {
            receipt = try await thread.run { [engine] in try engine.completeAssetUpload(secret: secret, saved: saved) }
        } catch let e as ShareFlowError where e.code == .unknownItem {
            throw Self.notFound
        } catch let e as ShareFlowError where e.code == .quotaExceeded {
            throw CloudKitError(status: 413, code: "QUOTA_EXCEEDED", reason: e.message)
        }
        return CloudKitServer.response(
            status: 200,
            WireObject(["singleFile": Self.descriptor(checksum: saved.checksum, size: saved.size, receipt: receipt)])
        )
    }

    /// Disk an upload leaves free beside the one it may fill.
    static let spareDiskBytes: Int64 = 64 << 20
    /// Uploads one account sends at once; past it (or past `uploadsAtOnce` in all), 503.
    static let uploadsPerAccount = 4

    /// One upload under way: its account, its URL's secret (hashed) and the most it may bring.
    struct Slot: Sendable {
        let account: Int64
        let secret: String
        let bytes: Int64
    }

    enum Taking: Equatable {
        case taken, secretBusy, tooMany
        case overQuota(Int64)
    }

    /// What uploads are under way on this node: how many, by account (with the bytes they may
    /// still bring), and by URL (one body at a time per URL: a second would only leave bytes
    /// for collection).
    struct InFlight: Sendable {
        var total = 0
        var byAccount: [Int64: Held] = [:]
        var secrets: Set<String> = []
    }

    struct Held: Sendable {
        var count = 0
        var bytes: Int64 = 0
    }

    private func take(_ slot: Slot, waiting: Int64) -> Taking {
        let most = engine.options.assetMaxPendingBytes
        return inFlight.withLock { state -> Taking in
            guard !state.secrets.contains(slot.secret) else { return .secretBusy }
            let mine = state.byAccount[slot.account] ?? Held()
            guard state.total < uploadsAtOnce, mine.count < Self.uploadsPerAccount else { return .tooMany }
            let held = waiting + mine.bytes
            guard held + slot.bytes <= most else { return .overQuota(held) }
            state.total += 1
            state.byAccount[slot.account] = Held(count: mine.count + 1, bytes: mine.bytes + slot.bytes)
            state.secrets.insert(slot.secret)
            return .taken
        }
    }

    private func release(_ slot: Slot) {
        inFlight.withLock { state in
            state.total -= 1
            state.secrets.remove(slot.secret)
            let mine = state.byAccount[slot.account] ?? Held(count: 1, bytes: slot.bytes)
            state.byAccount[slot.account] = mine.count <= 1 ? nil : Held(count: mine.count - 1, bytes: mine.bytes - slot.bytes)
        }
    }

    /// An asset's writable descriptor, as an upload or a rereference gives it: `receipt` is
    /// what a save redeems; `referenceChecksum` and `wrappingKey` are there because clients
    /// model them (ShareFlow does not encrypt assets: the key wraps nothing).
    static func descriptor(checksum: String, size: Int64, receipt: String) -> WireFormat.Object {
        [
            "fileChecksum": checksum,
            "receipt": receipt,
            "referenceChecksum": Data(SHA256.hash(data: Data(("reference " + checksum).utf8))).base64EncodedString(),
            "wrappingKey": Data(RandomIdentifier.bytes(32)).base64EncodedString(),
            "size": size,
        ]
    }

    /// Runs blocking file work (a write, a hash, a read) on a thread of Dispatch's, never the
    /// event loop's. Not NIO's blocking pool: its threads live for the process, and their
    /// queues are never freed (LeakSanitizer names them at every exit).
    static func offLoop<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async { continuation.resume(with: Result { try body() }) }
        }
    }

    // MARK: Download

    private func download(_ request: Request, context: ServerRequestContext, head: Bool) async throws -> Response {
        let token = context.parameters.get("token") ?? ""
        let found: Engine.AssetDownload
        do {
            found = try await thread.read { [engine] in try engine.assetDownload(token) }
        } catch let e as ShareFlowError where e.code == .unknownItem {
            throw Self.notFound
        }
        // The bytes must be there before a 200 says how many: a blob lost from under its
        // record is the operator's to hear of, never a cut answer.
        let (storage, checksum, thread) = (found.storage, found.checksum, thread)
        let kept =
            storage.isInDatabase
            ? try await thread.read { try storage.size(checksum) }
            : try await AssetTransfer.offLoop { try storage.size(checksum) }
        guard kept == found.size else {
            throw CloudKitError(
                ShareFlowError(
                    .serviceUnavailable,
                    "asset \(checksum) is \(kept.map { "\($0) bytes" } ?? "missing") in the store, where its record says \(found.size) bytes; run `shareflow store check`"
                ).forOperator()
            )
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/octet-stream"
        headers[.acceptRanges] = "bytes"
        headers[.cacheControl] = "private, no-store"
        let size = found.size
        var status = HTTPResponse.Status.ok
        var range: Range<Int64> = 0..<size
        switch AssetTransfer.range(request.headers[.range], size: size) {
        case .whole: break
        case .part(let r):
            status = .partialContent
            range = r
            headers[.contentRange] = "bytes \(r.lowerBound)-\(r.upperBound - 1)/\(size)"
        case .unsatisfiable:
            headers[.contentRange] = "bytes */\(size)"
            return Response(status: .rangeNotSatisfiable, headers: headers, body: .init())
        }
        headers[.contentLength] = String(range.count)
        if head { return Response(status: status, headers: headers, body: .init()) }
        let wanted = range
        let part = Int64(CloudKitServer.partBytes) * 4
        return Response(
            status: status,
            headers: headers,
            body: .init(contentLength: Int(wanted.count)) { writer in
                var at = wanted.lowerBound
                while at < wanted.upperBound {
                    let end = min(at + part, wanted.upperBound)
                    let from = at
                    let bytes =
                        storage.isInDatabase
                        ? try await thread.read { try storage.read(checksum, range: from..<end) }
                        : try await AssetTransfer.offLoop { try storage.read(checksum, range: from..<end) }
                    guard Int64(bytes.count) == end - from else { throw Self.notFound }
                    try await writer.write(ByteBuffer(bytes: bytes))
                    at = end
                }
                try await writer.finish(nil)
            }
        )
    }

    /// What a `Range` header asks of `size` bytes: one range (`bytes=a-b`, `a-`, `-n`), the
    /// whole (no header, a unit other than bytes, several ranges: served whole as RFC 9110
    /// allows), or none it can have (416).
    enum Asked: Equatable {
        case whole
        case part(Range<Int64>)
        case unsatisfiable
    }

    static func range(_ header: String?, size: Int64) -> Asked {
        guard let header, header.utf8.count <= 200 else { return .whole }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes="), !trimmed.contains(",") else { return .whole }
        let spec = trimmed.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let sides = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard sides.count == 2 else { return .whole }
        let digits = { (s: String) in !s.isEmpty && s.utf8.count <= 18 && s.utf8.allSatisfy { (0x30...0x39).contains($0) } }
        if sides[0].isEmpty {
            // The last n bytes.
            guard digits(sides[1]), let n = Int64(sides[1]) else { return .whole }
            guard n > 0, size > 0 else { return .unsatisfiable }
            return .part(max(0, size - n)..<size)
        }
        guard digits(sides[0]), let first = Int64(sides[0]) else { return .whole }
        var last = size - 1
        if !sides[1].isEmpty {
            guard digits(sides[1]), let l = Int64(sides[1]) else { return .whole }
            guard l >= first else { return .whole }
            last = min(l, size - 1)
        }
        guard first < size else { return .unsatisfiable }
        return .part(first..<(last + 1))
    }
}

/// An open file an upload's body is written to, from a pool thread.
private final class FileDescriptorBox: Sendable {
    let fd: Int32
    init(_ fd: Int32) { self.fd = fd }

    func write(_ buffer: ByteBuffer) throws {
        try buffer.withUnsafeReadableBytes { raw in
            var done = 0
            while done < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw DescriptorWriteFailure(reason: String(cString: strerror(errno))) }
                done += n
            }
        }
    }
}

private struct DescriptorWriteFailure: Error { let reason: String }
