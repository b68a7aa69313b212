-- Alice shares N trips with Bob; the URLs go to arg[2], one per line.
local sf = require("shareflow")
local n = tonumber(arg[1])
sf.accounts.create{ email = "alice@example.com" }
sf.accounts.create{ email = "bob@example.com" }
local c = sf.as("alice@example.com"):container("iCloud.crash")
local db = c.privateCloudDatabase
local zone = db:saveZone("Trips")
local items, shares = {}, {}
for i = 1, n do
  local r = sf.Record{ recordType = "Trip", recordName = "trip" .. i, zone = zone, fields = { n = i } }
  local s = sf.Share{ rootRecord = r, title = "trip " .. i }
  s:addParticipant(c:fetchShareParticipants{ { emailAddress = "bob@example.com" } }[1])
  items[#items + 1] = r
  items[#items + 1] = s
  shares[i] = s
end
-- At most 400 items per call (R22): one trip and its share at a time, 200 of them per call.
for first = 1, #items, 400 do
  local _, err = db:modifyRecords{ save = table.move(items, first, math.min(first + 399, #items), 1, {}) }
  assert(not err, tostring(err))
end
local out = assert(io.open(arg[2], "w"))
for i = 1, n do out:write(shares[i].url, "\n") end
out:close()
