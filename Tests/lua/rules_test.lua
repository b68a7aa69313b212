-- Rules R1–R18 through the Lua API, as a user drives them. Run: shareflow test Tests/lua
local sf = require("shareflow")
local helpers = require("helpers")
local errorFor = helpers.errorFor
local participant = helpers.participant
local shared = helpers.shared
local expectBrokenRule = helpers.expectBrokenRule
local C = "iCloud.com.example.trips"

-- Alice owns a zone with a trip (and a day under it); Bob and Carol have accounts.
local function world(tag)
  local w = {}
  if tag then -- a second, independent owner in the same store
    w.alice = sf.accounts.create{ email = "alice" .. tag .. "@example.com" }
    w.c = sf.as("alice" .. tag .. "@example.com"):container(C)
    w.db = w.c.privateCloudDatabase
    w.zone = w.db:saveZone("Trips")
    w.trip = sf.Record{ recordType = "Trip", recordName = "lisbon", zone = w.zone }
    w.day = sf.Record{ recordType = "Day", recordName = "day1", zone = w.zone, parent = w.trip }
    return w
  end
  w.alice = sf.accounts.create{ email = "alice@example.com", name = { given = "Alice" }, discoverable = true }
  w.bob = sf.accounts.create{ email = "bob@example.com", phone = "+1 415 555 0101", name = { given = "Bob" }, discoverable = true }
  w.carol = sf.accounts.create{ email = "carol@example.com", name = { given = "Carol" } }
  w.c = sf.as("alice@example.com"):container(C)
  w.db = w.c.privateCloudDatabase
  w.zone = w.db:saveZone("Trips")
  w.trip = sf.Record{ recordType = "Trip", recordName = "lisbon", zone = w.zone, fields = { title = "Lisbon", days = 5 } }
  w.day = sf.Record{ recordType = "Day", recordName = "day1", zone = w.zone, fields = { n = 1 }, parent = w.trip }
  w.bc = sf.as("bob@example.com"):container(C)
  w.cc = sf.as("carol@example.com"):container(C)
  return w
end

local function accept(c, url)
  local ms, err = c:fetchShareMetadata{ url }
  if not ms[url] then return nil, err.partialErrors[url] end
  local shares, err2 = c:acceptShares{ ms[url] }
  if not shares[1] then return nil, err2 and err2.partialErrors and select(2, next(err2.partialErrors)) end
  return shares[1]
end

test("R1: emails compare case-insensitively after trimming", function()
  local w = world()
  local a = sf.accounts.find{ email = "  BOB@Example.COM " }
  expect.eq(a and a.userRecordID, w.bob.userRecordID)
end)

test("R1: phones are normalised to E.164", function()
  local w = world()
  expect.eq(w.bob.phones[1], "+14155550101")
  expect.eq(sf.accounts.find{ phoneNumber = "+1 (415) 555-0101" }.userRecordID, w.bob.userRecordID)
  expect.eq(sf.accounts.find{ phoneNumber = "+1.415.555.0101" }.userRecordID, w.bob.userRecordID)
end)

