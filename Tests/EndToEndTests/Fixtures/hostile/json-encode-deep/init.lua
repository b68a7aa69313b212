-- Class 1 variant: a 60-deep (acyclic) table given to ctx.json.encode, under the encoder's
-- own limit of 64 levels but far past the 20 stack slots a C function may use unchecked.
-- Today: stack overrun. After: either the JSON or a clear error; never a crash. The policy
-- allows either way (the driver checks only that the host survives and serves).
return {
  name = "json-encode-deep",
  version = "1.0.0",
  description = "Hostile corpus: sf.json.encode of a 60-deep table.",
  setup = function(ctx)
    ctx.policy("share.save", function()
      local v = {}
      for i = 1, 60 do v = { [i % 2 == 0 and "k" or 1] = v } end
      pcall(ctx.json.encode, v)
    end, { name = "hostile" })
  end,
}
