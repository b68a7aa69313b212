-- Class 5: __gc finalizers that loop (the first is stopped, the next runs with the hook off).
-- Today: hang in collectgarbage.
-- After: plugins cannot install __gc finalizers: setmetatable with a __gc field raises; denied.
return {
  name = "budget-gc-finalizer",
  version = "1.0.0",
  description = "Hostile corpus: two looping __gc finalizers, then a full collection.",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.policy("share.save", function()
      for _ = 1, 2 do setmetatable({}, { __gc = function() spin() end }) end
      collectgarbage()
      collectgarbage()
    end, { name = "hostile" })
  end,
}
