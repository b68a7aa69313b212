-- Own variant (attack review 8): package.searchpath, which the sandbox left in place, opens
-- any path with fopen to tell whether it exists: /etc/shadow, ~/.ssh/id_rsa, ... and on a
-- FIFO with no writer fopen blocks in C for ever. The plugin looks for it at load time and in
-- a policy; where it is there, it probes `probe` (a FIFO the driver makes).
-- Before: package.searchpath was the C function: files outside the folder could be probed,
-- and a FIFO hung the process.
-- After: package.searchpath is nil in plugins (package.loadlib too, package.cpath empty); the
-- policy allows. It denies, naming what it found, when any of them is there.
local atLoad = type(package.searchpath)
return {
  name = "package-searchpath",
  version = "1.0.0",
  description = "Hostile corpus: probes files with package.searchpath.",
  config = {
    probe = { type = "string", default = "/etc/hostname" },
  },
  setup = function(ctx, config)
    local atSetup = type(package.searchpath)
    ctx.policy("share.save", function()
      local found = {}
      if atLoad ~= "nil" then found[#found + 1] = "package.searchpath at load: " .. atLoad end
      if atSetup ~= "nil" then found[#found + 1] = "package.searchpath in setup: " .. atSetup end
      if package.searchpath ~= nil then
        found[#found + 1] = "package.searchpath in a policy: " .. tostring(package.searchpath("x", config.probe))
      end
      if package.loadlib ~= nil then found[#found + 1] = "package.loadlib" end
      if package.cpath ~= "" then found[#found + 1] = "package.cpath " .. tostring(package.cpath) end
      if #found > 0 then return ctx.deny(table.concat(found, "; ")) end
    end, { name = "hostile" })
  end,
}
