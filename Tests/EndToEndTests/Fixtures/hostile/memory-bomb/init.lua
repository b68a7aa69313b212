-- SPEC §8 control: string.rep('x', 2^31) in a policy.
-- Today and after: a memory error ends the call; the save is denied; the host keeps serving.
return {
  name = "memory-bomb",
  version = "1.0.0",
  description = "Hostile corpus: a memory bomb in a policy.",
  setup = function(ctx)
    ctx.policy("share.save", function()
      return string.rep('x', 2^31)
    end, { name = "hostile" })
  end,
}
