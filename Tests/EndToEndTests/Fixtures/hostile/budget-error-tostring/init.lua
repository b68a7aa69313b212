-- Class 5 variant: after a pcall'd budget error, raises an error object whose __tostring
-- loops; the host's traceback handler calls __tostring.
-- Today: hang (the hook is off by then). After: the save is denied within 2x the budget.
return {
  name = "budget-error-tostring",
  version = "1.0.0",
  description = "Hostile corpus: an error object whose __tostring loops, raised after the budget is spent.",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.policy("share.save", function()
      pcall(spin)
      error(setmetatable({}, { __tostring = function() spin() return 'never' end }))
    end, { name = "hostile" })
  end,
}
