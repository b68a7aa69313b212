-- Every event of SPEC §6, emitted after commit, with its fields.
local sf = require("shareflow")
local helpers = require("helpers")
local errorFor = helpers.errorFor
local C = "iCloud.com.example.events"

-- Alice's container, her private database and a new zone "Z" in it: where the policy
-- tests save their shares (her account made first).
local function alicesZone()
  local c = sf.as("alice@example.com"):container(C)
  local db = c.privateCloudDatabase
  return c, db, db:saveZone("Z")
end

local function capture()
  local seen = {}
  for _, name in ipairs(sf.events) do
    sf.on(name, function(ev)
      seen[name] = seen[name] or {}
      table.insert(seen[name], ev)
    end)
  end
  return seen
end

local function common(ev, name)
  expect.eq(ev.name, name)
  expect.truthy(type(ev.time) == "number" and ev.time > 1.7e9, name .. " has a time")
  expect.truthy(ev.caller and ev.caller.userRecordID, name .. " has a caller")
  expect.eq(ev.container, C, name .. " container")
end

test("every event is emitted with its fields", function()
  local seen = capture()
  local alice = sf.accounts.create{ email = "alice@example.com" }
  sf.accounts.create{ email = "bob@example.com", discoverable = true }
  sf.accounts.create{ email = "carol@example.com" }
  alice:addContacts{ "bob@example.com" }
  local c, db, zone = alicesZone()
  assert(db:saveSubscription(sf.RecordZoneSubscription{ subscriptionID = "z", zone = zone }))
  local r = sf.Record{ recordType = "Doc", zone = zone }
  local share = sf.Share{ rootRecord = r, title = "doc" }
  local ps = c:fetchShareParticipants{ "bob@example.com", "carol@example.com" }
  share:addParticipant(ps[1]); share:addParticipant(ps[2])
  db:modifyRecords{ save = { r, share } }
  local bc = sf.as("bob@example.com"):container(C)
  local ms = bc:fetchShareMetadata{ share.url }
  bc:acceptShares{ ms[share.url] }
  share = db:fetchRecord(share.recordID)        -- bob's acceptance changed the share (R21)
  share.participants[2].permission = "readWrite"
  db:modifyRecords{ save = { share } }
  share.publicPermission = "readOnly"           -- removes carol (pending): R11
  db:modifyRecords{ save = { share } }
  c:discoverAllUserIdentities()
  db:modifyRecords{ delete = { share.recordID } }
  local drop = sf.ModifyRecordZonesOperation{ recordZoneIDsToDelete = { zone.zoneID } }
  drop.database = db
  c:add(drop)
  c:waitUntilAllOperationsAreFinished()

  local ev = seen["participant.fetched"][1]
  common(ev, "participant.fetched")
  expect.eq(ev.lookupInfo.emailAddress, "bob@example.com")
  expect.eq(ev.participant.role, "privateUser")

  ev = seen["participant.added"][1]
  common(ev, "participant.added")
  expect.eq(ev.share.title, "doc"); expect.eq(ev.participant.acceptanceStatus, "pending")

  ev = seen["share.saved"][1]
  common(ev, "share.saved")
  expect.eq(ev.created, true); expect.truthy(ev.share.url)
  expect.eq(seen["share.saved"][2].created, false)

  ev = seen["share.metadataFetched"][1]
  common(ev, "share.metadataFetched")
  expect.eq(ev.url, share.url); expect.eq(ev.metadata.participantStatus, "pending")

  ev = seen["share.accepted"][1]
  common(ev, "share.accepted")
  expect.eq(ev.caller.email, "bob@example.com")
  expect.eq(ev.participant.acceptanceStatus, "accepted"); expect.eq(ev.metadata.url, share.url); expect.eq(ev.share.title, "doc")

  ev = seen["participant.permissionChanged"][1]
  common(ev, "participant.permissionChanged")
  expect.eq(ev.from, "readOnly"); expect.eq(ev.to, "readWrite"); expect.truthy(ev.share and ev.participant)

  ev = seen["share.publicPermissionChanged"][1]
  common(ev, "share.publicPermissionChanged")
  expect.eq(ev.from, "none"); expect.eq(ev.to, "readOnly")

  local reasons = {}
  for _, e in ipairs(seen["participant.removed"]) do
    common(e, "participant.removed")
    reasons[#reasons + 1] = e.participant.userIdentity.lookupInfo.emailAddress .. ":" .. e.reason
  end
  expect.eq(table.concat(reasons, ","), "carol@example.com:publicPermissionChanged,bob@example.com:shareDeleted")

  ev = seen["user.discovered"][1]
  common(ev, "user.discovered")
  expect.eq(ev.identity.lookupInfo.emailAddress, "bob@example.com")

  ev = seen["share.deleted"][1]
  common(ev, "share.deleted")
  expect.eq(ev.share.title, "doc")

  ev = seen["operation.finished"][1]
  common(ev, "operation.finished")
  expect.eq(ev.operation, "FetchShareParticipantsOperation")
  expect.eq(ev.items, 2); expect.eq(ev.failed, 0); expect.truthy(ev.duration >= 0)

  ev = seen["record.saved"][1]
  common(ev, "record.saved")
  expect.eq(ev.record.recordType, "Doc"); expect.eq(ev.created, true); expect.eq(ev.database, "private")
  ev = seen["record.deleted"][1]
  common(ev, "record.deleted")
  expect.eq(ev.recordType, "cloudkit.share"); expect.eq(ev.recordID.recordName, share.recordName); expect.eq(ev.database, "private")
  ev = seen["zone.saved"][1]
  common(ev, "zone.saved")
  expect.eq(ev.zoneID.zoneName, "Z"); expect.eq(ev.database, "private")
  ev = seen["zone.deleted"][1]
  common(ev, "zone.deleted")
  expect.eq(ev.zoneID.zoneName, "Z"); expect.eq(#seen["zone.deleted"], 1)

  local rule = sf.faults.add{ operation = "fetchRecords", fault = "serviceUnavailable", count = 1 }
  db:fetchRecord(r.recordID)
  rule:remove()
  ev = seen["fault.injected"][1]
  expect.eq(ev.name, "fault.injected"); expect.eq(ev.container, C)
  -- The history's fields: the caller by address, as sf.faults.history() gives it.
  expect.eq(ev.caller, "alice@example.com"); expect.eq(ev.fault, "serviceUnavailable"); expect.eq(ev.operation, "fetchRecords")
  expect.eq(ev.zone, "Z"); expect.eq(ev.recordName, r.recordName)

  -- SPEC §17: the access-request events, and a role change (R26).
  sf.accounts.create{ email = "dana@example.com" }
  local asks = db:saveZone("Asks")
  local root = sf.Record{ recordType = "Doc", zone = asks }
  local asked = sf.Share{ rootRecord = root, title = "asked" }
  asked.allowsAccessRequests = true
  asked:addParticipant(c:fetchShareParticipants{ "bob@example.com" }[1])
  assert(select(2, db:modifyRecords{ save = { root, asked } }) == nil)
  local dc = sf.as("dana@example.com"):container(C)
  assert(dc:requestShareAccess{ asked.url }[asked.url])
  asked = db:fetchRecord(asked.recordID)
  asked:denyRequesters(asked.requesters)
  assert(select(2, db:modifyRecords{ save = { asked } }) == nil)
  assert(dc:requestShareAccess{ asked.url }[asked.url])
  asked = db:fetchRecord(asked.recordID)
  asked:blockRequesters(asked.requesters)
  assert(select(2, db:modifyRecords{ save = { asked } }) == nil)
  asked = db:fetchRecord(asked.recordID)
  asked:unblockIdentities(asked.blockedIdentities)
  for _, p in ipairs(asked.participants) do
    if p.role == "privateUser" then p.role = "administrator" end
  end
  assert(select(2, db:modifyRecords{ save = { asked } }) == nil)

  ev = seen["share.accessRequested"][1]
  common(ev, "share.accessRequested")
  expect.eq(ev.caller.email, "dana@example.com"); expect.eq(ev.url, asked.url); expect.eq(ev.share.title, "asked")
  expect.eq(ev.requester.participantLookupInfo.emailAddress, "dana@example.com")
  expect.eq(#ev.share.requesters, 1, "the share as its owner sees it")
  ev = seen["share.requestersDenied"][1]
  common(ev, "share.requestersDenied")
  expect.eq(ev.requesters[1].participantLookupInfo.emailAddress, "dana@example.com")
  ev = seen["share.requestersBlocked"][1]
  common(ev, "share.requestersBlocked")
  expect.eq(ev.identities[1].lookupInfo.emailAddress, "dana@example.com"); expect.eq(#ev.removedParticipants, 0)
  ev = seen["share.identitiesUnblocked"][1]
  common(ev, "share.identitiesUnblocked")
  expect.eq(ev.identities[1].lookupInfo.emailAddress, "dana@example.com")
  ev = seen["participant.roleChanged"][1]
  common(ev, "participant.roleChanged")
  expect.eq(ev.from, "privateUser"); expect.eq(ev.to, "administrator"); expect.eq(ev.participant.userIdentity.lookupInfo.emailAddress, "bob@example.com")

  ev = seen["subscription.fired"][1]
  common(ev, "subscription.fired")
  expect.eq(ev.subscription.subscriptionID, "z"); expect.eq(ev.owner.email, "alice@example.com")
  expect.eq(ev.notification.subscriptionID, "z"); expect.eq(ev.database, "private"); expect.eq(ev.zoneID.zoneName, "Z")

  -- share.accessRequestDropped needs a cap below a test's reach (sharing.maxRequesters, a
  -- config key): AccessRequestTests drops a request past a cap of 1 and reads the event.
  for _, name in ipairs(sf.events) do
    if name ~= "share.accessRequestDropped" then expect.truthy(seen[name], name .. " was emitted") end
  end
end)

test("observers run after commit, and a rolled-back item emits nothing", function()
  sf.accounts.create{ email = "alice@example.com" }
  local c, db, zone = alicesZone()
  local r = sf.Record{ recordType = "Doc", zone = zone }
  local committed
  sf.on("share.saved", function(ev)
    -- the change is visible to a reader when the observer runs
    committed = db:fetchRecord(ev.share.recordID) ~= nil
  end)
  local saved = 0
  sf.on("share.saved", function() saved = saved + 1 end)
  sf.policy("share.save", function(req) if req.proposed.title == "blocked" then return sf.deny("no") end end)
  db:modifyRecords{ save = { r, sf.Share{ rootRecord = r, title = "ok" } } }
  expect.eq(committed, true)
  local r2 = sf.Record{ recordType = "Doc", zone = zone }
  local blocked = sf.Share{ rootRecord = r2, title = "blocked" }
  local _, err = db:modifyRecords{ save = { r2, blocked } }
  expect.code(errorFor(err, blocked), "permissionFailure")
  expect.code(errorFor(err, r2), "batchRequestFailed", "the root is not saved alone (R22)")
  expect.code(select(2, db:fetchRecord(r2.recordID)), "unknownItem")
  expect.eq(saved, 1, "the denied save emitted nothing")
end)

test("handles remove observers and policies; unknown names are errors", function()
  sf.accounts.create{ email = "alice@example.com" }
  local n = 0
  local h = sf.on("participant.fetched", function() n = n + 1 end, { name = "counter" })
  local c = sf.as("alice@example.com"):container(C)
  c:fetchShareParticipants{ "x@example.com" }
  h:remove()
  c:fetchShareParticipants{ "y@example.com" }
  expect.eq(n, 1)
  expect.eq(h.name, "counter")
  expect.raises(function() sf.on("share.exploded", function() end) end, "unknown event 'share.exploded'")
  expect.raises(function() sf.policy("share.delete", function() end) end, "unknown decision point 'share.delete'")
end)

test("policies: first denial in priority order decides; false, reason denies; errors deny", function()
  sf.accounts.create{ email = "alice@example.com" }
  local c, db, zone = alicesZone()
  local calls = {}
  sf.policy("share.save", function() calls[#calls + 1] = "low"; return sf.deny("low says no") end, { priority = -1, name = "low" })
  sf.policy("share.save", function() calls[#calls + 1] = "high"; return false, "high says no" end, { priority = 5, name = "high" })
  local r = sf.Record{ recordType = "Doc", zone = zone }
  local s = sf.Share{ rootRecord = r }
  local _, err = db:modifyRecords{ save = { r, s } }
  local e = errorFor(err, s)
  expect.contains(e.message, "denied by policy 'high' at share.save: high says no")
  expect.eq(table.concat(calls, ","), "high", "the first denial stops the others")
  local d = sf.decisions{ limit = 1 }[1]
  expect.eq(d.allow, false); expect.eq(d.policies[1], "high"); expect.eq(d.reasons[1], "high: high says no")
end)

test("a policy request's objects are made when read, and a kept request still reads them", function()
  sf.accounts.create{ email = "alice@example.com" }
  sf.accounts.create{ email = "bob@example.com" }
  local c, db, zone = alicesZone()
  local kept, keys = {}, {}
  sf.policy("share.accept", function(req)
    kept[#kept + 1] = req
    if #kept == 1 then
      expect.eq(req.share, req.share, "one object per field")
      expect.eq(req.point, "share.accept")
      for k in pairs(req) do keys[#keys + 1] = k end
    end
  end)
  local urls = {}
  for i = 1, 3 do
    local r = sf.Record{ recordType = "Doc", zone = zone }
    local s = sf.Share{ rootRecord = r, title = "doc" .. i }
    s:addParticipant(c:fetchShareParticipants{ "bob@example.com" }[1])
    db:modifyRecords{ save = { r, s } }
    urls[i] = s.url
  end
  local bc = sf.as("bob@example.com"):container(C)
  for i = 1, 3 do bc:acceptShares{ bc:fetchShareMetadata{ urls[i] }[urls[i]] } end
  expect.eq(#kept, 3)
  -- Read after the calls: the fields not read during them are still there.
  expect.eq(kept[2].share.title, "doc2")
  expect.eq(kept[3].participant.userIdentity.lookupInfo.emailAddress, "bob@example.com")
  expect.eq(kept[3].metadata.share.url, urls[3])
  table.sort(keys)
  expect.eq(table.concat(keys, ","), "caller,container,metadata,participant,point,share", "pairs lists the objects, not the hidden serial")
end)

test("a request kept past the most recent decisions says why its objects are gone", function()
  sf.accounts.create{ email = "alice@example.com" }
  local c, db, zone = alicesZone()
  local first
  sf.policy("share.save", function(req) first = first or req end)
  for _ = 1, 70 do
    local r = sf.Record{ recordType = "Doc", zone = zone }
    db:modifyRecords{ save = { r, sf.Share{ rootRecord = r } } }
  end
  expect.eq(first.point, "share.save", "plain fields stay")
  expect.raises(function() return first.share end, "kept for the 64 most recent decisions")
end)
