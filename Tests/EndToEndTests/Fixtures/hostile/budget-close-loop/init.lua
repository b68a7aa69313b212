-- Class 5: a to-be-closed variable whose __close loops, run while the budget error unwinds.
-- Today: the __close handler runs after the hook disarmed: hang.
-- After: the __close handler is stopped too; the save is denied.
return {
  name = "budget-close-loop",
  version = "1.0.0",
  description = "Hostile corpus: a looping __close handler of a to-be-closed variable.",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.policy("share.save", function()
      local guard <close> = setmetatable({}, { __close = function() spin() end })
      spin(guard)  -- guard is closed while this call unwinds
    end, { name = "hostile" })
  end,
}
