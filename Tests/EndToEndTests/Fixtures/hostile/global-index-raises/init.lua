-- Class 2 variant: init.lua removes the global `shareflow` and makes every missing global
-- raise; the host reads the global `shareflow` to build ctx.
-- Today: lua_getglobal runs unprotected: "unprotected Lua error", abort while loading.
-- After: loads (ctx does not depend on the plugin's globals) or fails with one clear error.
rawset(_G, "shareflow", nil)
setmetatable(_G, { __index = function(_, key) error("no global " .. tostring(key)) end })
return {
  name = "global-index-raises",
  version = "1.0.0",
  description = "Hostile corpus: removes `shareflow` and makes missing globals raise.",
  setup = function(ctx)
    ctx.policy("share.save", function() end, { name = "allow" })
  end,
}
