-- Own variant, control: yields from Lua code that a host function called (a __tostring run by
-- ctx.log or by ctx.json.encode for a table key, a table.sort comparator), inside a coroutine. Each must end with a clear error
-- ("attempt to yield across a C-call boundary"), never resume past a host frame.
-- The policy denies only when a yield escaped; the driver expects the save allowed.
return {
  name = "yield-across-host",
  version = "1.0.0",
  description = "Hostile corpus: yields across host and C frames.",
  setup = function(ctx)
    ctx.policy("share.save", function()
      local escaped = {}
      local attempts = {
        log = function()
          ctx.log.info(setmetatable({}, { __tostring = function() coroutine.yield("escaped") return "t" end }))
        end,
        sort = function()
          table.sort({ 3, 2, 1 }, function(a, b) coroutine.yield("escaped") return a < b end)
        end,
        json = function()
          local key = setmetatable({}, { __tostring = function() coroutine.yield("escaped") return "k" end })
          ctx.json.encode({ [key] = 1 })
        end,
      }
      for name, attempt in pairs(attempts) do
        local co = coroutine.create(attempt)
        local _, value = coroutine.resume(co)
        if value == "escaped" then escaped[#escaped + 1] = name end
      end
      if #escaped > 0 then return ctx.deny("a yield escaped a host frame: " .. table.concat(escaped, ", ")) end
    end, { name = "hostile" })
  end,
}
