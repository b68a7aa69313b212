-- Class 1: the table init.lua returns carries a 150-deep value, which the host copies into
-- Swift (one level of recursion and stack pushes per nesting level).
-- Today: stack overrun while loading. After: the plugin loads (the extra field ignored) or
-- fails to load with one clear error naming it; the host keeps serving.
local junk = {}
for _ = 1, 150 do junk = { junk } end
return {
  name = "return-deep-value",
  version = "1.0.0",
  description = "Hostile corpus: init.lua returns a 150-deep value beside its fields.",
  junk = junk,
  setup = function(ctx)
    ctx.policy("share.save", function() end, { name = "allow" })
  end,
}
