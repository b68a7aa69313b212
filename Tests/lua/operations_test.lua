-- Operations (O1–O6) as CloudKit runs them: queues, blocks, partial failures, cancel, QoS.
local sf = require("shareflow")
local helpers = require("helpers")
local errorFor = helpers.errorFor
local C = "iCloud.com.example.trips"

local function setup()
  local s = {}
  s.alice = sf.accounts.create{ email = "alice@example.com", discoverable = true }
  s.bob = sf.accounts.create{ email = "bob@example.com", discoverable = true }
  s.c = sf.as("alice@example.com"):container(C)
  s.db = s.c.privateCloudDatabase
  s.zone = s.db:saveZone("Trips")
  return s
end

local function newShare(s, name, people)
  local r = sf.Record{ recordType = "Trip", recordName = name, zone = s.zone, fields = { title = name } }
  local share = sf.Share{ rootRecord = r, title = name }
  for _, who in ipairs(people or {}) do
    share:addParticipant(s.c:fetchShareParticipants{ who }[1])
  end
  local _, err = s.db:modifyRecords{ save = { r, share } }
  assert(not err, tostring(err))
  return share, r
end

test("O2: per-item block once per item in input order, then completion once, under mixed results", function()
  local s = setup()
  local infos = { sf.LookupInfo{ emailAddress = "bob@example.com" }, sf.LookupInfo{ emailAddress = "bad@" },
                  sf.LookupInfo{ phoneNumber = "+1 415 555 0199" }, sf.LookupInfo{ userRecordID = "_nobody" } }
  local op = sf.FetchShareParticipantsOperation{ userIdentityLookupInfos = infos }
  local seen, completions, final = {}, 0, nil
  op.perShareParticipantResultBlock = function(info, participant, err)
    seen[#seen + 1] = { info = info, ok = participant ~= nil, code = err and err.code }
  end
  op.fetchShareParticipantsResultBlock = function(err) completions = completions + 1; final = err end
  s.c:add(op); op:wait()
  expect.eq(#seen, 4)
  for i = 1, 4 do expect.eq(seen[i].info, infos[i], "item " .. i .. " is the value passed in") end
  expect.eq(seen[1].ok, true); expect.eq(seen[2].code, "invalidArguments")
  expect.eq(seen[3].ok, true, "a phone without an account still yields a participant")
  expect.eq(seen[4].code, "unknownItem")
  expect.eq(completions, 1)
  expect.code(final, "partialFailure")
  local n = 0
  for item, e in pairs(final.partialErrors) do n = n + 1; expect.truthy(item == "bad@" or item == "_nobody", item) end
  expect.eq(n, 2)
  expect.eq(op.isFinished, true)
end)

test("O2: both generations of block names are called", function()
  local s = setup()
  local calls = {}
  local op = sf.FetchShareParticipantsOperation{ userIdentityLookupInfos = { { emailAddress = "bob@example.com" }, { emailAddress = "x@" } } }
  op.perShareParticipantResultBlock = function() calls[#calls + 1] = "perResult" end
  op.shareParticipantFetchedBlock = function(p) calls[#calls + 1] = "fetched:" .. p.role end
  op.fetchShareParticipantsResultBlock = function() calls[#calls + 1] = "result" end
  op.fetchShareParticipantsCompletionBlock = function(err) calls[#calls + 1] = "completion:" .. err.code end
  op.completionBlock = function() calls[#calls + 1] = "operation" end
  s.c:add(op); op:wait()
  expect.eq(table.concat(calls, ","), "perResult,fetched:privateUser,perResult,result,completion:partialFailure,operation")

  local share = newShare(s, "t1", { "bob@example.com" })
  local bc = sf.as("bob@example.com"):container(C)
  local m = sf.FetchShareMetadataOperation{ shareURLs = { share.url } }
  local got = {}
  m.perShareMetadataBlock = function(url, metadata, err) got[#got + 1] = "old:" .. tostring(metadata ~= nil) end
  m.perShareMetadataResultBlock = function(url, metadata, err) got[#got + 1] = "new:" .. url:sub(1, 8) end
  m.fetchShareMetadataCompletionBlock = function(err) got[#got + 1] = "done:" .. tostring(err) end
  bc:add(m); m:wait()
  expect.eq(table.concat(got, ","), "new:https://,old:true,done:nil")

  local metadata
  m = sf.FetchShareMetadataOperation{ shareURLs = { share.url } }
  m.perShareMetadataResultBlock = function(_, md) metadata = md end
  bc:add(m); m:wait()
  local a = sf.AcceptSharesOperation{ shareMetadatas = { metadata } }
  local acc = {}
  a.perShareCompletionBlock = function(md, sh, err) acc[#acc + 1] = "old:" .. sh.title end
  a.perShareResultBlock = function(md, sh, err) acc[#acc + 1] = "new:" .. sh.currentUserParticipant.acceptanceStatus end
  a.acceptSharesCompletionBlock = function(err) acc[#acc + 1] = "done" end
  a.acceptSharesResultBlock = function(err) acc[#acc + 1] = "result" end
  a.qualityOfService = "utility"
  bc:add(a); a:wait()
  expect.eq(table.concat(acc, ","), "new:accepted,old:t1,result,done")
end)

test("O3: partialErrors are keyed by URL for metadata and by share record ID for accept", function()
  local s = setup()
  local share = newShare(s, "t1", { "bob@example.com" })
  local bc = sf.as("bob@example.com"):container(C)
  local ms, err = bc:fetchShareMetadata{ share.url, "https://shareflow.invalid/share/nope" }
  expect.truthy(ms[share.url])
  expect.code(err.partialErrors["https://shareflow.invalid/share/nope"], "unknownItem")
  -- O5: a metadata of another container fails per item, naming both containers.
  local other = sf.as("bob@example.com"):container("iCloud.com.example.other")
  local shares, aerr = other:acceptShares{ ms[share.url] }
  expect.eq(#shares, 0)
  local key, e = next(aerr.partialErrors)
  expect.contains(key, share.recordName)
  expect.code(e, "invalidArguments")
  expect.contains(e.message, "iCloud.com.example.trips"); expect.contains(e.message, "iCloud.com.example.other")
end)

test("O4: cancel stops the items not yet processed and completes with operationCancelled", function()
  local s = setup()
  local infos = {}
  for i = 1, 5 do infos[i] = { emailAddress = "guest" .. i .. "@example.com" } end
  local op = sf.FetchShareParticipantsOperation{ userIdentityLookupInfos = infos }
  local per, fetched, final, completions = {}, 0, nil, 0
  op.perShareParticipantResultBlock = function(info, p, err)
    per[#per + 1] = err and err.code or "ok"
    if #per == 2 then op:cancel() end
  end
  op.shareParticipantFetchedBlock = function() fetched = fetched + 1 end
  op.fetchShareParticipantsResultBlock = function(err) completions = completions + 1; final = err end
  s.c:add(op); op:wait()
  expect.eq(table.concat(per, ","), "ok,ok,operationCancelled,operationCancelled,operationCancelled")
  expect.eq(fetched, 2)
  expect.eq(completions, 1)
  expect.code(final, "operationCancelled")
  expect.eq(final.codeNumber, 20)
  expect.eq(op.isCancelled, true)
end)

test("O4: qualityOfService orders waiting operations", function()
  local s = setup()
  local order = {}
  local function op(name, qos)
    local o = sf.DiscoverAllUserIdentitiesOperation()
    o.qualityOfService = qos
    o.discoverAllUserIdentitiesResultBlock = function() order[#order + 1] = name end
    s.c:add(o)
    return o
  end
  op("background", "background"); op("utility", "utility"); op("default", "default")
  op("interactive", "userInteractive"); op("initiated", "userInitiated"); op("default2", "default")
  s.c:waitUntilAllOperationsAreFinished()
  expect.eq(table.concat(order, ","), "interactive,initiated,default,default2,utility,background")
  expect.raises(function() sf.FetchRecordsOperation{ qualityOfService = "urgent" } end, "invalid qualityOfService 'urgent'")
end)

test("O4: an unset input is invalidArguments; an empty list succeeds with no items", function()
  local s = setup()
  local op = sf.FetchShareMetadataOperation()
  local final
  op.fetchShareMetadataResultBlock = function(err) final = err end
  s.c:add(op); op:wait()
  expect.code(final, "invalidArguments")
  expect.contains(final.message, "shareURLs")
  local empty = sf.FetchShareParticipantsOperation{ userIdentityLookupInfos = {} }
  local calls, done = 0, "not called"
  empty.perShareParticipantResultBlock = function() calls = calls + 1 end
  empty.fetchShareParticipantsResultBlock = function(err) done = err end
  s.c:add(empty); empty:wait()
  expect.eq(calls, 0); expect.eq(done, nil)
  expect.raises(function() sf.AcceptSharesOperation():wait() end, "add the operation to a container first")
end)

test("a callback that raises does not break the operation", function()
  local s = setup()
  local op = sf.FetchShareParticipantsOperation{ userIdentityLookupInfos = { { emailAddress = "a@example.com" }, { emailAddress = "b@example.com" } } }
  local n, finished = 0, false
  op.perShareParticipantResultBlock = function() n = n + 1; error("callback bug " .. n) end
  op.fetchShareParticipantsResultBlock = function(err) finished = (err == nil) end
  s.c:add(op); op:wait()
  expect.eq(n, 2); expect.eq(finished, true)
end)

test("ModifyRecordsOperation, FetchRecordsOperation and ModifyRecordZonesOperation", function()
  local s = setup()
  local z = sf.ModifyRecordZonesOperation{ recordZonesToSave = { "Notes", "Photos" } }
  local zones = {}
  z.perRecordZoneSaveBlock = function(name, zone, err) zones[#zones + 1] = zone.zoneName end
  s.c:add(z); z:wait()
  expect.eq(table.concat(zones, ","), "Notes,Photos")
  local notes = s.db:fetchAllRecordZones()
  expect.eq(#notes, 4, "default, Trips, Notes, Photos")
  local r1 = sf.Record{ recordType = "Note", recordName = "n1", zone = { zoneName = "Notes", ownerName = s.alice.userRecordID }, fields = { text = "hi", n = 1 } }
  local bad = sf.Record{ recordType = "Note", recordName = "n2", zone = { zoneName = "Missing", ownerName = s.alice.userRecordID } }
  local m = sf.ModifyRecordsOperation{ recordsToSave = { r1, bad } }
  m.database = s.db
  local per = {}
  m.perRecordSaveBlock = function(id, record, err) per[#per + 1] = id.recordName .. ":" .. (err and err.code or "saved") end
  local done
  m.modifyRecordsCompletionBlock = function(saved, deleted, err) done = { #saved, err.code } end
  s.c:add(m); m:wait()
  expect.eq(table.concat(per, ","), "n1:batchRequestFailed,n2:zoneNotFound", "atomic by default (R22)")
  expect.eq(done[1], 0); expect.eq(done[2], "partialFailure")
  m = sf.ModifyRecordsOperation{ recordsToSave = { r1, bad } }
  m.database = s.db
  m.isAtomic = false
  per = {}
  m.perRecordSaveBlock = function(id, record, err) per[#per + 1] = id.recordName .. ":" .. (err and err.code or "saved") end
  m.modifyRecordsCompletionBlock = function(saved, deleted, err) done = { #saved, err.code } end
  s.c:add(m); m:wait()
  expect.eq(table.concat(per, ","), "n1:saved,n2:zoneNotFound")
  expect.eq(done[1], 1); expect.eq(done[2], "partialFailure")
  local f = sf.FetchRecordsOperation{ recordIDs = { r1.recordID, { recordName = "ghost", zoneID = r1.zoneID } }, desiredKeys = { "text" } }
  local fetched = {}
  f.perRecordResultBlock = function(id, record, err) fetched[#fetched + 1] = record and (record.fields.text .. tostring(record.fields.n)) or err.code end
  s.c:add(f); f:wait()
  expect.eq(table.concat(fetched, ","), "hinil,unknownItem")
end)

test("DiscoverAll reports progress and never reveals a non-discoverable account", function()
  local s = setup()
  sf.accounts.create{ email = "hidden@example.com", discoverable = false }
  local contacts = {}
  for i = 1, 2500 do contacts[i] = "stranger" .. i .. "@example.com" end
  contacts[#contacts + 1] = "hidden@example.com"
  contacts[#contacts + 1] = "bob@example.com"
  s.alice:addContacts(contacts)
  local op = sf.DiscoverAllUserIdentitiesOperation()
  local progress, found = {}, {}
  op.progressBlock = function(done, total) progress[#progress + 1] = done .. "/" .. total end
  op.userIdentityDiscoveredBlock = function(identity) found[#found + 1] = identity.lookupInfo.emailAddress end
  s.c:add(op); op:wait()
  expect.eq(table.concat(found, ","), "bob@example.com")
  expect.eq(table.concat(progress, ","), "1000/2502,2000/2502,2502/2502")
  local ids = s.c:discoverUserIdentities{ { emailAddress = "hidden@example.com" }, { emailAddress = "nobody@example.com" } }
  expect.eq(#ids, 0, "hidden and nobody look the same")
end)

test("error codes a user can hit through the operations", function()
  local s = setup()
  local share = newShare(s, "t1", { "bob@example.com" })
  local bc = sf.as("bob@example.com"):container(C)
  local carol = sf.accounts.create{ email = "carol@example.com" }
  local cc = sf.as(carol):container(C)
  local _, e = cc:fetchShareMetadata{ share.url }
  expect.code(e.partialErrors[share.url], "unknownItem")
  local ms = bc:fetchShareMetadata{ share.url }
  share:removeParticipant(share.participants[2])
  s.db:modifyRecords{ save = { share } }
  local _, ae = bc:acceptShares{ ms[share.url] }
  expect.code(select(2, next(ae.partialErrors)), "permissionFailure")
  local _, me = s.db:modifyRecords{ save = { sf.Share{ zone = s.zone } } }
  expect.code(select(2, next(me.partialErrors)), "alreadyShared")
  local again = s.db:fetchRecord(share.rootRecordID)
  local second = sf.Share{ rootRecord = again }
  _, me = s.db:modifyRecords{ save = { again, second } }
  expect.code(errorFor(me, second), "alreadyShared")
  expect.eq(errorFor(me, second).codeNumber, 30)
end)

test("a save asked for inside a read's callback is refused whole: nothing written, no event, the read goes on", function()
  local alice = sf.accounts.create{ email = "reader@x.example" }
  local contacts = {}
  for i = 1, 3 do
    sf.accounts.create{ email = "found" .. i .. "@x.example", discoverable = true }
    contacts[#contacts + 1] = "found" .. i .. "@x.example"
  end
  for i = 1, 1000 do contacts[#contacts + 1] = "nobody" .. i .. "@y.example" end
  alice:addContacts(contacts)
  local c = sf.as(alice):container("iCloud.nested")
  local db = c.privateCloudDatabase
  local zone = assert(db:saveZone("Z"))
  local events = 0
  local hook = sf.on("share.saved", function() events = events + 1 end)
  local tried, saved, err = false, nil, nil
  local ids, discoverErr = c:discoverAllUserIdentities{ progress = function()
    if tried then return end
    tried = true
    local rec = sf.Record{ recordType = "N", recordName = "ghost", zone = zone }
    saved, err = db:modifyRecords{ save = { rec, sf.Share{ rootRecord = rec } } }
  end }
  hook:remove()
  expect.eq(tried, true, "discovery reported progress")
  expect.eq(discoverErr, nil, "the read went on")
  expect.eq(#ids, 3)
  expect.eq(saved, nil, "the nested save did not happen")
  expect.truthy(err, "and said so")
  expect.eq(events, 0, "no share.saved for a share that was never saved")
  local ghost, missing = db:fetchRecord(sf.RecordID{ recordName = "ghost", zoneID = zone.zoneID })
  expect.eq(ghost, nil)
  expect.eq(missing.code, "unknownItem")
end)

test("Apple's samples port line by line: database:add, zone deletion, the lookup info a participant block gets", function()
  local s = setup()
  -- database.add(operation): the operation runs against that database.
  local other = s.db:saveZone("Other")
  local r = sf.Record{ recordType = "Trip", recordName = "t", zone = other, fields = { title = "x" } }
  local save = sf.ModifyRecordsOperation{ recordsToSave = { r } }
  local saved = 0
  save.perRecordSaveBlock = function(_, _, err) if not err then saved = saved + 1 end end
  s.db:add(save); save:wait()
  expect.eq(saved, 1)
  expect.eq(save.database.databaseScope, "private")
  expect.raises(function() s.db:add(sf.FetchShareParticipantsOperation{ userIdentityLookupInfos = {} }) end, "the container's")
  expect.raises(function() s.db:add(save) end, "already added", "a finished operation is not added again")
  -- Zone deletion as an operation added to the database, and in one call.
  local deleted = {}
  local op = sf.ModifyRecordZonesOperation{ recordZoneIDsToDelete = { other.zoneID } }
  op.perRecordZoneDeleteBlock = function(id, err) deleted[#deleted + 1] = err and err.code or id.zoneName end
  s.db:add(op); op:wait()
  expect.eq(table.concat(deleted, ","), "Other")
  expect.code(select(2, s.db:fetchRecord(r.recordID)), "zoneNotFound")
  s.db:saveZone("Third")
  expect.eq(s.db:deleteZone("Third"), true)
  expect.eq(s.db:deleteZone(s.zone.zoneID), true)
  local zones = {}
  for _, z in ipairs(s.db:fetchAllRecordZones()) do zones[#zones + 1] = z.zoneID.zoneName end
  expect.eq(table.concat(zones, ","), "_defaultZone")
  expect.code(select(2, s.db:deleteZone("Nowhere")), "zoneNotFound")
  -- A participant block reads info.emailAddress whether the script gave a string or a table.
  local infos = {}
  local fetch = sf.FetchShareParticipantsOperation{ userIdentityLookupInfos = { "bob@example.com", "bad@", { phoneNumber = "+1 415 555 0100" } } }
  fetch.perShareParticipantResultBlock = function(info) infos[#infos + 1] = info.emailAddress or info.phoneNumber end
  s.c:add(fetch); fetch:wait()
  expect.eq(table.concat(infos, ","), "bob@example.com,bad@,+1 415 555 0100")
  -- Added once: a queued operation keeps the database it was added to.
  local twice = sf.ModifyRecordZonesOperation{ recordZonesToSave = { "Twice" } }
  s.db:add(twice)
  local bobs = sf.as("bob@example.com"):container(C).privateCloudDatabase
  expect.raises(function() bobs:add(twice) end, "already added")
  twice:wait()
  expect.eq(select(2, bobs:fetchRecord(sf.RecordID{ recordName = "x", zoneID = { zoneName = "Twice" } })).code, "zoneNotFound")
end)
