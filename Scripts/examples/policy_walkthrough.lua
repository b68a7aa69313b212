-- The README's policy walk-through: Alice shares a trip publicly; Eve (evil.test) and Carol
-- (example.com) accept. With the domain-allowlist plugin on, Eve is refused and the decision
-- log says who, where and why (`shareflow decisions`, `shareflow policy eval`).
local sf = require("shareflow")
for _, email in ipairs{ "alice@example.com", "eve@evil.test", "carol@example.com" } do
  sf.accounts.create{ email = email }
end
local alice = sf.as("alice@example.com"):container("iCloud.com.example.trips")
local trip = sf.Record{ recordType = "Trip", recordName = "lisbon", zone = alice.privateCloudDatabase:saveZone("Trips") }
local share = sf.Share{ rootRecord = trip, title = "Lisbon trip", publicPermission = "readOnly" }
assert(not select(2, alice.privateCloudDatabase:modifyRecords{ save = { trip, share } }))

for _, who in ipairs{ "eve@evil.test", "carol@example.com" } do
  local c = sf.as(who):container("iCloud.com.example.trips")
  local _, err = c:acceptShares{ c:fetchShareMetadata{ share.url }[share.url] }
  local refused = err and select(2, next(err.partialErrors))
  print(who .. " accepts: " .. (refused and refused.code or "ok"))
end
