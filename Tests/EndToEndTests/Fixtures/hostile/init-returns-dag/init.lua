-- Own variant (attack review 12): init.lua returns its plugin table with a field holding a
-- DAG (t = { t, t } forty times over: 41 tables, 2^40 paths). The host copies the table
-- into Swift when it loads the plugin.
-- Before: the copy followed every path, in Swift, with no budget: the load never ended.
-- After: the copy stops past 100,000 values: the load fails with one clear error, at once.
local t = { "x" }
for _ = 1, 40 do t = { t, t } end
return {
  name = "init-returns-dag",
  version = "1.0.0",
  description = "Hostile corpus: init.lua returns a table with a 2^40-path DAG.",
  junk = t,
  setup = function(ctx)
    ctx.policy("share.save", function() end, { name = "allow" })
  end,
}
