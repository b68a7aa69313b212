-- Class 5 variant: marks objects for finalization with a placeholder __gc = true, then swaps
-- in a looping function (Lua checks only that the field exists when setmetatable runs).
-- Today: hang in collectgarbage. After: setmetatable with any __gc field raises; denied.
return {
  name = "gc-placeholder-swap",
  version = "1.0.0",
  description = "Hostile corpus: a placeholder __gc field swapped for a looping finalizer after setmetatable.",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.policy("share.save", function()
      local mt = { __gc = true }
      for _ = 1, 2 do setmetatable({}, mt) end
      mt.__gc = function() spin() end
      collectgarbage()
      collectgarbage()
    end, { name = "hostile" })
  end,
}
