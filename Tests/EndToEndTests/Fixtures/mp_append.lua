-- Makes records "u<arg[1]>_<n>" in Alice's zone "Mix", one a call (a few milliseconds apart), n from 1 to arg[2]; prints "made N".
local sf = require("shareflow")
local zones = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/zones.lua")
local db = sf.as("alice@example.com"):container("iCloud.test").privateCloudDatabase
local zone = zones.named(db, "Mix")
for n = 1, tonumber(arg[2]) do
  local record = sf.Record{ recordType = "Item", recordName = ("u%s_%d"):format(arg[1], n), zoneID = zone, fields = { n = n } }
  local _, err = db:modifyRecords{ save = { record } }
  assert(not err, tostring(err))
  -- A few milliseconds between calls: the writing lasts while the other side asks.
  local t = os.clock()
  while os.clock() - t < 0.004 do end
end
print("made " .. arg[2])
