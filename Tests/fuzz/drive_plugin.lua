-- Drives the fuzz plugin (Tests/fuzz/plugin/fuzz): makes events and policy decisions for a time
-- budget (accounts, participants, shares, accepts, permission changes, deletions, discovery,
-- operations), each of which runs a slice of fuzzing inside the plugin's sandboxed state.
-- Prints `fuzz ok N calls` at the end.
--
--   .build/debug/shareflow run --store :memory: --plugins Tests/fuzz/plugin \
--     --config Tests/fuzz/plugin.config.lua Tests/fuzz/drive_plugin.lua [SECONDS=25] [SEED=12345]
--
-- SHAREFLOW_FUZZ_BREADCRUMB=file: the driver's breadcrumbs; the plugin's go to crumbs.log in
-- its data folder (printed at the start). SHAREFLOW_FUZZ_SKIP=a,b as for fuzz.lua.
local here = ((arg and arg[0]) or "Tests/fuzz/drive_plugin.lua"):match("^(.*)/[^/]*$") or "."
local common = dofile(here .. "/common.lua")
local sf = require("shareflow")

local budget, seed = common.arguments()
local core = common.loadCore()
local members, source = common.members(core)
local skips = common.skipList()
local crumbPath, crumb, closeCrumbs = common.breadcrumbs()

local function isLoaded()
  for _, name in ipairs(sf.plugins.loaded()) do if name == "fuzz" then return true end end
  return false
end
if not isLoaded() then
  error("the fuzz plugin is not loaded: run with --plugins Tests/fuzz/plugin --config Tests/fuzz/plugin.config.lua", 0)
end

-- The plugin's breadcrumbs, fresh for this run; then reload it with this run's seed, skip
-- list and members.
local pluginCrumbs = sf.plugins.dataFolder("fuzz") .. "/crumbs.log"
local f = io.open(pluginCrumbs, "w")
if f then f:close() end
sf.plugins.load("fuzz", { seed = seed, skip = skips, members = members })
assert(isLoaded(), "the fuzz plugin did not reload")

print(("fuzz: plugin mode, seed %d, %g s, members from %s"):format(seed, budget, source))
print("fuzz: breadcrumbs in " .. crumbPath .. (#skips > 0 and ", skipping " .. table.concat(skips, ",") or ""))
print("fuzz: plugin breadcrumbs in " .. pluginCrumbs)
io.stdout:flush()

local driver = core.new({ api = sf, mode = "driver", seed = seed + 1, skip = skips, members = members, crumb = crumb })
local done, elapsed = common.deadline(budget)
for _ = 1, 8 do driver.worldStep() end
local last = 0
local reloads = 0
while not done() do
  driver.activity()
  -- The driver fuzzes shareflow.plugins too, unload included: bring the plugin back.
  if not isLoaded() then
    reloads = reloads + 1
    sf.plugins.load("fuzz", { seed = seed + reloads, skip = skips, members = members })
  end
  if elapsed() - last >= 5 then
    last = elapsed()
    print(("fuzz: %d driver calls, %.0f s"):format(driver.calls(), elapsed()))
    io.stdout:flush()
  end
end
-- Plugins reload without a restart (SPEC §7): whatever the fuzzing left in the plugin's state
-- (finalizers included) must not keep the host from closing it.
crumb(driver.calls() + 1, "shareflow.plugins.reload(\"fuzz\") at the end")
local reloaded, reloadError = pcall(sf.plugins.reload, "fuzz")
closeCrumbs()
if not reloaded then error("the fuzz plugin did not reload: " .. tostring(reloadError), 0) end

local pluginCalls = 0
f = io.open(pluginCrumbs, "r")
if f then
  for line in f:lines() do pluginCalls = tonumber(line:match("^(%d+) ")) or pluginCalls end
  f:close()
end
assert(isLoaded(), "the fuzz plugin is no longer loaded")
if pluginCalls == 0 then error("the fuzz plugin made no calls (no events reached it?)", 0) end
print(("fuzz ok %d calls (plugin %d, driver %d)"):format(pluginCalls + driver.calls(), pluginCalls, driver.calls()))
