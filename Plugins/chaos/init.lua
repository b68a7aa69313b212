-- Fault injection for app testers (SPEC §15 F4): arms the fault rules of its config while it is
-- loaded, so an app's retry, back-off and merge code meets CloudKit's own failures on purpose.
-- Its rules end when it unloads; sf.faults.clear() and the admin route's DELETE remove them too.
--
--   plugins = { chaos = { rules = {
--     { operation = "records/modify", fault = "requestRateLimited", probability = 0.2 },
--     { operation = "changes/zone", fault = "zoneBusy", retryAfter = 2, count = 3 },
--   }, seed = 7 } }
return {
  name = "chaos",
  version = "1.0.0",
  description = "Fault injection: arms the fault rules of its config (SPEC §15) while it is loaded.",
  config = {
    -- Each a rule of SPEC §15: operation, container, environment, database, zone, recordType,
    -- recordName, caller, fault, retryAfter, itemCode, when, probability, seed, after, count, latencyMs.
    rules = { type = "list", items = "table", default = {} },
    -- The seed of the first rule that names none; the next gets seed + 1 (past 2^53 - 1: 0), and so on. A run
    -- with the same seed and the same requests meets the same faults.
    seed = { type = "integer", default = 0, min = 0, max = 9007199254740991 },
    -- Log each injection (the fault, the operation, the caller).
    logInjections = { type = "boolean", default = false },
  },
  setup = function(ctx)
    for i, given in ipairs(ctx.config.rules) do
      local rule = {}
      for key, value in pairs(given) do rule[key] = value end
      -- Wrapped to stay a seed (at most 2^53 - 1) when the config's seed is near the top.
      if rule.seed == nil then rule.seed = (ctx.config.seed + i - 1) % 9007199254740992 end
      local ok, err = pcall(ctx.faults.add, rule)
      if not ok then error(string.format("rules[%d]: %s", i, tostring(err)), 0) end
    end
    if #ctx.config.rules > 0 then
      ctx.log.info(string.format("chaos: %d fault rule(s) armed", #ctx.config.rules))
    end
    if ctx.config.logInjections then
      ctx.on("fault.injected", function(ev)
        ctx.log.info(string.format("chaos: %s in %s for %s (rule %d)", ev.fault, ev.operation,
          tostring(ev.caller or "-"), ev.rule))
      end, { name = "log" })
    end
  end,
}
