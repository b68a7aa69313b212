-- Class 3 variant: a config schema bound of math.huge. Checking the default against it
-- formats the bound for the error message, converting inf to an integer.
-- Today: the Swift conversion traps (SIGILL) while loading. After: the schema (or its
-- default) is refused with one clear error naming the plugin; no crash.
return {
  name = "config-schema-inf-bound",
  version = "1.0.0",
  description = "Hostile corpus: a config bound of math.huge.",
  config = {
    n = { type = "number", default = 1, min = math.huge },
  },
  setup = function(ctx)
    ctx.policy("share.save", function() end, { name = "allow" })
  end,
}
