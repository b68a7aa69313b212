-- What the two fuzz drivers (fuzz.lua, drive_plugin.lua) share: arguments, the skip list, the
-- member list from types/shareflow.lua, breadcrumbs and the clock. Trusted scripts only.
local common = {}

--- The folder of the running driver (from arg[0]).
common.here = ((arg and arg[0]) or "Tests/fuzz/fuzz.lua"):match("^(.*)/[^/]*$") or "."

--- budget (seconds), seed: from arg[1], arg[2] (else SHAREFLOW_FUZZ_SEED, else 12345).
function common.arguments()
  local budget = tonumber(arg and arg[1]) or 25
  local seed = math.tointeger(tonumber(arg and arg[2])) or math.tointeger(tonumber(os.getenv("SHAREFLOW_FUZZ_SEED")))
    or 12345
  return budget, seed
end

--- SHAREFLOW_FUZZ_SKIP=a,b: classes of known crashes to step around while exploring.
function common.skipList()
  local list = {}
  for name in (os.getenv("SHAREFLOW_FUZZ_SKIP") or ""):gmatch("[^,%s]+") do list[#list + 1] = name end
  return list
end

function common.loadCore()
  return dofile(common.here .. "/plugin/fuzz/fuzzcore.lua")
end

--- Members of every class, from types/shareflow.lua when it can be read (else the built-in copy).
function common.members(core)
  local path = common.here .. "/../../types/shareflow.lua"
  local f = io.open(path, "r")
  if not f then return core.builtinMembers, "built-in list (" .. path .. " not found)" end
  local text = f:read("a")
  f:close()
  local members = core.parseTypes(text)
  local known = {}
  for _, m in ipairs(core.builtinMembers) do known[m] = true end
  local added = 0
  for _, m in ipairs(members) do if not known[m] then added = added + 1 end end
  -- keep the built-in names too (RecordFields and friends are not in the definitions)
  for _, m in ipairs(core.builtinMembers) do members[#members + 1] = m end
  return members, ("%s (%d members, %d beyond the built-in list)"):format(path, #members, added)
end

--- Breadcrumbs: one line per call, flushed before the call runs, in
--- SHAREFLOW_FUZZ_BREADCRUMB (default: a temporary file). Cut back when it grows past 8 MiB.
function common.breadcrumbs()
  local path = os.getenv("SHAREFLOW_FUZZ_BREADCRUMB")
  if not path or path == "" then path = os.tmpname() end
  local file = assert(io.open(path, "w"))
  local written = 0
  local function crumb(n, desc)
    local line = n .. " " .. desc .. "\n"
    if written > 8 * 1024 * 1024 then
      file:close()
      file = assert(io.open(path, "w"))
      written = 0
    end
    file:write(line)
    file:flush()
    written = written + #line
  end
  local function close() file:close() end
  return path, crumb, close
end

--- A deadline `budget` seconds from now (CPU clock, with the wall clock as a backstop).
function common.deadline(budget)
  local c0, t0 = os.clock(), os.time()
  local function done() return os.clock() - c0 >= budget or os.time() - t0 >= budget + 2 end
  local function elapsed() return os.clock() - c0 end
  return done, elapsed
end

return common
