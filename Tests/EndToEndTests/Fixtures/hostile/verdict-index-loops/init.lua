-- Class 2: the verdict is a table whose __index loops; the host reads verdict.allow after
-- the call (and its budget) ended.
-- Today: hang. After: denied (a table with a metatable is not a verdict), within 2x budget.
return {
  name = "verdict-index-loops",
  version = "1.0.0",
  description = "Hostile corpus: a policy verdict whose __index loops.",
  setup = function(ctx)
    ctx.policy("share.accept", function()
      return setmetatable({}, { __index = function() while true do end end })
    end, { name = "hostile" })
  end,
}
