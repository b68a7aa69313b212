-- Own variant (attack review 14): a policy denies with a reason of 16 MiB (one string the
-- plugin keeps: 1 MiB made at load, doubled by each of the first four calls, then the same
-- string every time, so a call costs the plugin nothing). `kind` picks how:
--   deny   return ctx.deny(big)
--   error  error(big, 0)
-- Before: the whole reason was copied into the host's decision log (1000 entries kept) and
-- into the caller's error on every call: the host grew by 16 MiB per denied save.
-- After: a reason is cut to 1 KiB (an error's text to 8 KiB) before the host keeps it: the
-- decision log and the caller's error hold at most that; the host does not grow per call.
local big = string.rep("r", 1024) .. "|" .. string.rep("s", 1023 * 1024)
return {
  name = "deny-huge-reason",
  version = "1.0.0",
  description = "Hostile corpus: denies with a 16 MiB reason.",
  config = {
    kind = { type = "string", default = "deny" },
  },
  setup = function(ctx, config)
    ctx.policy("share.save", function()
      if #big < 16 * 1024 * 1024 then big = big .. big end
      if config.kind == "error" then error(big, 0) end
      return ctx.deny(big)
    end, { name = "hostile" })
  end,
}
