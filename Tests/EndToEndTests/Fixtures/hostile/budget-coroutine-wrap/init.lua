-- Class 5 variant: the pcall loop inside a coroutine.wrap function.
-- Today: hang. After: the save is denied within 2x the budget.
return {
  name = "budget-coroutine-wrap",
  version = "1.0.0",
  description = "Hostile corpus: while true do pcall(endless loop) end inside coroutine.wrap.",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.policy("share.save", function()
      coroutine.wrap(function()
        while true do pcall(spin) end
      end)()
    end, { name = "hostile" })
  end,
}
