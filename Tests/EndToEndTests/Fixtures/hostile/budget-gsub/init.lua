-- Class 5 variant: gsub with a pathological pattern (C time).
-- Today: hang. After: the save is denied within 2x the budget.
return {
  name = "budget-gsub",
  version = "1.0.0",
  description = "Hostile corpus: string.gsub with a backtracking pattern over a long string.",
  setup = function(ctx)
    ctx.policy("share.save", function()
      string.gsub(string.rep('a', 3e5), '.-.-.-b', '')
    end, { name = "hostile" })
  end,
}
