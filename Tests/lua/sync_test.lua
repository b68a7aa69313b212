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
  expect.eq(sdb:currentDatabaseChangeToken(), start.changeToken, "the current token: where a fetch from nil ends")
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

test("O9, O10: the operations page through the feeds with Apple's block names, current and older", function()
  local w = helpers.world()
  helpers.shared(w, {})
  local more = {}
  for i = 1, 5 do more[i] = sf.Record{ recordType = "Note", recordName = "n" .. i, zone = w.zone } end
  assert(select(2, w.db:modifyRecords{ save = more }) == nil)
  local zones, dbEnd, dbOld = {}, nil, nil
  local dop = sf.FetchDatabaseChangesOperation{ resultsLimit = 1 }
  dop.recordZoneWithIDChangedBlock = function(zoneID) zones[#zones + 1] = zoneID.zoneName end
  dop.fetchDatabaseChangesResultBlock = function(result, err) expect.eq(err, nil); dbEnd = result end
  dop.fetchDatabaseChangesCompletionBlock = function(token, moreComing, err) dbOld = { token, moreComing, err } end
  dop.database = w.db
  w.c:add(dop)
  w.c:waitUntilAllOperationsAreFinished()
  expect.eq(table.concat(zones, ","), "Trips")
  expect.eq(dbEnd.moreComing, false)
  expect.eq(dbOld[1], dbEnd.serverChangeToken)

  local changed, deleted, updates, older = {}, {}, 0, 0
  local zoneEnd
  local zop = sf.FetchRecordZoneChangesOperation{
    recordZoneIDs = { w.zone.zoneID },
    configurationsByRecordZoneID = { { zoneID = w.zone.zoneID, resultsLimit = 3, desiredKeys = {} } },
  }
  zop.recordWasChangedBlock = function(recordID, record, err)
    expect.eq(err, nil); expect.eq(record.recordName, recordID.recordName); changed[#changed + 1] = recordID.recordName
  end
  zop.recordChangedBlock = function() older = older + 1 end
  zop.recordWithIDWasDeletedBlock = function(recordID, recordType) deleted[#deleted + 1] = recordID.recordName .. ":" .. recordType end
  zop.recordZoneChangeTokensUpdatedBlock = function(zoneID, token) expect.eq(type(token), "string"); updates = updates + 1 end
  zop.recordZoneFetchResultBlock = function(zoneID, result, err) expect.eq(err, nil); zoneEnd = result end
  zop.database = w.db
  w.c:add(zop)
  w.c:waitUntilAllOperationsAreFinished()
  expect.eq(#changed, 8, "trip, day, share and five notes")
  expect.eq(older, 8)
  expect.eq(updates, 2, "three pages: two tokens on the way")
  expect.eq(zoneEnd.moreComing, false)
  assert(select(2, w.db:modifyRecords{ delete = { more[1].recordID } }) == nil)
  local zop2 = sf.FetchRecordZoneChangesOperation{ recordZoneIDs = { w.zone.zoneID },
    configurationsByRecordZoneID = { [w.zone.zoneID] = { previousServerChangeToken = zoneEnd.serverChangeToken } } }
  zop2.recordWithIDWasDeletedBlock = function(recordID, recordType) deleted[#deleted + 1] = recordID.recordName .. ":" .. recordType end
  local failed
  zop2.fetchRecordZoneChangesCompletionBlock = function(err) failed = err end
  zop2.database = w.db
  w.c:add(zop2)
  w.c:waitUntilAllOperationsAreFinished()
  expect.eq(failed, nil)
  expect.eq(table.concat(deleted, ","), "n1:Note")

  -- A zone that cannot be read fails alone, named, with its own error.
  local bad = sf.FetchRecordZoneChangesOperation{ recordZoneIDs = { w.zone.zoneID, { zoneName = "Nope", ownerName = w.alice.userRecordID } } }
  local perZone, overall = {}, nil
  bad.recordZoneFetchResultBlock = function(zoneID, _, err) perZone[zoneID.zoneName] = err and err.code or "ok" end
  bad.fetchRecordZoneChangesResultBlock = function(err) overall = err end
  bad.database = w.db
  w.c:add(bad)
  w.c:waitUntilAllOperationsAreFinished()
  expect.eq(perZone.Trips, "ok"); expect.eq(perZone.Nope, "zoneNotFound")
  expect.code(overall, "partialFailure")
  expect.raises(function() bad.configurationsByRecordZoneID = { { previousServerChangeToken = "x" } } end, "zoneID")
  expect.raises(function() bad.configurationsByRecordZoneID = { { zoneID = w.zone.zoneID, resultsLimit = -3 } } end, "resultsLimit")
  expect.raises(function() bad.configurationsByRecordZoneID = { 42 } end, "configuration")
end)

test("§6: record.saved, record.deleted, zone.saved and zone.deleted after commit, with read-only records", function()
  local w = helpers.world()
  local seen = {}
  local handles = {}
  for _, name in ipairs{ "record.saved", "record.deleted", "zone.saved", "zone.deleted" } do
    handles[#handles + 1] = sf.on(name, function(e)
      local what = e.record and e.record.recordName or e.recordID and e.recordID.recordName or e.zoneID and e.zoneID.zoneName
      seen[#seen + 1] = e.name .. " " .. tostring(what) .. " " .. tostring(e.database) .. (e.created ~= nil and (" " .. tostring(e.created)) or "")
      if e.record then expect.raises(function() e.record.fields.title = "changed" end, "read%-only") end
    end)
  end
  helpers.shared(w, {})
  local spare = w.db:saveZone("Spare")
  w.db:saveZone("Spare")
  assert(select(2, w.db:modifyRecords{ delete = { w.day.recordID } }) == nil)
  local drop = sf.ModifyRecordZonesOperation{ recordZoneIDsToDelete = { spare.zoneID } }
  drop.database = w.db
  w.c:add(drop)
  w.c:waitUntilAllOperationsAreFinished()
  for _, h in ipairs(handles) do h:remove() end
  local text = table.concat(seen, "\n")
  expect.contains(text, "record.saved lisbon private true")
  expect.contains(text, "record.saved day1 private true")
  expect.contains(text, "record.deleted day1 private")
  expect.contains(text, "zone.saved Spare private")
  expect.contains(text, "zone.deleted Spare private")
  local zoneSaves = 0
  for _ in text:gmatch("zone.saved Spare") do zoneSaves = zoneSaves + 1 end
  expect.eq(zoneSaves, 1, "saving a zone that exists changes nothing")
end)

test("O10: a feed page's records read and edit as fetched ones: fields, a key set before any read, a save of only what changed", function()
  local w = helpers.world()
  helpers.shared(w, {})
  local page = assert(w.db:recordZoneChanges{ zoneID = w.zone })
  local trip
  for _, r in ipairs(page.modifications) do if r.recordName == "lisbon" then trip = r end end
  assert(trip, "the trip is on the page")
  trip.fields.days = 4
  expect.eq(trip.fields.title, "Lisbon", "a field set before any read keeps the others")
  assert(select(2, w.db:modifyRecords{ save = { trip }, savePolicy = "changedKeys" }) == nil)
  local fetched = assert(w.db:fetchRecord(trip.recordID))
  expect.eq(fetched.fields.title, "Lisbon")
  expect.eq(fetched.fields.days, 4)
  local again = assert(w.db:recordZoneChanges{ zoneID = w.zone, since = page.changeToken })
  expect.eq(#again.modifications, 1)
  expect.eq(again.modifications[1].fields.days, 4)
  expect.eq(again.modifications[1].fields.title, "Lisbon")
end)

test("O9: db:currentDatabaseChangeToken is where a fetch from nil ends, and is refused on the public database", function()
  local w = helpers.world()
  w.db:saveZone("Second")
  local token, page = nil, nil
  repeat
    page = assert(w.db:databaseChanges{ since = token, resultsLimit = 1 })
    token = page.changeToken
  until not page.moreComing
  expect.eq(w.db:currentDatabaseChangeToken(), token)
  local none, err = w.c.publicCloudDatabase:currentDatabaseChangeToken()
  expect.eq(none, nil)
  expect.eq(err.code, "badDatabase")
end)
