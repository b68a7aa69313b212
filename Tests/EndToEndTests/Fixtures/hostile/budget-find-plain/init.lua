-- Class 5 variant: a plain (no pattern) find whose naive search is O(n*m): 1 MiB x 32 KiB.
-- Today: about 0.8 s inside one C call, over 2x the budget. After: within 2x the budget.
return {
  name = "budget-find-plain",
  version = "1.0.0",
  description = "Hostile corpus: string.find plain over a long string with a long near-miss needle.",
  setup = function(ctx)
    ctx.policy("share.save", function()
      string.find(string.rep('a', 2^20), string.rep('a', 2^15) .. 'b', 1, true)
    end, { name = "hostile" })
  end,
}
