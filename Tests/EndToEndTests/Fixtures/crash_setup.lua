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
local _, err = db:modifyRecords{ save = items }
assert(not err, tostring(err))
local out = assert(io.open(arg[2], "w"))
for i = 1, n do out:write(shares[i].url, "\n") end
out:close()
