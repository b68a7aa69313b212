-- Records never lose data: R21 (change tags, save policies), R22 (atomic calls, limits), R25
-- (parents), R26 (administrators), through the Lua API. Run: shareflow test Tests/lua
local sf = require("shareflow")
local helpers = require("helpers")
local errorFor = helpers.errorFor
local world = helpers.world
local invite = helpers.invite
local shared = helpers.shared
local C = helpers.container

local accept = helpers.accept

test("R21: a stale copy of a share is refused with serverRecordChanged; nothing is lost", function()
  local w = world()
  local share = shared(w, { "bob@example.com" })
  accept(w.bc, share.url)
  local a, b = w.db:fetchRecord(share.recordID), w.db:fetchRecord(share.recordID)
  a.publicPermission = "readOnly"
  assert(select(2, w.db:modifyRecords{ save = { a } }) == nil)
  accept(w.cc, share.url) -- a public user joins
  b.title = "Renamed"
  local saved, err = w.db:modifyRecords{ save = { b } }
  expect.eq(#saved, 0)
  local e = errorFor(err, b)
  expect.code(e, "serverRecordChanged")
  expect.eq(e.codeNumber, 14)
  expect.eq(e.serverRecord.publicPermission, "readOnly")
  expect.eq(e.clientRecord.title, "Renamed")
  expect.eq(e.ancestorRecord.title, "Lisbon trip")
  local now = w.db:fetchRecord(share.recordID)
  expect.eq(now.publicPermission, "readOnly")
  expect.eq(#now.participants, 3, "owner, bob, carol")
  -- Merge into the server's copy and save again.
  local merged = e.serverRecord
  merged.title = "Renamed"
  assert(select(2, w.db:modifyRecords{ save = { merged } }) == nil)
  expect.eq(w.db:fetchRecord(share.recordID).title, "Renamed")
  expect.eq(#w.db:fetchRecord(share.recordID).participants, 3)
end)

test("R21: a stale record copy, a participant's or the owner's, never overwrites a newer edit", function()
  local w = world()
  local share = shared(w, { "bob@example.com" }, "readWrite")
  accept(w.bc, share.url)
  local mine = w.db:fetchRecord(w.day.recordID)
  local bobs = w.bc.sharedCloudDatabase:fetchRecord(w.day.recordID)
  bobs.fields.plan = "tram 28"
  assert(select(2, w.bc.sharedCloudDatabase:modifyRecords{ save = { bobs } }) == nil)
  mine.fields.plan = "stay home"
  local _, err = w.db:modifyRecords{ save = { mine } }
  local e = errorFor(err, mine)
  expect.code(e, "serverRecordChanged")
  expect.eq(e.serverRecord.fields.plan, "tram 28")
  expect.eq(e.clientRecord.fields.plan, "stay home")
  expect.eq(e.ancestorRecord.fields.plan, nil)
  expect.eq(w.db:fetchRecord(w.day.recordID).fields.plan, "tram 28")
  -- A new record under an existing name is refused too.
  local impostor = sf.Record{ recordType = "Day", recordName = "day1", zone = w.zone }
  _, err = w.db:modifyRecords{ save = { impostor } }
  expect.code(errorFor(err, impostor), "serverRecordChanged")
end)

test("R21/R29: savePolicy changedKeys merges, allKeys writes every key it holds; changedKeys() lists the edits", function()
  local w = world()
  w.trip.fields.days = 5
  assert(select(2, w.db:modifyRecords{ save = { w.trip } }) == nil)
  local a, b = w.db:fetchRecord(w.trip.recordID), w.db:fetchRecord(w.trip.recordID)
  a.fields.title = "Porto"
  assert(select(2, w.db:modifyRecords{ save = { a } }) == nil)
  b.fields.days = 7
  expect.eq(table.concat(b:changedKeys(), ","), "days")
  assert(select(2, w.db:modifyRecords{ save = { b }, savePolicy = "changedKeys" }) == nil)
  local now = w.db:fetchRecord(w.trip.recordID)
  expect.eq(now.fields.title, "Porto"); expect.eq(now.fields.days, 7)
  local c = sf.Record{ recordType = "Trip", recordName = "lisbon", zone = w.zone, fields = { title = "Faro" } }
  assert(select(2, w.db:modifyRecords{ save = { c }, savePolicy = "allKeys" }) == nil)
  now = w.db:fetchRecord(w.trip.recordID)
  -- R29: allKeys writes the keys the copy holds; days, which it never held, stays.
  expect.eq(now.fields.title, "Faro"); expect.eq(now.fields.days, 7)
  expect.raises(function() w.db:modifyRecords{ save = { c }, savePolicy = "whatever" } end, "invalid savePolicy 'whatever'")
  local op = sf.ModifyRecordsOperation{ recordsToSave = { c } }
  expect.eq(op.savePolicy, "ifServerRecordUnchanged"); expect.eq(op.isAtomic, true)
  op.savePolicy = "allKeys"
  expect.eq(op.savePolicy, "allKeys")
end)

test("R21: removing and re-adding one person in one save keeps them, as the object shows", function()
  local w = world()
  local share = shared(w, { "bob@example.com" })
  share:removeParticipant(share.participants[2])
  invite(w, share, "bob@example.com", "readWrite")
  assert(select(2, w.db:modifyRecords{ save = { share } }) == nil)
  local now = w.db:fetchRecord(share.recordID)
  expect.eq(#now.participants, 2)
  expect.eq(now.participants[2].acceptanceStatus, "pending")
  expect.eq(now.participants[2].permission, "readWrite")
end)

test("R22: a failing share leaves its root unsaved (batchRequestFailed); atomic = false saves each alone", function()
  local w = world()
  local share = sf.Share{ rootRecord = w.trip }
  share.publicPermission = "readOnly"
  invite(w, share, "bob@example.com") -- R9: no invitees on a public share
  local saved, err = w.db:modifyRecords{ save = { w.trip, share } }
  expect.eq(#saved, 0)
  expect.code(errorFor(err, share), "invalidArguments")
  expect.code(errorFor(err, w.trip), "batchRequestFailed")
  expect.eq(errorFor(err, w.trip).codeNumber, 22)
  expect.code(select(2, w.db:fetchRecord(w.trip.recordID)), "unknownItem")
  expect.eq(w.trip.recordChangeTag, nil)
  saved = w.db:modifyRecords{ save = { w.trip, share }, atomic = false }
  expect.eq(#saved, 1)
  expect.raises(function() w.db:modifyRecords{ save = {}, atomic = "yes" } end, "field 'atomic' must be a boolean")
end)

test("R22: more than 400 items or 1 MB of fields is limitExceeded", function()
  local w = world()
  local many = {}
  for i = 1, 401 do many[i] = sf.Record{ recordType = "N", zone = w.zone } end
  local _, err = w.db:modifyRecords{ save = many }
  expect.code(err, "limitExceeded")
  expect.eq(err.codeNumber, 27)
  local big = sf.Record{ recordType = "N", recordName = "big", zone = w.zone, fields = { blob = string.rep("x", 1000001) } }
  _, err = w.db:modifyRecords{ save = { big } }
  expect.code(errorFor(err, big), "limitExceeded")
end)

test("R25: a parent must exist in the zone and parents never cycle", function()
  local w = world()
  local orphan = sf.Record{ recordType = "Day", recordName = "orphan", zone = w.zone,
                            parent = sf.RecordID{ recordName = "nowhere", zoneID = w.zone.zoneID } }
  local _, err = w.db:modifyRecords{ save = { orphan } }
  expect.code(errorFor(err, orphan), "referenceViolation")
  expect.eq(errorFor(err, orphan).codeNumber, 31)
  assert(select(2, w.db:modifyRecords{ save = { w.day, w.trip } }) == nil, "the child may come first")
  local trip = w.db:fetchRecord(w.trip.recordID)
  trip.parent = w.day
  _, err = w.db:modifyRecords{ save = { trip } }
  expect.code(errorFor(err, trip), "referenceViolation")
  expect.contains(errorFor(err, trip).message, "cycle")
end)

test("R26: the owner makes an administrator, who manages participants but cannot rule", function()
  local w = world()
  local share = shared(w, { "bob@example.com" })
  accept(w.bc, share.url)
  share = w.db:fetchRecord(share.recordID)
  share.participants[2].role = "administrator"
  assert(select(2, w.db:modifyRecords{ save = { share } }) == nil)
  expect.eq(w.db:fetchRecord(share.recordID).participants[2].role, "administrator")
  local sdb = w.bc.sharedCloudDatabase
  local bobs = sdb:fetchRecord(share.recordID)
  bobs:addParticipant(w.bc:fetchShareParticipants{ "carol@example.com" }[1])
  assert(select(2, sdb:modifyRecords{ save = { bobs } }) == nil)
  expect.eq(#w.db:fetchRecord(share.recordID).participants, 3)
  bobs = sdb:fetchRecord(share.recordID)
  bobs.participants[3].role = "administrator"
  local _, err = sdb:modifyRecords{ save = { bobs } }
  expect.code(errorFor(err, bobs), "permissionFailure")
  expect.contains(errorFor(err, bobs).message, "R26")
  _, err = sdb:modifyRecords{ delete = { w.trip.recordID } }
  expect.code(select(2, next(err.partialErrors)), "permissionFailure")
  expect.raises(function() bobs.participants[3].role = "boss" end, "invalid role 'boss'")
end)

test("R24: sf.RecordID without a zone is the default zone; a zoneID without ownerName is the caller's", function()
  local w = world()
  local note = sf.Record{ recordType = "Note", recordName = "n1", fields = { text = "default zone" } }
  assert(select(2, w.db:modifyRecords{ save = { note, w.trip } }) == nil)
  expect.eq(w.db:fetchRecord(sf.RecordID{ recordName = "n1" }).fields.text, "default zone")
  expect.eq(w.db:fetchRecord(sf.RecordID{ recordName = "lisbon", zoneID = { zoneName = "Trips" } }).fields.title, "Lisbon")
  expect.eq(w.db:fetchRecord(sf.RecordID{ recordName = "lisbon", zoneID = "Trips" }).fields.title, "Lisbon")
  expect.raises(function() return sf.RecordID{ recordName = "x", zoneID = 7 } end, "zoneID must be a zone or zoneID table, got number")
end)

test("R32: development and production are separate data sets; accounts are shared", function()
  local w = world()
  local share = shared(w, { "bob@example.com" })
  expect.eq(w.c.environment, "development")
  local live = sf.as("alice@example.com"):container(C, { environment = "production" })
  expect.eq(live.environment, "production")
  expect.eq(#live.privateCloudDatabase:fetchAllRecordZones(), 1)
  local rec, err = live.privateCloudDatabase:fetchRecord(w.trip.recordID)
  expect.eq(rec, nil)
  expect.code(err, "zoneNotFound")
  -- Bob's production container does not find the development share's URL.
  local bobLive = sf.as("bob@example.com"):container(C, { environment = "production" })
  local ms, merr = bobLive:fetchShareMetadata{ share.url }
  expect.eq(ms[share.url], nil)
  expect.code(merr.partialErrors[share.url], "unknownItem")
  local meta = assert(w.bc:fetchShareMetadata{ share.url })[share.url]
  expect.eq(meta.environment, "development")
  local audits = sf.admin.shares{ owner = "alice@example.com" }
  expect.eq(audits[1].environment, "development")
  expect.raises(function() return w.c.session:container(C, { environment = "staging" }) end,
    "environment 'staging' is not development or production")
  expect.raises(function() return w.c.session:container(C, { env = "production" }) end, "env")
end)

test("R32: container options are read by name; a positional value is an error, not development", function()
  sf.accounts.create{ email = "alice@example.com" }
  local s = sf.as("alice@example.com")
  expect.raises(function() return s:container(C, { "production" }) end, "unexpected field %[1%]")
  expect.raises(function() return s:container(C, { environment = 1 }) end, "environment")
  expect.eq(s:container(C, {}).environment, "development")
end)
