-- Class 3: one bad number given to a host function, under pcall, during setup:
-- `ctx.decisions{ limit = v }` (call = "decisions") or the `priority` option of `ctx.on` /
-- `ctx.policy` (call = "on" / "policy"); `value` names v (nan, inf, -inf, huge = 1e300,
-- 2^63, -1, maxinteger). The outcome goes to results.log: "<call> <value>\t<ok>\t<result>".
-- Today: the Swift conversion traps (SIGILL), pcall or not. After: `bad argument #n to 'f'`.
return {
  name = "numeric-args",
  version = "1.0.0",
  description = "Hostile corpus: NaN, infinite, huge and negative numeric arguments.",
  config = {
    call = { type = "string", default = "decisions" },
    value = { type = "string", default = "-1" },
  },
  setup = function(ctx, config)
    local values = { nan = 0 / 0, inf = math.huge, ["-inf"] = -math.huge, huge = 1e300,
                     ["2^63"] = 2 ^ 63, ["-1"] = -1, maxinteger = math.maxinteger }
    local v = values[config.value]
    local calls = {
      decisions = function() return ctx.decisions{ limit = v } end,
      on = function() return ctx.on("participant.fetched", function() end, { priority = v }) end,
      policy = function() return ctx.policy("share.save", function() end, { priority = v }) end,
    }
    local ok, result = pcall(calls[config.call])
    ctx.appendFile("results.log", string.format("%s %s\t%s\t%s\n", config.call, config.value, tostring(ok), tostring(result)))
  end,
}
