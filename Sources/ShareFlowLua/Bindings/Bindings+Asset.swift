import CLua
import Foundation
import ShareFlow

/// Assets in Lua (SPEC §19 A2): `sf.Asset{ data = }` everywhere, `sf.Asset{ path = }` only in a
/// trusted state (the engine reads the path with the server's rights: in a sandboxed state it
/// would read any file the server can), and `asset:read()`. A saved asset is the table
/// `{ checksum =, size = }` (and `path =`, its file, in a trusted state: a sandboxed one is not
/// told where the store keeps its files).
extension Bindings {
    /// Pushes an asset's table.
    func push(asset: Asset) {
        let L = lua.L
        lua_createtable(L, 0, 3)
        switch asset.content {
        case .stored(let sum, let size), .claimed(let sum, let size?):
            lua.push(string: sum)
            lua_setfield(L, -2, "checksum")
            lua_pushinteger(L, lua_Integer(size))
            lua_setfield(L, -2, "size")
        case .claimed(let sum, nil):
            lua.push(string: sum)
            lua_setfield(L, -2, "checksum")
        case .data(let data):
            data.withUnsafeBytes { raw in
                _ = lua_pushlstring(L, raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count)
            }
            lua_setfield(L, -2, "data")
            lua_pushinteger(L, lua_Integer(data.count))
            lua_setfield(L, -2, "size")
        case .file, .receipt:
            break
        }
        if !withholdsOperatorDetail, let url = asset.fileURL {
            lua.push(string: url.path)
            lua_setfield(L, -2, "path")
        }
        setMetatable(.asset)
    }

    /// The asset an `sf.Asset` table holds (read raw: the table is the script's): its
    /// `checksum` (a saved asset), else its `data`, else its `path` (trusted states only).
    func assetValue(_ call: LuaCall, _ abs: Int32, key: String, position: Int32) throws -> Asset {
        let L = call.L
        if let sum = try call.stringField(abs, "checksum") {
            guard AssetBlobs.isChecksum(sum) else {
                throw call.argumentError(position, "field '\(key)': Asset.checksum must be a SHA-256 in lower-case hex")
            }
            let size = try call.integerField(abs, "size", in: 0...Int(Int64.max)).map(Int64.init)
            return Asset(checksum: sum, size: try size ?? storing { try engine.assets.size(sum) } ?? 0)
        }
        switch call.field(abs, "data") {
        case LUA_TSTRING:
            defer { call.state.pop() }
            var len = 0
            let p = lua_tolstring(L, -1, &len)!
            try checkAssetSize(call, Int64(len), key: key, position: position)
            try call.state.chargeCopy(len)
            return Asset(data: Data(bytes: p, count: len))
        case LUA_TNIL:
            call.state.pop()
        default:
            defer { call.state.pop() }
            throw call.argumentError(position, "field '\(key)': Asset.data must be a string, got \(call.typeName(-1))")
        }
        guard let path = try call.stringField(abs, "path") else {
            throw call.argumentError(position, "field '\(key)': an Asset holds data, a path or a checksum")
        }
        return Asset(fileURL: try assetFile(call, path, position: position))
    }

    /// `sf.Asset{ path = }`'s file, checked now: a regular file no larger than an asset may be.
    /// Refused in a sandboxed state.
    func assetFile(_ call: LuaCall, _ path: String, position: Int32) throws -> URL {
        guard !withholdsOperatorDetail else {
            throw call.argumentError(position, "sf.Asset{ path = } is not available in a sandboxed state; use sf.Asset{ data = }")
        }
        var info = stat()
        guard !path.isEmpty, !path.utf8.contains(0), stat(path, &info) == 0 else {
            throw call.argumentError(position, "cannot open \(path) (\(String(cString: strerror(errno))))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw call.argumentError(position, "\(path) is not a regular file") }
        try checkAssetSize(call, Int64(info.st_size), key: "path", position: position)
        return URL(fileURLWithPath: path)
    }

    /// Runs `body`, a read of the store's blobs: a failure of the store (its folder's path in
    /// it) is the operator's, raised as `readable` gives it (withheld in a sandboxed state,
    /// under an incident ID).
    private func storing<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as ShareFlowError {
            if e.isOperatorDetail { throw raise(e) }
            throw e
        } catch let failure as AssetBlobs.Failure {
            throw raise(ShareFlowError(.serviceUnavailable, "the asset's bytes cannot be read: \(failure.description)").forOperator(outage: false))
        }
    }

    private func checkAssetSize(_ call: LuaCall, _ n: Int64, key: String, position: Int32) throws {
        let most = engine.options.assetMaxBytes
        guard n <= most else {
            throw call.argumentError(position, "field '\(key)': the asset is \(n) bytes; an asset holds at most \(most) (assets.maxBytes)")
        }
    }

    /// `asset:read()`: the bytes as a string, at most `assets.maxBytes`, charged to the state
    /// before they are pushed.
    func readAsset(_ call: LuaCall) throws -> Int32 {
        guard lua_type(call.L, 1) == LUA_TTABLE, valueKind(at: 1) == .asset else {
            throw call.argumentError(1, "Asset expected, got \(call.typeName(1))")
        }
        var asset = try assetValue(call, 1, key: "asset", position: 1)
        let most = engine.options.assetMaxBytes
        if case .stored(let sum, _) = asset.content {
            asset.source = engine.assets
            guard let size = try storing({ try engine.assets.size(sum) }) else {
                throw call.argumentError(1, "the asset \(sum.prefix(12))… is not in this store")
            }
            guard size <= most else { throw call.argumentError(1, "the asset is \(size) bytes; at most \(most) are read (assets.maxBytes)") }
            try call.state.chargeCopy(Int(size))
        }
        let data: Data
        do {
            data = try storing { try asset.read(maxBytes: most) }
        } catch let e as ShareFlowError {
            throw call.argumentError(1, e.message)
        }
        // A saved asset's bytes were charged above, before they were read.
        if !asset.isSaved { try call.state.chargeCopy(data.count) }
        data.withUnsafeBytes { raw in
            _ = lua_pushlstring(call.L, raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count)
        }
        return 1
    }
}
