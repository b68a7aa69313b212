-- Class 8: a share.accept policy that returns one malformed verdict, picked by `kind`.
-- Today: many of them allow (fail open). After: only nothing (nil), true and sf.allow()
-- allow; anything else denies, with a reason naming what came back. The allowing kinds
-- (nil, true, allow) and the explicit denials (deny, false-reason) are the controls.
local kinds = {
  ["allow-string-false"] = function() return { allow = "false" } end,
  ["allow-zero"] = function() return { allow = 0 } end,
  ["reason-only"] = function() return { reason = "no" } end,
  ["empty-table"] = function() return {} end,
  ["string"] = function() return "no" end,
  ["zero"] = function() return 0 end,
  ["nan"] = function() return 0 / 0 end,
  ["function"] = function() return function() return true end end,
  ["thread"] = function() return coroutine.create(function() end) end,
  ["userdata"] = function(req) return req.caller end,
  ["metatable"] = function() return setmetatable({ allow = true }, {}) end,
  ["index-allow"] = function() return setmetatable({}, { __index = { allow = true } }) end,
  -- controls
  ["nil"] = function() return nil end,
  ["true"] = function() return true end,
  ["allow"] = function(_, ctx) return ctx.allow() end,
  ["deny"] = function(_, ctx) return ctx.deny("denied on purpose") end,
  ["false-reason"] = function() return false, "denied on purpose" end,
}
return {
  name = "verdict-malformed",
  version = "1.0.0",
  description = "Hostile corpus: malformed policy verdicts.",
  config = {
    kind = { type = "string", default = "allow-string-false" },
  },
  setup = function(ctx, config)
    local make = assert(kinds[config.kind], "unknown kind " .. config.kind)
    ctx.policy("share.accept", function(req) return make(req, ctx) end, { name = config.kind })
  end,
}
