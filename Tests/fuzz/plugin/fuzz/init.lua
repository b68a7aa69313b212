-- Fuzzes the shareflow API from inside the plugin sandbox: every event and every policy
-- decision runs a small slice of random calls through `ctx` (Tests/fuzz/drive_plugin.lua makes
-- the events). Each plugin call has a CPU budget; a slice that runs out of it just ends.
return {
  name = "fuzz",
  version = "1.0.0",
  description = "Fuzzes the Lua API from a sandboxed plugin state, a slice per event and per policy decision.",
  config = {
    seed = { type = "integer", default = 12345 },
    skip = { type = "list", items = "string", default = {} },
    members = { type = "list", items = "string", default = {} },
    steps = { type = "integer", default = 8, min = 1, max = 200 },
  },
  setup = function(ctx, config)
    local core = require("fuzzcore")
    local append = ctx.appendFile
    local fuzz = core.new({
      api = ctx, mode = "plugin", seed = config.seed, skip = config.skip, members = config.members,
      crumb = function(n, desc) pcall(append, "crumbs.log", n .. " " .. desc .. "\n") end,
    })
    for _, name in ipairs(ctx.events) do
      ctx.on(name, function(ev) fuzz.slice(ev, "Event", false, config.steps) end, { name = "slice " .. name })
    end
    for _, point in ipairs({ "share.accept", "participant.add", "share.publicPermission", "share.save" }) do
      ctx.policy(point, function(req) return fuzz.slice(req, "PolicyRequest", true, config.steps) end,
        { name = "slice " .. point, priority = -100 })
    end
  end,
}
