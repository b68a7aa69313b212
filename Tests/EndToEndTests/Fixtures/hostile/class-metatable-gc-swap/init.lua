-- Class 5 variant: no setmetatable at all. The plugin takes the metatable of a host object
-- (an Account userdata, which has a __gc that releases the Swift object) and replaces its
-- __gc with a loop, then makes more such objects garbage and collects.
-- Today: getmetatable returns the real class metatable; the first finalizer is stopped by the
-- hook, the next loops with the hook off: hang. (Left alone, the loop would run at exit when
-- states are closed, or in a later collection outside any budget.)
-- After: the host's metatables are out of reach (or edits to them do nothing); the call ends
-- within 2x its budget whatever the verdict.
return {
  name = "class-metatable-gc-swap",
  version = "1.0.0",
  description = "Hostile corpus: replaces a host class metatable's __gc with a loop.",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.policy("share.save", function(req)
      local mt = getmetatable(req.caller)
      if type(mt) == "table" then
        pcall(function() mt.__gc = function() spin() end end)
      end
      for _ = 1, 3 do ctx.accounts.list() end   -- fresh Account userdata, garbage at once
      collectgarbage()
      collectgarbage()
    end, { name = "hostile" })
  end,
}
