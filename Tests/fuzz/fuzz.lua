-- Fuzzes the shareflow Lua API from a trusted script: random values at every module function,
-- method, getter, setter and metamethod, for a time budget. Errors are fine; the process must
-- neither die nor hang. Prints `fuzz ok N calls` at the end.
--
--   .build/debug/shareflow run --store :memory: Tests/fuzz/fuzz.lua [SECONDS=25] [SEED=12345]
--
-- SHAREFLOW_FUZZ_BREADCRUMB=file: where the description of each call goes before it runs.
-- SHAREFLOW_FUZZ_SKIP=a,b: classes of known crashes to step around (exploration only).
local here = ((arg and arg[0]) or "Tests/fuzz/fuzz.lua"):match("^(.*)/[^/]*$") or "."
local common = dofile(here .. "/common.lua")

local budget, seed = common.arguments()
local core = common.loadCore()
local members, source = common.members(core)
local skips = common.skipList()
local crumbPath, crumb, closeCrumbs = common.breadcrumbs()
local done, elapsed = common.deadline(budget)

local fuzz = core.new({
  api = require("shareflow"), mode = "script", seed = seed, skip = skips, members = members, crumb = crumb,
  log = function(s) io.stderr:write(s, "\n") end,
  -- SHAREFLOW_FUZZ_GCCHECK=1: a full collection after every call, so that heap damage shows
  -- at the call that did it (slow; for pinning crashes down)
  afterCall = os.getenv("SHAREFLOW_FUZZ_GCCHECK") == "1" and function() collectgarbage() end or nil,
})
print(("fuzz: script mode, seed %d, %g s, %d module functions, members from %s"):format(
  seed, budget, #fuzz.targets(), source))
print("fuzz: breadcrumbs in " .. crumbPath .. (#skips > 0 and ", skipping " .. table.concat(skips, ",") or ""))
io.stdout:flush()

local calls = fuzz.run(done, function(n)
  print(("fuzz: %d calls, %.0f s"):format(n, elapsed()))
  io.stdout:flush()
end)
closeCrumbs()
if os.getenv("SHAREFLOW_FUZZ_STATS") == "1" then
  print(("%-70s %7s %7s"):format("call", "made", "no error"))
  for _, line in ipairs(fuzz.stats()) do print(line) end
end
if fuzz.wedged() then
  print("fuzz FAILED after " .. calls .. " calls: " .. fuzz.wedged())
  os.exit(1)
end
print(("fuzz ok %d calls (%d fuzzer step errors)"):format(calls, fuzz.internalErrors()))
