-- Class 5 variant: xpcall whose message handler loops (it runs after the hook fired once).
-- Today: hang. After: the save is denied within 2x the budget.
return {
  name = "budget-xpcall-handler",
  version = "1.0.0",
  description = "Hostile corpus: xpcall(endless loop, endless loop).",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.policy("share.save", function()
      while true do xpcall(spin, spin) end
    end, { name = "hostile" })
  end,
}
