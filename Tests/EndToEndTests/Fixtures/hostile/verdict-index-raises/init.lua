-- Class 2: the verdict is a table whose __index raises; the host reads verdict.allow.
-- Today: the read runs outside any protected call: "unprotected Lua error", abort.
-- After: a table with a metatable is not a verdict: the accept is denied, with a reason
-- naming what came back, and no metamethod of it runs outside a protected, budgeted call.
return {
  name = "verdict-index-raises",
  version = "1.0.0",
  description = "Hostile corpus: a policy verdict whose __index raises.",
  setup = function(ctx)
    ctx.policy("share.accept", function()
      return setmetatable({}, { __index = function(_, key) error("no field " .. tostring(key)) end })
    end, { name = "hostile" })
  end,
}
