-- O7 (queries) and O8 (audits) through the Lua API. Run: shareflow test Tests/lua
local sf = require("shareflow")
local C = "iCloud.com.example.trips"

local function world()
  local w = {}
  w.alice = sf.accounts.create{ email = "alice@example.com" }
  sf.accounts.create{ email = "bob@example.com" }
  w.c = sf.as("alice@example.com"):container(C)
  w.db = w.c.privateCloudDatabase
  w.zone = w.db:saveZone("Trips")
  w.trips = {}
  for i = 1, 7 do
    w.trips[i] = sf.Record{ recordType = "Trip", recordName = "t" .. i, zone = w.zone,
                            fields = { days = i, title = (i % 2 == 0 and "Lisbon " or "Porto ") .. i } }
  end
  assert(select(2, w.db:modifyRecords{ save = w.trips }) == nil)
  return w
end

local function names(records)
  local out = {}
  for _, r in ipairs(records) do out[#out + 1] = r.recordName end
  return table.concat(out, ",")
end

test("O7: db:query filters, sorts, limits and goes on from its cursor", function()
  local w = world()
  local page, err = w.db:query{ recordType = "Trip", zone = w.zone, resultsLimit = 2,
    predicate = "days >= %@ AND title BEGINSWITH %@", arguments = { 2, "Lis" },
    sortDescriptors = { { key = "days", ascending = false } } }
  expect.eq(err, nil)
  expect.eq(names(page), "t6,t4")
  expect.truthy(page.cursor)
  local rest = w.db:query{ cursor = page.cursor }
  expect.eq(names(rest), "t2"); expect.eq(rest.cursor, nil)
  expect.eq(names(w.db:query{ recordType = "Trip", zone = w.zone, predicate = "recordName IN {'t1', 't3'}", sortDescriptors = { "recordName" } }), "t1,t3")
  local only = w.db:query{ recordType = "Trip", zone = w.zone, predicate = "days == 5", desiredKeys = { "days" } }
  expect.eq(only[1].fields.days, 5); expect.eq(only[1].fields.title, nil)
  expect.raises(function() w.db:query{ recordType = "Trip", predicate = "days >>= 3" } end, "character 7")
  expect.raises(function() w.db:query{ recordType = "Trip", resultsLimit = 0 } end, "resultsLimit")
end)

test("O7: QueryOperation calls both block names; the shared database honours R12", function()
  local w = world()
  local op = sf.QueryOperation{ query = { recordType = "Trip", sortDescriptors = { "recordName" } }, zoneID = w.zone.zoneID, resultsLimit = 3 }
  local matched, fetched, cursor = {}, {}, nil
  op.recordMatchedBlock = function(id) matched[#matched + 1] = id.recordName end
  op.recordFetchedBlock = function(r) fetched[#fetched + 1] = r.recordName end
  op.queryResultBlock = function(c, e) cursor = c; assert(e == nil) end
  w.c:add(op); op:wait()
  expect.eq(table.concat(matched, ","), "t1,t2,t3"); expect.eq(table.concat(fetched, ","), "t1,t2,t3")
  expect.truthy(cursor)
  local share = sf.Share{ rootRecord = w.trips[2] }
  share:addParticipant(w.c:fetchShareParticipants{ "bob@example.com" }[1])
  assert(select(2, w.db:modifyRecords{ save = { w.trips[2], share } }) == nil)
  local bc = sf.as("bob@example.com"):container(C)
  -- R37: a pending invitee's shared database is a stranger's: the zone is not found.
  local _, pending = bc.sharedCloudDatabase:query{ recordType = "Trip", zoneID = w.zone.zoneID }
  expect.code(pending, "zoneNotFound", "pending sees nothing")
  bc:acceptShares{ bc:fetchShareMetadata{ share.url }[share.url] }
  expect.eq(names(bc.sharedCloudDatabase:query{ recordType = "Trip", zoneID = w.zone.zoneID }), "t2")
  local _, err = bc.sharedCloudDatabase:query{ recordType = "Trip" }
  expect.code(err, "invalidArguments")
end)

test("O8: sf.admin.shares lists every share with every participant, by owner, participant or container", function()
  local w = world()
  local share = sf.Share{ rootRecord = w.trips[1], title = "One" }
  share:addParticipant(w.c:fetchShareParticipants{ "bob@example.com" }[1])
  share:addParticipant(w.c:fetchShareParticipants{ "nobody@example.com" }[1])
  assert(select(2, w.db:modifyRecords{ save = { w.trips[1], share } }) == nil)
  local all = sf.admin.shares()
  expect.eq(#all, 1)
  local a = all[1]
  expect.eq(a.url, share.url); expect.eq(a.container, C); expect.eq(a.title, "One")
  expect.eq(a.owner.lookupInfo.emailAddress, "alice@example.com")
  expect.eq(a.rootRecordID.recordName, "t1")
  expect.eq(#a.participants, 3)
  expect.eq(a.participants[3].lookupInfo.emailAddress, "nobody@example.com")
  expect.eq(a.participants[3].userRecordID, nil)
  expect.eq(a.participants[3].acceptanceStatus, "pending")
  expect.eq(#sf.admin.shares{ participant = "nobody@example.com" }, 1)
  expect.eq(#sf.admin.shares{ owner = "bob@example.com" }, 0)
  expect.eq(#sf.admin.shares{ container = "iCloud.elsewhere" }, 0)
  expect.raises(function() sf.admin.shares{ who = "x" } end, "who")
end)
