-- Class 5, control: a plain endless loop in a share.save policy.
-- Today and after the fix: ends at the budget; the save is denied (fail-closed).
return {
  name = "budget-plain-loop",
  version = "1.0.0",
  description = "Hostile corpus: an endless loop in a policy (the control every budget case builds on).",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.policy("share.save", function()
      spin()
    end, { name = "hostile" })
  end,
}
