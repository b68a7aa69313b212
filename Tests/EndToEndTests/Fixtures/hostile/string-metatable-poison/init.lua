-- Own variant (SPEC §8: the string metatable and library tables cannot be altered for
-- others): poisons the string metatable and library functions of its own state.
-- After (and today): only this plugin's state is affected; another plugin's string methods
-- (domain-allowlist's email:match) and the host keep working.
local function poisoned() error("poisoned by string-metatable-poison") end
getmetatable("").__index = poisoned
for _, name in ipairs{ "match", "find", "format", "lower", "gsub" } do rawset(string, name, poisoned) end
for _, name in ipairs{ "concat", "insert" } do rawset(table, name, poisoned) end
return {
  name = "string-metatable-poison",
  version = "1.0.0",
  description = "Hostile corpus: poisons the string metatable and library tables of its state.",
  setup = function(ctx)
    ctx.policy("share.accept", function() end, { name = "allow" })
  end,
}
