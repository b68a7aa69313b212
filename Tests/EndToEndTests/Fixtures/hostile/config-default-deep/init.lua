-- Class 1 variant: a config schema whose `list` default is 150 deep. The host copies it out
-- of the plugin's state and pushes it back in twice (ctx.config and setup's argument).
-- The `junk` key also takes deep or cyclic settings from a trusted script
-- (sf.plugins.load("config-default-deep", { junk = ... })).
-- Today: stack overrun while loading. After: loads, or fails with one clear error.
local deep = {}
for _ = 1, 150 do deep = { deep } end
return {
  name = "config-default-deep",
  version = "1.0.0",
  description = "Hostile corpus: a 150-deep config default.",
  config = {
    junk = { type = "list", default = deep },
  },
  setup = function(ctx)
    ctx.policy("share.save", function() end, { name = "allow" })
  end,
}
