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
        try lua.call(arguments: 2, results: 0)
        lua.pop()
    }

    static let prelude = """
        local folder, print_ = ...
        local open, load_, type_, error_, rawget_, setmetatable_ = io.open, load, type, error, rawget, setmetatable
        local maxChunk = 1024 * 1024
        local os_ = os
        os = { time = os_.time, clock = os_.clock, date = os_.date, difftime = os_.difftime }
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
        -- No finalizers: __gc runs outside any hook, where no budget can stop it.
        setmetatable = function(t, mt)
          if type_(mt) == "table" and rawget_(mt, "__gc") ~= nil then
            error_("bad argument #2 to 'setmetatable' (plugins cannot set __gc finalizers)", 2)
          end
          return setmetatable_(t, mt)
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
        -- require: Lua files inside the plugin's folder, loaded as text.
        local function searcher(name)
          if name:find("..", 1, true) or name:sub(1, 1) == "/" then
            return "\\n\\tmodule names may not leave the plugin's folder"
          end
          local base = folder .. "/" .. name:gsub("%.", "/")
          for _, path in ipairs({ base .. ".lua", base .. "/init.lua" }) do
            local f = open(path, "rb")
            if f then
              local text = f:read("a")
              f:close()
              local chunk, err = load_(text, "@" .. path, "t")
              if not chunk then error_(err, 0) end
              return chunk, path
            end
          end
          return "\\n\\tno file '" .. base .. ".lua' in the plugin's folder"
        end
        package.searchers = { package.searchers[1], searcher }
        package.loadlib = nil
        package.cpath = ""
        package.path = ""
        """
}
