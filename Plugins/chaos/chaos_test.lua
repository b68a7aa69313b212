-- The chaos plugin (SPEC §15 F4): its config's rules armed at setup, ended at unload.
local sf = require("shareflow")

local function world()
  sf.accounts.create{ email = "alice@example.com" }
  local db = sf.as("alice@example.com"):container("iCloud.test").privateCloudDatabase
  return db, db:saveZone("Z")
end

test("the plugin arms its config's rules from setup, and they end when it unloads", function()
  local db, zone = world()
  sf.plugins.load("chaos", { rules = { { operation = "modifyRecords", fault = "requestRateLimited", retryAfter = 9 } } })
  local listed = sf.faults.list()
  expect.eq(#listed, 1)
  expect.eq(listed[1].owner, "plugin")
  expect.eq(listed[1].plugin, "chaos")
  local _, err = db:modifyRecords{ save = { sf.Record{ recordType = "N", zone = zone } } }
  expect.eq(err.code, "requestRateLimited")
  expect.eq(err.retryAfter, 9)
  sf.plugins.unload("chaos")
  expect.eq(#sf.faults.list(), 0)
  _, err = db:modifyRecords{ save = { sf.Record{ recordType = "N", zone = zone } } }
  expect.eq(err, nil)
end)

test("its seed numbers the rules that name none, so a run replays", function()
  local db = world()
  local function run()
    sf.plugins.load("chaos", { seed = 5, rules = { { operation = "fetchRecords", fault = "serviceUnavailable", probability = 0.5 } } })
    local out = {}
    for i = 1, 24 do
      local _, err = db:fetchRecord(sf.RecordID{ recordName = "r" .. i })
      out[i] = err.code == "serviceUnavailable" and "x" or "."
    end
    sf.plugins.unload("chaos")
    return table.concat(out)
  end
  local first = run()
  expect.eq(run(), first)
  expect.truthy(first:find("x") and first:find("%."), first)
  expect.eq(sf.faults.list()[1], nil)
end)

test("a bad rule fails the load, naming the rule and its field", function()
  local ok, err = pcall(sf.plugins.load, "chaos", { rules = { { fault = "zoneBusy" }, { fault = "zoneBusy", count = -1 } } })
  expect.eq(ok, false)
  expect.truthy(tostring(err):find("rules[2]", 1, true), tostring(err))
  expect.truthy(tostring(err):find("count must be an integer from 1", 1, true), tostring(err))
  expect.eq(#sf.faults.list(), 0, "the rules armed before the bad one went with the failed load")
end)

test("its rules go when it unloads, a script's stay", function()
  world()
  local mine = sf.faults.add{ operation = "query", fault = "quotaExceeded" }
  sf.plugins.load("chaos", { rules = { { operation = "fetchRecords", fault = "zoneBusy" } } })
  expect.eq(#sf.faults.list(), 2)
  sf.plugins.unload("chaos")
  expect.eq(#sf.faults.list(), 1, "the script's rule stays")
  expect.eq(mine:remove(), true)
end)

test("logInjections logs each fault it injects", function()
  local db, zone = world()
  sf.plugins.load("chaos", { logInjections = true, rules = { { operation = "modifyRecords", fault = "zoneBusy" } } })
  local _, err = db:modifyRecords{ save = { sf.Record{ recordType = "N", zone = zone } } }
  expect.code(select(2, next(err.partialErrors)), "zoneBusy")
end)
