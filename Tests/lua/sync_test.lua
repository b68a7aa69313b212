-- SPEC §14 (O9, O10's one-call forms) through the Lua API. Run: shareflow test Tests/lua
local sf = require("shareflow")
local helpers = require("helpers")

local function accepted(w)
  local share = helpers.shared(w, { "bob@example.com" })
  local metadata = w.bc:fetchShareMetadata{ share.url }[share.url]
  assert(select(2, w.bc:acceptShares{ metadata }) == nil)
  return share
end

test("O10: db:recordZoneChanges gives each change once, deletions with their type, then the same token", function()
  local w = helpers.world()
  helpers.shared(w, {})
  local page, err = w.db:recordZoneChanges{ zoneID = w.zone.zoneID }
  expect.eq(err, nil)
  expect.eq(#page.modifications, 3, "trip, day and the share")
  expect.eq(page.moreComing, false)
  expect.eq(type(page.changeToken), "string")
  local again = assert(w.db:recordZoneChanges{ zoneID = w.zone, since = page.changeToken })
  expect.eq(#again.modifications + #again.deletions, 0)
  expect.eq(again.changeToken, page.changeToken, "nothing new: the same token")
  assert(select(2, w.db:modifyRecords{ delete = { w.day.recordID } }) == nil)
  local delta = assert(w.db:recordZoneChanges{ zoneID = w.zone, since = page.changeToken, desiredKeys = {} })
  expect.eq(#delta.modifications, 0)
  expect.eq(delta.deletions[1].recordID.recordName, "day1")
  expect.eq(delta.deletions[1].recordType, "Day")
  expect.eq(w.db:currentChangeToken(w.zone), delta.changeToken)
end)

test("O9: db:databaseChanges shows a shared zone on accept and its leaving on removal", function()
  local w = helpers.world()
  local sdb = w.bc.sharedCloudDatabase
  local start = assert(sdb:databaseChanges())
  expect.eq(#start.modifications, 0)
  local share = accepted(w)
  local joined = assert(sdb:databaseChanges{ since = start.changeToken })
  expect.eq(#joined.modifications, 1)
  expect.eq(joined.modifications[1].zoneName, "Trips")
  local seen = assert(sdb:recordZoneChanges{ zoneID = joined.modifications[1] })
  expect.eq(#seen.modifications, 3)
  share = assert(w.db:fetchRecord(share.recordID))
  for _, p in ipairs(share.participants) do
    if p.userIdentity.lookupInfo and p.userIdentity.lookupInfo.emailAddress == "bob@example.com" then share:removeParticipant(p) end
  end
  assert(select(2, w.db:modifyRecords{ save = { share } }) == nil)
  local left = assert(sdb:databaseChanges{ since = joined.changeToken })
  expect.eq(#left.deletions, 1)
  expect.eq(left.deletions[1].reason, "deleted")
  local _, err = sdb:recordZoneChanges{ zoneID = joined.modifications[1], since = seen.changeToken }
  expect.code(err, "zoneNotFound")
end)

test("§14: bad tokens, places and limits are errors naming them", function()
  local w = helpers.world()
  helpers.shared(w, {})
  local other = w.db:saveZone("Other")
  local token = assert(w.db:recordZoneChanges{ zoneID = w.zone }).changeToken
  local _, err = w.db:recordZoneChanges{ zoneID = other, since = token }
  expect.code(err, "invalidArguments"); expect.contains(err.message, "another zone")
  _, err = w.db:recordZoneChanges{ zoneID = w.zone, since = token:sub(1, -3) .. "AA" }
  expect.code(err, "invalidArguments")
  _, err = w.db:databaseChanges{ since = token }
  expect.code(err, "invalidArguments")
  _, err = w.db:recordZoneChanges{ zoneID = { zoneName = "_defaultZone" } }
  expect.code(err, "invalidArguments")
  _, err = w.c.publicCloudDatabase:databaseChanges()
  expect.code(err, "badDatabase")
  for _, bad in ipairs{ 0, -1, 1e18, 0 / 0, 1 / 0, 2.5 } do
    expect.raises(function() w.db:recordZoneChanges{ zoneID = w.zone, resultsLimit = bad } end, "resultsLimit")
  end
  expect.raises(function() w.db:recordZoneChanges{ zoneID = w.zone, since = 42 } end, "change token")
  expect.raises(function() w.db:recordZoneChanges{ since = token } end, "zoneID")
  expect.raises(function() w.db:recordZoneChanges{ zoneID = w.zone, sinse = token } end, "sinse")
  expect.raises(function() w.db:databaseChanges{ since = setmetatable({}, { __index = function() error("boom") end }) } end, "change token")
end)
