import CLua
import CShareFlowSupport
import Foundation

/// What a plugin's Lua state may use (SPEC §8). The state is made with
/// `LuaState(libraries: .sandbox)`, which opens Lua's libraries from an allow-list in C
/// (`sf_open_sandbox`: no `io`, `os` reduced to its time functions, no `debug`, a `package`
/// with no loaders, text-only `load`, a `setmetatable` that refuses `__gc`); this adds what
/// needs the host: `require` confined to the plugin's folder (Lua files only), `print` to the
/// log, an `xpcall` whose handler runs under the budget, and the budget-checking library
/// functions. Each plugin has its own state, so its string metatable and library tables are
/// its own: it cannot alter them for others.
enum Sandbox {
    /// - Parameter print: where `print` goes (nil: standard output, as for a sandboxed script).
    static func apply(to lua: LuaState, folder: String, print: ((String) -> Void)?) throws {
        lua.trackCoroutines()
        try lua.checkStack(5)
        try lua.load(prelude, chunkName: "=[sandbox]")
        lua.push(function: "require") { call in
            let name = try call.string(1)
            switch ModuleFile.read(module: name, in: folder) {
            case .success(let (bytes, path)):
                try call.state.checkStack(2)
                bytes.withUnsafeBytes { buf in
                    _ = lua_pushlstring(call.L, buf.baseAddress?.assumingMemoryBound(to: CChar.self), buf.count)
                }
                call.state.push(string: path)
            case .failure(let reason):
                try call.state.checkStack(2)
                lua_pushnil(call.L)
                call.state.push(string: reason.description)
            }
            return 2
        }
        if let print {
            lua.push(function: "print") { call in
                var parts: [String] = []
                var bytes = 0
                for i in 1...max(call.count, 1) where call.count > 0 {
                    let part = ShareFlowModule.describe(call.state, at: i)
                    bytes += part.utf8.count
                    parts.append(part)
                    if bytes > Sandbox.maxPrintBytes { break }
                }
                print(parts.joined(separator: "\t"))
                return 0
            }
        } else {
            lua_pushnil(lua.L)
        }
        // `require`'s loader, which keeps a module's file name (a plugin's own `load` cannot).
        lua_pushcclosure(lua.L, sf_sandbox_load_module, 0)
        try lua.call(arguments: 3, results: 0)
    }

    /// What one `print` of a plugin may hand the log before `limits.logKiB` cuts it (the
    /// parts past this are not even described).
    static let maxPrintBytes = 1 << 20

    /// Every value the prelude captures is itself on the allow-list (the reachability test
    /// walks upvalues too). The text: `Lua/sandbox_prelude.lua`, linted and embedded at build
    /// time (the EmbedLua plugin).
    static var prelude: String { EmbeddedLua.sandboxPrelude }
}

/// A plugin's module file, found and read by the host: `a.b` is `a/b.lua` or `a/b/init.lua`
/// below the plugin's folder, each component opened without following symbolic links, a
/// regular file of at most 1 MiB (a FIFO or a device would block, a big file would be parsed
/// out of the budget's reach).
enum ModuleFile {
    struct Failure: Error, CustomStringConvertible { let description: String }
    static let maxBytes = 1 << 20

    static func read(module name: String, in folder: String) -> Result<([UInt8], String), Failure> {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.".utf8)
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard !name.isEmpty, name.utf8.count <= 200, name.utf8.allSatisfy(allowed.contains),
            parts.allSatisfy({ !$0.isEmpty })
        else {
            return .failure(Failure(description: "module name '\(name)' is not letters, digits, '_', '-' and dots"))
        }
        let relative = parts.joined(separator: "/")
        for candidate in [relative + ".lua", relative + "/init.lua"] {
            if let bytes = readRegularFile(candidate, below: folder) {
                return bytes.map { ($0, folder + "/" + candidate) }
            }
        }
        return .failure(Failure(description: "no file '\(relative).lua' in the plugin's folder"))
    }

    /// nil: no such file; a failure: there, but not readable as a module.
    private static func readRegularFile(_ relative: String, below folder: String) -> Result<[UInt8], Failure>? {
        var dir = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dir >= 0 else { return nil }
        let components = relative.split(separator: "/").map(String.init)
        for component in components.dropLast() {
            let next = openat(dir, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            close(dir)
            guard next >= 0 else { return nil }
            dir = next
        }
        let fd = openat(dir, components.last!, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        close(dir)
        guard fd >= 0 else {
            return errno == ELOOP
                ? .failure(Failure(description: "'\(relative)' is a symbolic link; modules are read only from the plugin's own files")) : nil
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            return .failure(Failure(description: "'\(relative)' is not a regular file"))
        }
        guard st.st_size <= maxBytes else {
            return .failure(Failure(description: "'\(relative)' is larger than 1 MiB"))
        }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { readFile(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            done += n
        }
        return .success(Array(bytes[..<done]))
    }
}

/// `read(2)`, named apart from the enum's own `read`.
private func readFile(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(fd, buffer, count)
}
