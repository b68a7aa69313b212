-- Class 5: catches the budget error with pcall and loops again.
-- Today: the hook disarms itself after raising once, so the outer loop runs forever (hang).
-- After: once spent, every further instruction raises again; the save is denied.
return {
  name = "budget-pcall-loop",
  version = "1.0.0",
  description = "Hostile corpus: while true do pcall(endless loop) end in a policy.",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.policy("share.save", function()
      while true do pcall(spin) end
    end, { name = "hostile" })
  end,
}
