-- Class 2 variant: a new global assignment loops forever (after init.lua's call returned,
-- so outside its budget). Today: hang while loading. After: loads or fails clearly, within
-- 2x the budget of its two calls (init.lua and setup).
setmetatable(_G, { __newindex = function() while true do end end })
return {
  name = "global-newindex-loops",
  version = "1.0.0",
  description = "Hostile corpus: _G.__newindex loops.",
  setup = function(ctx)
    ctx.policy("share.save", function() end, { name = "allow" })
  end,
}
