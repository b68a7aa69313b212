-- Class 5, observer flavour: the pcall loop in a participant.fetched observer.
-- Today: hang. After: the observer ends within 2x its budget; its error, which names the
-- budget ("plugin 'budget-observer-pcall-loop': CPU budget of 50 ms exceeded"), is logged.
return {
  name = "budget-observer-pcall-loop",
  version = "1.0.0",
  description = "Hostile corpus: while true do pcall(endless loop) end in an observer.",
  setup = function(ctx)
    local function spin() while true do end end
    ctx.on("participant.fetched", function()
      while true do pcall(spin) end
    end, { name = "hostile" })
  end,
}
