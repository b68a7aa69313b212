-- Own variant (attack review 7, 13): requires each module named in `modules`, under pcall,
-- and writes "<module>\tok <value>" or "<module>\terror <message, on one line>" to results.log. The
-- folder holds two plain modules (inside.lua, sub/init.lua); the driver copies it into a
-- plugins folder of its own and adds what cannot be kept in the repository: fifo.lua (a FIFO
-- with no writer), link.lua (a symbolic link to a Lua file outside the folder), linkdir (a
-- symbolic link to a folder outside), big.lua (1 MiB + 1 byte of Lua) and edge.lua (exactly
-- 1 MiB), and asks for names that try to leave the folder ("..", "/", empty parts).
-- Before: the searcher opened any path with io.open and read it whole: a FIFO blocked for
-- ever, a link led out of the folder, and a big module was parsed in C out of the budget's
-- reach (load's 1 MiB cap did not apply to require).
-- After: the host opens each component without following links, reads only regular files
-- of at most 1 MiB: the FIFO, the links and big.lua fail with an error that says why, at
-- once; inside, sub and edge load; the odd names are refused.
return {
  name = "require-module-files",
  version = "1.0.0",
  description = "Hostile corpus: requires FIFOs, links, big files and odd names as modules.",
  config = {
    modules = { type = "list", default = { "inside", "sub" } },
  },
  setup = function(ctx, config)
    ctx.policy("share.save", function()
      for _, name in ipairs(config.modules) do
        package.loaded[name] = nil
        local ok, value = pcall(require, name)
        local outcome = ok and ("ok " .. tostring(value)) or ("error " .. tostring(value):gsub("%s*\n%s*", " | "))
        ctx.appendFile("results.log", tostring(name) .. "\t" .. outcome .. "\n")
      end
    end, { name = "hostile" })
  end,
}
