-- Class 2: init.lua makes every new global assignment raise; the host stores the returned
-- table in a global of the plugin's state afterwards.
-- Today: lua_setglobal runs unprotected: "unprotected Lua error", abort while loading.
-- After: the plugin loads (the host keeps its own values out of _G, or sets them raw and
-- protected) or fails with one clear error naming it; the host keeps serving.
setmetatable(_G, { __newindex = function(_, key) error("no new global " .. tostring(key)) end })
return {
  name = "global-newindex-raises",
  version = "1.0.0",
  description = "Hostile corpus: _G.__newindex raises.",
  setup = function(ctx)
    ctx.policy("share.save", function() end, { name = "allow" })
  end,
}
