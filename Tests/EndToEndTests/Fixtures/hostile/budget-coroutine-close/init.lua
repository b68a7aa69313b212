-- Class 5 variant: coroutine.close runs a suspended coroutine's looping __close handler,
-- on a thread that is not being resumed (so not tracked by the host).
-- Today: hang. After: the save is denied within 2x the budget.
return {
  name = "budget-coroutine-close",
  version = "1.0.0",
  description = "Hostile corpus: coroutine.close running a looping __close handler.",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.policy("share.save", function()
      local co = coroutine.create(function()
        local guard <close> = setmetatable({}, { __close = function() spin() end })
        coroutine.yield(guard)
      end)
      coroutine.resume(co)
      while true do coroutine.close(co) end
    end, { name = "hostile" })
  end,
}