test("R1: a malformed email or phone fails its own item, naming the value", function()
  local w = world()
  local ps, err = w.c:fetchShareParticipants{ { emailAddress = "not-an-email" }, { emailAddress = "bob@example.com" },
                                              { phoneNumber = "12" } }
  expect.eq(#ps, 1)
  expect.code(err, "partialFailure")
  expect.code(err.partialErrors["not-an-email"], "invalidArguments")
  expect.contains(err.partialErrors["not-an-email"].message, "not-an-email")
  expect.code(err.partialErrors["12"], "invalidArguments")
  expect.contains(err.partialErrors["12"].message, "E.164")
end)

test("R1: a LookupInfo holds exactly one field", function()
  expect.raises(function() sf.LookupInfo{ emailAddress = "a@b.co", phoneNumber = "+14155550100" } end, "exactly one")
  expect.raises(function() sf.LookupInfo{} end, "exactly one")
  expect.raises(function() sf.LookupInfo{ mail = "a@b.co" } end, "unknown field 'mail'")
end)

test("R1: account creation rejects a malformed email", function()
  expect.raises(function() sf.accounts.create{ email = "bad@" } end, "'bad@' is not a valid email")
  expect.eq(#sf.accounts.list(), 0, "nothing was created")
end)

test("R2: identities carry name only when discoverable, and hasiCloudAccount", function()
  local w = world()
  local bob = participant(w.c, "bob@example.com").userIdentity
  expect.eq(bob.userRecordID, w.bob.userRecordID)
  expect.eq(bob.nameComponents.given, "Bob")
  expect.eq(bob.hasiCloudAccount, true)
  local carol = participant(w.c, "carol@example.com").userIdentity
  expect.eq(carol.nameComponents, nil, "carol is not discoverable")
  local nobody = participant(w.c, "nobody@example.com").userIdentity
  expect.eq(nobody.userRecordID, nil)
  expect.eq(nobody.hasiCloudAccount, false)
  expect.eq(nobody.lookupInfo.emailAddress, "nobody@example.com")
end)

test("R3: sharing in the default zone fails with invalidArguments", function()
  local w = world()
  local r = sf.Record{ recordType = "Note", recordName = "n", zone = { zoneName = "_defaultZone", ownerName = w.alice.userRecordID } }
  local s = sf.Share{ rootRecord = r }
  local _, err = w.db:modifyRecords{ save = { r, s } }
  expect.code(err.partialErrors[tostring(s.recordName) .. " (_defaultZone/" .. w.alice.userRecordID .. ")"], "invalidArguments")
end)

test("R3: sharing in the public database fails with badDatabase", function()
  local w = world()
  local pub = w.c.publicCloudDatabase
  local r = sf.Record{ recordType = "Note", recordName = "n", zone = { zoneName = "_defaultZone", ownerName = "__defaultOwner__" } }
  local s = sf.Share{ rootRecord = r }
  local saved, err = pub:modifyRecords{ save = { r, s } }
  expect.eq(#saved, 1, "the plain record is saved")
  local found
  for _, e in pairs(err.partialErrors) do found = e end
  expect.code(found, "badDatabase")
end)

test("R4: a hierarchy share covers the root and its parent chain, not other references", function()
  local w = world()
  local other = sf.Record{ recordType = "Photo", recordName = "photo", zone = w.zone, fields = { trip = w.trip } }
  local share = shared(w, { "bob@example.com" })
  w.db:modifyRecords{ save = { other } }
  assert(accept(w.bc, share.url))
  local sdb = w.bc.sharedCloudDatabase
  expect.truthy(sdb:fetchRecord(w.day.recordID), "child by parent is shared")
  local r, err = sdb:fetchRecord(other.recordID)
  expect.eq(r, nil)
  expect.code(err, "unknownItem", "a reference field does not share")
end)

test("R4: a zone share covers every record of the zone and has no root", function()
  local w = world()
  w.db:modifyRecords{ save = { w.trip, w.day } }
  local share = sf.Share{ zone = w.zone, title = "All trips" }
  local p = participant(w.c, "bob@example.com")
  share:addParticipant(p)
  local _, err = w.db:modifyRecords{ save = { share } }
  expect.eq(err, nil)
  expect.eq(share.recordName, "cloudkit.zoneshare")
  expect.eq(share.rootRecordID, nil)
  assert(accept(w.bc, share.url))
  expect.truthy(w.bc.sharedCloudDatabase:fetchRecord(w.trip.recordID))
  expect.truthy(w.bc.sharedCloudDatabase:fetchRecord(w.day.recordID))
  local ms = w.bc:fetchShareMetadata({ share.url }, { shouldFetchRootRecord = true })
  expect.eq(ms[share.url].hierarchicalRootRecordID, nil)
  expect.eq(ms[share.url].rootRecord, nil)
end)

test("R5: a new share must be saved with its root record", function()
  local w = world()
  w.db:modifyRecords{ save = { w.trip } }
  local share = sf.Share{ rootRecord = w.trip }
  local saved, err = w.db:modifyRecords{ save = { share } }
  expect.eq(#saved, 0)
  expectBrokenRule(err, "invalidArguments", "R5")
end)

test("R5: sharing a shared record, its ancestor or its descendant fails with alreadyShared", function()
  local w = world()
  shared(w, {})
  local again = sf.Share{ rootRecord = w.trip }
  local _, err = w.db:modifyRecords{ save = { w.trip, again } }
  expect.code(errorFor(err, again), "alreadyShared", "the root again")
  expect.code(errorFor(err, w.trip), "batchRequestFailed", "the call is atomic (R22)")
  local below = sf.Share{ rootRecord = w.day }
  _, err = w.db:modifyRecords{ save = { w.day, below } }
  expect.code(errorFor(err, below), "alreadyShared", "a descendant of a shared root")
  -- An ancestor: a new parent above the shared trip.
  local w2 = world("2")
  local year = sf.Record{ recordType = "Year", recordName = "y2026", zone = w2.zone }
  w2.trip.parent = year
  w2.db:modifyRecords{ save = { year } }
  shared(w2, {})
  local top = sf.Share{ rootRecord = year }
  _, err = w2.db:modifyRecords{ save = { year, top } }
  expect.code(errorFor(err, top), "alreadyShared", "an ancestor of a shared root")
  local zs = sf.Share{ zone = w2.zone }
  _, err = w2.db:modifyRecords{ save = { zs } }
  expect.code(select(2, next(err.partialErrors)), "alreadyShared", "a zone with a shared record")
end)

test("R6: a saved share has an unguessable, stable URL", function()
  local w = world()
  local share = shared(w, {})
  local token = share.url:match("/share/([%w_-]+)$")
  expect.truthy(token and #token >= 22, "at least 128 bits in base64url: " .. share.url)
  local first = share.url
  share.title = "Renamed"
  w.db:modifyRecords{ save = { share } }
  expect.eq(share.url, first, "stable across saves")
  expect.eq(w.db:fetchRecord(share.recordID).title, "Renamed", "title editable by the owner")
  local other = world("3")
  local s2 = shared(other, {})
  expect.truthy(s2.url ~= first)
end)

test("R7: a fetched participant is privateUser/readOnly/unknown, then pending once saved", function()
  local w = world()
  local p = participant(w.c, "bob@example.com")
  expect.eq(p.role, "privateUser")
  expect.eq(p.permission, "readOnly")
  expect.eq(p.acceptanceStatus, "unknown")
  local share = sf.Share{ rootRecord = w.trip }
  share:addParticipant(p)
  w.db:modifyRecords{ save = { w.trip, share } }
  expect.eq(share.participants[2].acceptanceStatus, "pending")
  expect.eq(sf.Participant, nil, "participants are not constructed by users")
end)

test("R8: a share holds at most 100 participants, owner included", function()
  local w = world()
  local share = sf.Share{ rootRecord = w.trip }
  for i = 1, 99 do
    share:addParticipant(participant(w.c, "guest" .. i .. "@example.com"))
  end
  local _, err = w.db:modifyRecords{ save = { w.trip, share } }
  expect.eq(err, nil, "100 with the owner is fine")
  share:addParticipant(participant(w.c, "guest100@example.com"))
  _, err = w.db:modifyRecords{ save = { share } }
  local e = select(2, next(err.partialErrors))
  expect.code(e, "tooManyParticipants")
  expect.eq(e.codeNumber, 29)
  expect.eq(#w.db:fetchRecord(share.recordID).participants, 100, "the 101st was not added")
end)

test("R9: adding the same person again updates instead of adding twice", function()
  local w = world()
  local share = shared(w, { "bob@example.com" })
  local again = participant(w.c, "bob@example.com")
  again.permission = "readWrite"
  share:addParticipant(again)
  w.db:modifyRecords{ save = { share } }
  local fresh = w.db:fetchRecord(share.recordID)
  expect.eq(#fresh.participants, 2)
  expect.eq(fresh.participants[2].permission, "readWrite")
end)

test("R9: only the owner or an administrator manages participants", function()
  local w = world()
  local share = shared(w, { "bob@example.com" }, "readWrite")
  local bobShare = assert(accept(w.bc, share.url))
  bobShare:addParticipant(participant(w.bc, "carol@example.com"))
  local _, err = w.bc.sharedCloudDatabase:modifyRecords{ save = { bobShare } }
  expect.code(select(2, next(err.partialErrors)), "permissionFailure")
end)

test("R9: participants can be added only while publicPermission is none", function()
  local w = world()
  local share = shared(w, {})
  share.publicPermission = "readOnly"
  w.db:modifyRecords{ save = { share } }
  share:addParticipant(participant(w.c, "bob@example.com"))
  local _, err = w.db:modifyRecords{ save = { share } }
  expectBrokenRule(err, "invalidArguments", "R9")
end)

test("R10: a private share is accepted only by people the owner added", function()
  local w = world()
  local share = shared(w, { "bob@example.com" })
  local s, err = accept(w.cc, share.url)
  expect.eq(s, nil)
  expect.code(err, "unknownItem", "carol learns nothing")
  expect.truthy(accept(w.bc, share.url))
end)

test("R10: anyone with the URL of a public share joins as publicUser with its permission", function()
  local w = world()
  local share = shared(w, {})
  share.publicPermission = "readWrite"
  w.db:modifyRecords{ save = { share } }
  local s = assert(accept(w.cc, share.url))
  expect.eq(s.currentUserParticipant.role, "publicUser")
  expect.eq(s.currentUserParticipant.permission, "readWrite")
  expect.eq(s.currentUserParticipant.acceptanceStatus, "accepted")
end)

test("R11: changing publicPermission removes pending participants; none removes all but the owner", function()
  local w = world()
  local share = shared(w, { "bob@example.com", "carol@example.com" })
  assert(accept(w.bc, share.url))
  local removed = {}
  sf.on("participant.removed", function(ev) removed[#removed + 1] = ev.participant.userIdentity.lookupInfo.emailAddress .. ":" .. ev.reason end)
  share = w.db:fetchRecord(share.recordID)
  share.publicPermission = "readOnly"
  w.db:modifyRecords{ save = { share } }
  expect.eq(table.concat(removed, ","), "carol@example.com:publicPermissionChanged", "pending carol removed, accepted bob kept")
  share.publicPermission = "none"
  w.db:modifyRecords{ save = { share } }
  expect.eq(removed[2], "bob@example.com:publicPermissionChanged")
  local fresh = w.db:fetchRecord(share.recordID)
  expect.eq(#fresh.participants, 1)
  expect.eq(fresh.participants[1].role, "owner")
end)

test("R12: records are visible only while accepted; removal hides them at once", function()
  local w = world()
  local share = shared(w, { "bob@example.com" })
  local sdb = w.bc.sharedCloudDatabase
  local r, err = sdb:fetchRecord(w.trip.recordID)
  expect.code(err, "zoneNotFound", "pending sees nothing, not even the zone (R37)")
  assert(accept(w.bc, share.url))
  expect.eq(sdb:fetchRecord(w.trip.recordID).fields.title, "Lisbon")
  expect.eq(#sdb:fetchAllRecordZones(), 1)
  share = w.db:fetchRecord(share.recordID)  -- bob's acceptance changed the share (R21)
  share:removeParticipant(share.participants[2])
  w.db:modifyRecords{ save = { share } }
  r, err = sdb:fetchRecord(w.trip.recordID)
  expect.eq(r, nil)
  expect.code(err, "zoneNotFound", "no longer shared with bob: as if it did not exist (R27)")
  expect.eq(#sdb:fetchAllRecordZones(), 0)
end)

test("R13: readWrite may modify and delete, readOnly may not; only the owner deletes the root", function()
  local w = world()
  local share = shared(w, { "bob@example.com", "carol@example.com" })
  share.participants[2].permission = "readWrite"
  w.db:modifyRecords{ save = { share } }
  assert(accept(w.bc, share.url)); assert(accept(w.cc, share.url))
  local bobDay = w.bc.sharedCloudDatabase:fetchRecord(w.day.recordID)
  bobDay.fields.n = 2
  local _, err = w.bc.sharedCloudDatabase:modifyRecords{ save = { bobDay } }
  expect.eq(err, nil, "readWrite bob modifies")
  local carolDay = w.cc.sharedCloudDatabase:fetchRecord(w.day.recordID)
  expect.eq(carolDay.fields.n, 2)
  carolDay.fields.n = 3
  _, err = w.cc.sharedCloudDatabase:modifyRecords{ save = { carolDay } }
  expect.code(select(2, next(err.partialErrors)), "permissionFailure", "readOnly carol may not")
  _, err = w.bc.sharedCloudDatabase:modifyRecords{ delete = { w.trip.recordID } }
  expectBrokenRule(err, "permissionFailure", "R13", "bob may not delete the root")
  _, err = w.bc.sharedCloudDatabase:modifyRecords{ delete = { w.day.recordID } }
  expect.eq(err, nil, "bob deletes a child")
end)

test("R13: the owner deleting the root deletes the share", function()
  local w = world()
  local share = shared(w, { "bob@example.com" })
  assert(accept(w.bc, share.url))
  local _, err = w.db:modifyRecords{ delete = { w.trip.recordID } }
  expect.eq(err, nil)
  local s, e = w.db:fetchRecord(share.recordID)
  expect.code(e, "unknownItem")
  local ms, merr = w.bc:fetchShareMetadata{ share.url }
  expect.code(merr.partialErrors[share.url], "unknownItem")
end)

test("R14: a participant deleting the share leaves it; it stays for the others", function()
  local w = world()
  local share = shared(w, { "bob@example.com", "carol@example.com" })
  assert(accept(w.bc, share.url)); assert(accept(w.cc, share.url))
  local _, err = w.bc.sharedCloudDatabase:modifyRecords{ delete = { share.recordID } }
  expect.eq(err, nil)
  local ms = w.bc:fetchShareMetadata{ share.url }
  expect.eq(ms[share.url].participantStatus, "removed")
  expect.truthy(w.cc.sharedCloudDatabase:fetchRecord(w.trip.recordID), "carol still sees it")
end)

test("R14: the owner deleting the share ends it for all", function()
  local w = world()
  local share = shared(w, { "bob@example.com" })
  assert(accept(w.bc, share.url))
  local reasons = {}
  sf.on("participant.removed", function(ev) reasons[#reasons + 1] = ev.reason end)
  w.db:modifyRecords{ delete = { share.recordID } }
  expect.eq(reasons[1], "shareDeleted")
  local r, err = w.bc.sharedCloudDatabase:fetchRecord(w.trip.recordID)
  expect.eq(r, nil)
  expect.code(err, "zoneNotFound", "the zone is no longer shared with bob (R27)")
  expect.eq(w.db:fetchRecord(w.trip.recordID).share, nil, "the root is no longer shared")
end)

test("R15: participants as seen by a caller hold the owner and the caller; owner/current are relative", function()
  local w = world()
  local share = shared(w, { "bob@example.com", "carol@example.com" })
  local bobShare = assert(accept(w.bc, share.url))
  expect.eq(bobShare.owner.userIdentity.userRecordID, w.alice.userRecordID)
  expect.eq(bobShare.currentUserParticipant.userIdentity.userRecordID, w.bob.userRecordID)
  for _, p in ipairs(bobShare.participants) do
    expect.truthy(p.acceptanceStatus ~= "pending", "bob does not see carol's pending invitation")
  end
  expect.eq(share.currentUserParticipant.role, "owner", "alice is the current user of her share")
end)

test("R16: a stranger gets unknownItem, or participantMayNeedVerification when an invitation is unmatched", function()
  local w = world()
  local share = shared(w, { "bob@example.com" })
  local _, err = w.cc:fetchShareMetadata{ share.url }
  expect.code(err.partialErrors[share.url], "unknownItem")
  local s2 = w.db:fetchRecord(share.recordID)
  s2:addParticipant(participant(w.c, "carol.work@example.com"))
  w.db:modifyRecords{ save = { s2 } }
  _, err = w.cc:fetchShareMetadata{ share.url }
  local e = expect.code(err.partialErrors[share.url], "participantMayNeedVerification")
  expect.eq(e.codeNumber, 33)
end)

test("R17: gaining a matching email verifies the pending participant", function()
  local w = world()
  local share = shared(w, { "carol.work@example.com" })
  expect.eq(share.participants[2].userIdentity.hasiCloudAccount, false)
  w.carol:addEmail("Carol.Work@example.com")
  local ms = w.cc:fetchShareMetadata{ share.url }
  expect.eq(ms[share.url].participantStatus, "pending")
  assert(accept(w.cc, share.url))
  expect.truthy(w.cc.sharedCloudDatabase:fetchRecord(w.trip.recordID))
end)

test("R18: accepting makes records appear; accepting again changes nothing", function()
  local w = world()
  local share = shared(w, { "bob@example.com" })
  local accepted = 0
  sf.on("share.accepted", function() accepted = accepted + 1 end)
  local s = assert(accept(w.bc, share.url))
  expect.eq(s.currentUserParticipant.acceptanceStatus, "accepted")
  local again, err = accept(w.bc, share.url)
  expect.truthy(again, tostring(err))
  expect.eq(accepted, 1, "the second accept changed nothing")
end)

test("R18: a removed participant of a private share cannot accept until re-added", function()
  local w = world()
  local share = shared(w, { "bob@example.com" })
  local ms = w.bc:fetchShareMetadata{ share.url }
  share:removeParticipant(share.participants[2])
  w.db:modifyRecords{ save = { share } }
  local shares, err = w.bc:acceptShares{ ms[share.url] }
  expect.eq(#shares, 0)
  expectBrokenRule(err, "permissionFailure", "R18")
  share:addParticipant(participant(w.c, "bob@example.com"))
  w.db:modifyRecords{ save = { share } }
  expect.truthy(accept(w.bc, share.url), "re-added, bob can accept")
end)

test("bad input: unknown enum strings and fields are clear errors", function()
  local w = world()
  local p = participant(w.c, "bob@example.com")
  expect.raises(function() p.permission = "admin" end, "invalid permission 'admin'")
  expect.raises(function() return p.nickname end, "Participant has no field 'nickname'")
  expect.raises(function() sf.Record{ recordType = "T", zone = w.zone, colour = "red" } end, "unknown field 'colour'")
  expect.raises(function() sf.Record{ zone = w.zone } end, "recordType")
end)

test("bad input: unknown zone and another user's private database", function()
  local w = world()
  local r = sf.Record{ recordType = "T", recordName = "x", zone = { zoneName = "Nope", ownerName = w.alice.userRecordID } }
  local _, err = w.db:modifyRecords{ save = { r } }
  expect.code(select(2, next(err.partialErrors)), "zoneNotFound")
  local intruder = sf.Record{ recordType = "T", recordName = "x", zone = w.zone }
  _, err = w.bc.privateCloudDatabase:modifyRecords{ save = { intruder } }
  expect.code(select(2, next(err.partialErrors)), "permissionFailure")
end)
