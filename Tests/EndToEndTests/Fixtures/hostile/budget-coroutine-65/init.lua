-- Class 5: the loop runs in the 65th nested coroutine (the host tracks 64 running coroutines).
-- Today: the innermost coroutine is never reached by the hook: hang.
-- After: coroutines of any number and depth are covered; the save is denied.
return {
  name = "budget-coroutine-65",
  version = "1.0.0",
  description = "Hostile corpus: an endless loop 65 coroutines deep.",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.policy("share.save", function()
      local function nest(n)
        if n == 0 then spin() end
        local co = coroutine.create(nest)
        local ok, err = coroutine.resume(co, n - 1)
        if not ok then error(err, 0) end
      end
      nest(65)
    end, { name = "hostile" })
  end,
}
