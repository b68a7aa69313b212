-- One of several writers of Alice's zone "Mix" at once: arg[1] seeds it, arg[2] is how many
-- batches. Each batch saves (allKeys: made or overwritten) and deletes a few names of a pool
-- the other writers use too, so names are deleted and made again across processes; some
-- batches delete a name and save it again in two calls back to back. Prints "wrote N".
local sf = require("shareflow")
local zones = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/zones.lua")
local db = sf.as("alice@example.com"):container("iCloud.test").privateCloudDatabase
local zone = zones.named(db, "Mix")
math.randomseed(tonumber(arg[1]))
local batches = tonumber(arg[2])
local function name() return "n" .. math.random(1, 8) end
local wrote = 0
for b = 1, batches do
  local save, delete, used = {}, {}, {}
  for _ = 1, math.random(1, 3) do
    local n = name()
    if not used[n] then
      used[n] = true
      save[#save + 1] = sf.Record{ recordType = "Item", recordName = n, zoneID = zone, fields = { w = arg[1], b = b } }
    end
  end
  for _ = 1, math.random(0, 2) do
    local n = name()
    if not used[n] then used[n] = true; delete[#delete + 1] = sf.RecordID{ recordName = n, zoneID = zone } end
  end
  local _, err = db:modifyRecords{ save = save, delete = delete, savePolicy = "allKeys", atomic = false }
  if err and err.code ~= "partialFailure" then error(tostring(err)) end
  if b % 4 == 0 then
    -- Deleted and made again at once, in two calls.
    local n = name()
    db:modifyRecords{ delete = { sf.RecordID{ recordName = n, zoneID = zone } }, atomic = false }
    local again = sf.Record{ recordType = "Item", recordName = n, zoneID = zone, fields = { w = arg[1], again = b } }
    local _, e2 = db:modifyRecords{ save = { again },
      savePolicy = "allKeys" }
    assert(not e2, tostring(e2))
  end
  wrote = wrote + 1
end
print("wrote " .. wrote)
