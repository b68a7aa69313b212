-- Class 5: a to-be-closed variable whose __close loops, run while the budget error unwinds.
-- Wave 2: the __close handler was stopped too; the save was denied.
-- Wave 4: no value a plugin makes can have __close (the system Lua 5.4.4 corrupts memory
-- through to-be-closed variables: docs/reference/lua-bugs.md), so the handler cannot exist;
-- the loop it would have run is still the budget's, and the save is denied.
return {
  name = "budget-close-loop",
  version = "1.0.0",
  description = "Hostile corpus: a looping __close handler of a to-be-closed variable.",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.policy("share.save", function()
      local refused, why = pcall(setmetatable, {}, { __close = function() spin() end })
      assert(not refused and why:find("cannot set __close", 1, true), "setmetatable refuses __close")
      local guard <close> = nil
      spin(guard)
    end, { name = "hostile" })
  end,
}
