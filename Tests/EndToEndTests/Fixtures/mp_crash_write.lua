-- Writes Alice's zone "Mix" in batches of arg[2] items (saves, deletes, names made again) until
-- killed; after each commit, one line: Alice's and Bob's current change tokens. arg[1] seeds it.
local sf = require("shareflow")
local zones = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/zones.lua")
local db = sf.as("alice@example.com"):container("iCloud.test").privateCloudDatabase
local sdb = sf.as("bob@example.com"):container("iCloud.test").sharedCloudDatabase
local zone = zones.named(db, "Mix")
math.randomseed(tonumber(arg[1]))
local size = tonumber(arg[2])
local b = 0
while true do
  b = b + 1
  local save, delete, used = {}, {}, {}
  for _ = 1, size do
    local n = "m" .. math.random(1, size * 2)
    if not used[n] then
      used[n] = true
      if math.random() < 0.3 then
        delete[#delete + 1] = sf.RecordID{ recordName = n, zoneID = zone }
      else
        save[#save + 1] = sf.Record{ recordType = "Item", recordName = n, zoneID = zone, fields = { w = arg[1], b = b } }
      end
    end
  end
  local _, err = db:modifyRecords{ save = save, delete = delete, savePolicy = "allKeys", atomic = false }
  if err and err.code ~= "partialFailure" then error(tostring(err)) end
  io.write(db:currentChangeToken(zone), " ", sdb:currentChangeToken(zone), "\n")
  io.stdout:flush()
end
