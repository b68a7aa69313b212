-- Class 5 variant: table.move over 2^53 indices (a C loop that never ends).
-- Today: hang. After: the save is denied within 2x the budget.
return {
  name = "budget-table-move",
  version = "1.0.0",
  description = "Hostile corpus: table.move({}, 1, 2^53, 1, {}).",
  setup = function(ctx)
    ctx.policy("share.save", function()
      table.move({}, 1, 2^53, 1, {})
    end, { name = "hostile" })
  end,
}
