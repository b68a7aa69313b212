-- Class 5: time inside a C function: a backtracking pattern over a long string.
-- Today: the count hook never runs inside string.find: hang (minutes).
-- After: time inside library C functions is bounded; the save is denied.
return {
  name = "budget-string-find",
  version = "1.0.0",
  description = "Hostile corpus: string.find with a pathological pattern over 300,000 characters.",
  setup = function(ctx)
    ctx.policy("share.save", function()
      string.find(string.rep('a', 3e5), '.-.-.-.-.-b')
    end, { name = "hostile" })
  end,
}
