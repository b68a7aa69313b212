-- Saves, changes and deletes records in Alice's zone "Log" until killed; after each commit,
-- one line: the step, then Alice's and Bob's current change tokens.
local sf = require("shareflow")
local zones = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/zones.lua")
local c = sf.as("alice@example.com"):container("iCloud.crash")
local db = c.privateCloudDatabase
local sdb = sf.as("bob@example.com"):container("iCloud.crash").sharedCloudDatabase
local zone = zones.named(db, "Log")
-- Steps go on from the last committed one (an earlier writer's, killed).
local step, cursor = 0, nil
repeat
  local page = assert(db:query{ recordType = "Entry", zoneID = zone, cursor = cursor })
  for _, r in ipairs(page) do step = math.max(step, r.fields.step) end
  cursor = page.cursor
until not cursor
while true do
  step = step + 1
  local save, delete = {}, {}
  for k = 1, 5 do
    save[#save + 1] = sf.Record{ recordType = "Entry", recordName = ("e%d_%d"):format(step, k), zone = zone, fields = { step = step } }
  end
  if step > 3 then delete[1] = sf.RecordID{ recordName = ("e%d_1"):format(step - 3), zoneID = zone } end
  local _, err = db:modifyRecords{ save = save, delete = delete }
  assert(not err, tostring(err))
  io.write(step, " ", db:currentChangeToken(zone), " ", sdb:currentChangeToken(zone), "\n")
  io.stdout:flush()
end
