-- Class 5, load time: setup(ctx) itself runs the pcall loop.
-- Today: hang while loading. After: loading fails within 2x the budget with an error that
-- names the plugin and the budget; the host keeps serving.
return {
  name = "budget-setup-loop",
  version = "1.0.0",
  description = "Hostile corpus: setup never returns (pcall loop).",
  setup = function()
    local function spin() while true do end end
    while true do pcall(spin) end
  end,
}
