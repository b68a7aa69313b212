import CLua
import Foundation

/// What a plugin's Lua state may use (SPEC §8): no `io`, `os` reduced to time functions, no
/// `debug`, text-only `load`, `require` confined to the plugin's folder (Lua files only),
/// `print` to the log. Each plugin has its own state, so its string metatable and library
/// tables are its own: it cannot alter them for others.
enum Sandbox {
    /// - Parameter print: where `print` goes (nil: standard output, as for a sandboxed script).
    static func apply(to lua: LuaState, folder: String, print: ((String) -> Void)?) throws {
        lua.trackCoroutines()
        if let print {
            lua.push(function: "print") { call in
                var parts: [String] = []
                for i in 1...max(call.count, 1) where call.count > 0 { parts.append(ShareFlowModule.describe(call.state, at: i)) }
                print(parts.joined(separator: "\t"))
                return 0
            }
        } else {
            lua_getglobal(lua.L, "print")
        }
        let printIndex = lua.top
        try lua.load(prelude, chunkName: "=[sandbox]")
        lua.push(string: folder)
        lua_pushvalue(lua.L, printIndex)
        lua.push(function: "require") { call in
            let name = try call.string(1)
            switch ModuleFile.read(module: name, in: folder) {
            case .success(let (bytes, path)):
                bytes.withUnsafeBytes { buf in
                    _ = lua_pushlstring(call.L, buf.baseAddress?.assumingMemoryBound(to: CChar.self), buf.count)
                }
                call.state.push(string: path)
            case .failure(let reason):
                lua_pushnil(call.L)
                call.state.push(string: reason.description)
            }
            return 2
        }
        try lua.call(arguments: 3, results: 0)
        lua.pop()
    }

    static let prelude = """
        local folder, print_, readModule_ = ...
        local load_, type_, error_, rawget_, setmetatable_ = load, type, error, rawget, setmetatable
        local maxChunk = 1024 * 1024
        local os_ = os
        os = { time = os_.time, clock = os_.clock, date = os_.date, difftime = os_.difftime }
        local debugSetmetatable, debugGetmetatable, next_, find_ = debug.setmetatable, debug.getmetatable, next, string.find
        io, debug, dofile, loadfile = nil, nil, nil, nil
        print = print_
        -- Text only: a binary chunk is refused whatever mode the caller asks for. Parsing runs
        -- in C, out of the budget's reach, so a chunk is at most 1 MiB.
        load = function(chunk, name, mode, env)
          if type_(chunk) == "string" then
            if #chunk > maxChunk then return nil, "load: chunk larger than 1 MiB" end
          elseif type_(chunk) == "function" then
            local reader, total = chunk, 0
            chunk = function()
              local piece = reader()
              if type_(piece) == "string" then
                total = total + #piece
                if total > maxChunk then error_("load: chunk larger than 1 MiB", 0) end
              end
              return piece
            end
          end
          return load_(chunk, name, "t", env)
        end
        -- xpcall's handler would run where the error is raised; a budget's error is raised from
        -- a hook, where Lua runs no hooks, so a looping handler could never be stopped. Here the
        -- handler runs after the failed call has unwound (plugins have no debug library to
        -- look at the stack anyway), under the budget like any other code.
        local pcall_, pack, unpack = pcall, table.pack, table.unpack
        xpcall = function(f, handler, ...)
          local r = pack(pcall_(f, ...))
          if r[1] then return unpack(r, 1, r.n) end
          return false, select(2, pcall_(handler, r[2]))
        end
        -- Metatables as they are when set. The garbage collector reads two fields of a live
        -- metatable in C, where no hook runs: __gc (a finalizer no budget can stop) and __mode
        -- (weak keys alone make ephemeron tables, whose collection can take seconds). So a
        -- table gets a copy of the metatable given, checked, which the plugin never holds:
        -- getmetatable still answers the table it gave, but fields set on it afterwards do not
        -- reach the table (__index = mt, the usual class idiom, still finds later methods).
        local copies = setmetatable_({}, { __mode = "kv" })  -- copy -> the plugin's metatable (no ephemerons here either)
        setmetatable = function(t, mt)
          if type_(t) ~= "table" then
            error_("bad argument #1 to 'setmetatable' (table expected, got " .. type_(t) .. ")", 2)
          end
          if mt ~= nil and type_(mt) ~= "table" then
            error_("bad argument #2 to 'setmetatable' (nil or table expected)", 2)
          end
          local current = debugGetmetatable(t)
          if current ~= nil then
            local given = copies[current]
            if (given and rawget_(given, "__metatable") ~= nil) or (not given and rawget_(current, "__metatable") ~= nil) then
              error_("cannot change a protected metatable", 2)
            end
          end
          if mt == nil then
            debugSetmetatable(t, nil)
            return t
          end
          if rawget_(mt, "__gc") ~= nil then
            error_("bad argument #2 to 'setmetatable' (plugins cannot set __gc finalizers)", 2)
          end
          local mode = rawget_(mt, "__mode")
          if type_(mode) == "string" and find_(mode, "k", 1, true) and not find_(mode, "v", 1, true) then
            error_("bad argument #2 to 'setmetatable' (plugins cannot make tables with weak keys only; use __mode = 'kv')", 2)
          end
          local copy = {}
          for k, v in next_, mt do copy[k] = v end
          if rawget_(mt, "__metatable") == nil then copy.__metatable = mt end
          copies[copy] = mt
          debugSetmetatable(t, copy)
          return t
        end
        local collect = collectgarbage
        collectgarbage = function(opt, ...)
          -- A full collection runs in C for as long as the heap is big (about 2 ms per MiB):
          -- past 8 MiB a plugin gets one incremental step instead, which the budget can follow.
          if opt == nil or opt == "collect" or opt == "step" then
            if collect("count") > 8192 then return collect("step", 0) end
            return collect(opt, ...)
          end
          if opt == "count" or opt == "isrunning" then
            return collect(opt, ...)
          end
          error_("collectgarbage('" .. tostring(opt) .. "') is not available to plugins", 2)
        end
        -- require: Lua files inside the plugin's folder, loaded as text. The host finds and
        -- reads the file (no symbolic link, regular files of at most 1 MiB); nothing here calls
        -- a global or a string method the plugin could have replaced.
        local function searcher(name)
          if type_(name) ~= "string" then return "\\n\\tmodule names are strings" end
          local text, path = readModule_(name)
          if not text then return "\\n\\t" .. path end
          local chunk, err = load_(text, "@" .. path, "t")
          if not chunk then error_(err, 0) end
          return chunk, path
        end
        package.searchers = { package.searchers[1], searcher }
        package.loadlib = nil
        package.searchpath = nil
        package.cpath = ""
        package.path = ""
        """
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
              parts.allSatisfy({ !$0.isEmpty }) else {
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
            return errno == ELOOP ? .failure(Failure(description: "'\(relative)' is a symbolic link; modules are read only from the plugin's own files")) : nil
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
