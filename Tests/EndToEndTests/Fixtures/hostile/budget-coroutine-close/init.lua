-- Class 5 variant: coroutine.close runs a suspended coroutine's looping __close handler,
-- on a thread that is not being resumed (so not tracked by the host).
-- Wave 2: the save was denied within 2x the budget.
-- Wave 4: no value a plugin makes can have __close (docs/reference/lua-bugs.md); closing
-- coroutines in a loop is still the budget's, and the save is denied.
return {
  name = "budget-coroutine-close",
  version = "1.0.0",
  description = "Hostile corpus: coroutine.close running a looping __close handler.",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.policy("share.save", function()
      local co = coroutine.create(function()
        local refused = pcall(setmetatable, {}, { __close = function() spin() end })
        assert(not refused, "setmetatable refuses __close")
        coroutine.yield()
      end)
      coroutine.resume(co)
      while true do coroutine.close(co) end
    end, { name = "hostile" })
  end,
}
