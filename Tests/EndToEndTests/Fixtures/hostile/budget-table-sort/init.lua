-- Class 5 variant: table.sort of a million elements with the default comparison (all C).
-- The table is built once, over as many calls as its building takes (a call may spend its
-- budget building it); then every call sorts it in place (sorted input still takes about
-- 0.5 s). Today: about 0.7 s inside one C call (round 2 of the driver).
-- After: within 2x the budget; the save is denied.
return {
  name = "budget-table-sort",
  version = "1.0.0",
  description = "Hostile corpus: table.sort of 2^20 numbers (1,024 distinct values).",
  setup = function(ctx)
    local function spin() while true do end end
    local t = {}
    for i = 1, 1024 do t[i] = (i * 7919) % 1024 end
    ctx.policy("share.save", function()
      while #t < 2^20 do table.move(t, 1, #t, #t + 1) end
      table.sort(t)
      spin()
    end, { name = "hostile" })
  end,
}
