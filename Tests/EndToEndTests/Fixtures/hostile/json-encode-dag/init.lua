-- Own variant (attack review 11): values that are small in the plugin's heap but huge once
-- walked path by path, handed to ctx.json.encode. `kind` picks:
--   dag      t = { t, t } forty times over (41 tables, 2^40 paths)
--   amplify  a list of 2000 references to one 1 MiB string (2 GB of JSON)
--   control  one 256 KiB string of control characters (each one becomes "\u0001")
-- Before: the host walked every path in Swift, out of the budget's reach: the DAG for ever,
-- the list into a 2 GB string (host memory, not the plugin's cap).
-- After: the walk stops past 100,000 values ("more than 100000 values") or 16 MiB of text
-- ("longer than 16 MiB"): an error, at once; the save is denied within 2x the budget. The
-- control string is encoded (or refused) within 2x the budget too.
return {
  name = "json-encode-dag",
  version = "1.0.0",
  description = "Hostile corpus: json.encode of shared subtables and repeated strings.",
  config = {
    kind = { type = "string", default = "dag" },
  },
  setup = function(ctx, config)
    ctx.policy("share.save", function()
      if config.kind == "control" then
        ctx.json.encode(string.rep("\1", 256 * 1024))
      elseif config.kind == "amplify" then
        local s = string.rep("x", 2^20)
        local t = {}
        for i = 1, 2000 do t[i] = s end
        ctx.json.encode(t)
      else
        local t = { "x" }
        for _ = 1, 40 do t = { t, t } end
        ctx.json.encode(t)
      end
    end, { name = "hostile" })
  end,
}
