-- Class 5 variant: time in the parser: load() of a 4 MB chunk (C time, no VM instruction).
-- Today: about 0.3 s per load inside one C call. After: within 2x the budget; denied.
return {
  name = "budget-load-big-chunk",
  version = "1.0.0",
  description = "Hostile corpus: load of a huge text chunk (parser time).",
  setup = function(ctx)
    ctx.policy("share.save", function()
      local text = string.rep('x=1 ', 1e6)
      while true do load(text) end
    end, { name = "hostile" })
  end,
}
