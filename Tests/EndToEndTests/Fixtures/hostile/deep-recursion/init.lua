-- Control: unbounded recursion in a policy ends with a stack overflow error; denied.
return {
  name = "deep-recursion",
  version = "1.0.0",
  description = "Hostile corpus: unbounded Lua recursion in a policy.",
  setup = function(ctx)
    ctx.policy("share.save", function()
      local function f(n) return f(n + 1) + 1 end
      return f(1)
    end, { name = "hostile" })
  end,
}
