-- Class 1: a cyclic table given to ctx.json.encode (a cycle through a hash field and one
-- through an array element).
-- Today: the encoder's depth guard (64) comes after the stack has overrun (2+ slots per
-- level, no stack check): crash. After: an error naming the cycle; the save is denied.
return {
  name = "json-encode-cyclic",
  version = "1.0.0",
  description = "Hostile corpus: sf.json.encode of a cyclic table.",
  setup = function(ctx)
    ctx.policy("share.save", function()
      local t = { name = "loop" }
      t.self = t
      t[1] = { t }
      ctx.json.encode(t)   -- must raise; if it returns, the policy allows and the driver fails
    end, { name = "hostile" })
  end,
}
