-- SPEC §17, share access requests, through the Lua API. Run: shareflow test Tests/lua
local sf = require("shareflow")
local helpers = require("helpers")
local world = helpers.world
local shared = helpers.shared

local accept = helpers.accept

test("R38: only the owner or an administrator changes whether a share takes access requests", function()
  local w = world()
  local share = shared(w, { "bob@example.com" }, "readWrite")
  expect.eq(share.allowsAccessRequests, false, "off by default")
  accept(w.bc, share.url)
  local mine = w.db:fetchRecord(share.recordID)
  mine.allowsAccessRequests = true
  assert(select(2, w.db:modifyRecords{ save = { mine } }) == nil)
  local bobs = w.bc.sharedCloudDatabase:fetchRecord(share.recordID)
  expect.eq(bobs.allowsAccessRequests, true, "every participant sees it")
  expect.raises(function() bobs.allowsAccessRequests = false end, "only the share's owner or an administrator")
  expect.raises(function() mine.allowsAccessRequests = "yes" end, "must be a boolean")
  expect.eq(w.db:fetchRecord(share.recordID).allowsAccessRequests, true)
end)

--- Alice's share of the trip, taking requests; Dana has an account and is on nothing.
local function asking(w)
  local share = shared(w, {}, "readOnly")
  share.allowsAccessRequests = true
  assert(select(2, w.db:modifyRecords{ save = { share } }) == nil)
  sf.accounts.create{ email = "dana@example.com", name = { given = "Dana" } }
  w.dc = sf.as("dana@example.com"):container(helpers.container)
  return w.db:fetchRecord(share.recordID)
end

test("R39, R40: a request is recorded once and shown to the owner only", function()
  local w = world()
  local share = asking(w)
  local heard = {}
  sf.on("share.accessRequested", function(ev) heard[#heard + 1] = ev end)
  local results, err = w.dc:requestShareAccess{ share.url }
  expect.eq(err, nil)
  expect.eq(results[share.url], true)
  local mine = w.db:fetchRecord(share.recordID)
  expect.eq(#mine.requesters, 1)
  local r = mine.requesters[1]
  expect.eq(r.participantLookupInfo.emailAddress, "dana@example.com")
  expect.eq(r.userIdentity.nameComponents.given, "Dana", "asking shows the name (R40)")
  expect.eq(type(r.requestedAt), "number")
  expect.eq(#heard, 1)
  expect.eq(heard[1].requester.requestID, r.requestID)
  expect.eq(heard[1].url, share.url)
  -- Asking again soon is the same success and changes nothing: one account asking in a loop
  -- cannot keep renewing the share's tag (AccessRequestTests refreshes past the interval).
  local tag = mine.recordChangeTag
  assert(w.dc:requestShareAccess{ share.url }[share.url])
  local again = w.db:fetchRecord(share.recordID)
  expect.eq(#again.requesters, 1)
  expect.eq(again.requesters[1].requestID, r.requestID)
  expect.eq(again.recordChangeTag, tag)
  expect.eq(#heard, 1)
end)

test("O11: each URL is its own key, NUL bytes and all", function()
  local w = world()
  local share = asking(w)
  local odd = share.url .. "\0junk"
  local results, err = w.dc:requestShareAccess{ odd, "nothing\0x" }
  expect.eq(err, nil)
  expect.eq(results[odd], true)
  expect.eq(results["nothing\0x"], true)
  expect.eq(results[share.url], nil, "a URL never asked for is no key")
  expect.eq(results["nothing"], nil)
end)

test("R39: unknown URLs, shares without requests and blocked callers all succeed silently", function()
  local w = world()
  local share = asking(w)
  local porto = sf.Record{ recordType = "Trip", recordName = "porto", zone = w.zone }
  local closed = sf.Share{ rootRecord = porto, title = "Porto" }
  assert(select(2, w.db:modifyRecords{ save = { porto, closed } }) == nil)
  local url = share.url
  local results = w.dc:requestShareAccess{ url .. "x", "https://nowhere/share/abc", closed.url }
  expect.eq(results[url .. "x"], true)
  expect.eq(results["https://nowhere/share/abc"], true)
  expect.eq(results[closed.url], true)
  expect.eq(#w.db:fetchRecord(closed.recordID).requesters, 0, "a share that takes no requests records none")
end)

test("R39: a pending invitee is told they are invited; a public share is joined by accepting", function()
  local w = world()
  local share = asking(w)
  helpers.invite(w, share, "dana@example.com")
  assert(select(2, w.db:modifyRecords{ save = { share } }) == nil)
  local results, err = w.dc:requestShareAccess{ share.url }
  expect.eq(results[share.url], nil)
  expect.code(err.partialErrors[share.url], "participantAlreadyInvited")
  local public = w.db:fetchRecord(share.recordID)
  public.publicPermission = "readOnly"
  assert(select(2, w.db:modifyRecords{ save = { public } }) == nil)
  local _, err2 = w.dc:requestShareAccess{ share.url }
  expect.code(err2.partialErrors[share.url], "invalidArguments")
end)

test("R41: approving adds a pending approved requester and closes the request", function()
  local w = world()
  local share = asking(w)
  assert(w.dc:requestShareAccess{ share.url }[share.url])
  local added = {}
  sf.on("participant.added", function(ev) added[#added + 1] = ev end)
  local mine = w.db:fetchRecord(share.recordID)
  mine:approveRequesters(mine.requesters, { permission = "readWrite" })
  assert(select(2, w.db:modifyRecords{ save = { mine } }) == nil)
  local after = w.db:fetchRecord(share.recordID)
  expect.eq(#after.requesters, 0, "the request closed")
  local dana
  for _, p in ipairs(after.participants) do
    if p.userIdentity.lookupInfo.emailAddress == "dana@example.com" then dana = p end
  end
  assert(dana, "Dana is on the share")
  expect.eq(dana.acceptanceStatus, "pending")
  expect.eq(dana.permission, "readWrite")
  expect.eq(dana.isApprovedRequester, true)
  expect.eq(type(dana.dateAddedToShare), "number")
  expect.eq(added[1].approvedRequester, true)
  accept(w.dc, share.url)
end)

test("R41: deny closes, block closes and lists, unblock lets them ask again", function()
  local w = world()
  local share = asking(w)
  assert(w.dc:requestShareAccess{ share.url }[share.url])
  local events = {}
  for _, name in ipairs{ "share.requestersDenied", "share.requestersBlocked", "share.identitiesUnblocked" } do
    sf.on(name, function(ev) events[#events + 1] = ev end)
  end
  local mine = w.db:fetchRecord(share.recordID)
  mine:denyRequesters(mine.requesters)
  assert(select(2, w.db:modifyRecords{ save = { mine } }) == nil)
  expect.eq(#w.db:fetchRecord(share.recordID).requesters, 0)
  expect.eq(events[1].name, "share.requestersDenied")
  -- Denied, they may ask again; blocked, they may not.
  assert(w.dc:requestShareAccess{ share.url }[share.url])
  mine = w.db:fetchRecord(share.recordID)
  expect.eq(#mine.requesters, 1)
  mine:blockRequesters{ mine.requesters[1].requestID }
  assert(select(2, w.db:modifyRecords{ save = { mine } }) == nil)
  mine = w.db:fetchRecord(share.recordID)
  expect.eq(#mine.requesters, 0)
  expect.eq(#mine.blockedIdentities, 1)
  expect.eq(mine.blockedIdentities[1].lookupInfo.emailAddress, "dana@example.com")
  expect.eq(events[2].name, "share.requestersBlocked")
  assert(w.dc:requestShareAccess{ share.url }[share.url], "a blocked caller gets the same success")
  expect.eq(#w.db:fetchRecord(share.recordID).requesters, 0, "and nothing is recorded")
  -- Adding a blocked identity fails, naming the way out (R42).
  helpers.invite(w, mine, "dana@example.com")
  local _, err = w.db:modifyRecords{ save = { mine } }
  expect.contains(tostring(err), "unblockIdentities")
  mine = w.db:fetchRecord(share.recordID)
  mine:unblockIdentities(mine.blockedIdentities)
  assert(select(2, w.db:modifyRecords{ save = { mine } }) == nil)
  expect.eq(#w.db:fetchRecord(share.recordID).blockedIdentities, 0)
  expect.eq(events[3].name, "share.identitiesUnblocked")
  assert(w.dc:requestShareAccess{ share.url }[share.url])
  expect.eq(#w.db:fetchRecord(share.recordID).requesters, 1)
end)

test("R41, R42: blocking a participant takes them off; a blocked identity joins no public share", function()
  local w = world()
  local share = shared(w, { "bob@example.com" }, "readOnly")
  accept(w.bc, share.url)
  local removed
  sf.on("participant.removed", function(ev) removed = ev.reason end)
  local mine = w.db:fetchRecord(share.recordID)
  local bob
  for _, p in ipairs(mine.participants) do
    if p.role ~= "owner" then bob = p end
  end
  mine:blockRequesters{ bob }
  assert(select(2, w.db:modifyRecords{ save = { mine } }) == nil)
  expect.eq(removed, "blocked")
  mine = w.db:fetchRecord(share.recordID)
  mine.publicPermission = "readOnly"
  assert(select(2, w.db:modifyRecords{ save = { mine } }) == nil)
  local ms = assert(w.bc:fetchShareMetadata{ share.url })
  local _, err = w.bc:acceptShares{ ms[share.url] }
  expect.contains(tostring(err), "blocked")
end)

test("R40: participants who are not the owner or an administrator see no requesters", function()
  local w = world()
  local share = asking(w)
  helpers.invite(w, share, "bob@example.com")
  assert(select(2, w.db:modifyRecords{ save = { share } }) == nil)
  accept(w.bc, share.url)
  assert(w.dc:requestShareAccess{ share.url }[share.url])
  expect.eq(#w.db:fetchRecord(share.recordID).requesters, 1)
  local bobs = w.bc.sharedCloudDatabase:fetchRecord(share.recordID)
  expect.eq(#bobs.requesters, 0)
  expect.eq(#bobs.blockedIdentities, 0)
  expect.raises(function() bobs:denyRequesters("x") end, "takes a list")
end)

test("O11: ShareRequestAccessOperation calls its blocks per URL, then once", function()
  local w = world()
  local share = asking(w)
  local log = {}
  local op = sf.ShareRequestAccessOperation{ shareURLs = { share.url, "https://x/share/none" } }
  op.perShareAccessRequestResultBlock = function(url, ok, err) log[#log + 1] = url .. ":" .. tostring(ok) .. ":" .. tostring(err) end
  op.shareAccessRequestResultBlock = function(err) log[#log + 1] = "done:" .. tostring(err) end
  w.dc:add(op)
  op:wait()
  expect.eq(#log, 3)
  expect.eq(log[1], share.url .. ":true:nil")
  expect.eq(log[3], "done:nil")
  expect.eq(#w.db:fetchRecord(share.recordID).requesters, 1)
end)

test("R41: an ID that names nothing on this copy is an error, never silently nothing", function()
  local w = world()
  local share = asking(w)
  expect.raises(function() share:denyRequesters{ "nobody" } end, "is not an open request")
  expect.raises(function() share:unblockIdentities{ { blockID = "gone" } } end, "is not a blocked identity")
  expect.raises(function() share:blockRequesters{ 42 } end, "must be an ID string")
  expect.raises(function() share:approveRequesters({}, { permission = "all" }) end, "invalid permission")
end)

test("share.requestAccess: a denial is the one answer that differs; sf.approve approves at once", function()
  local w = world()
  local share = asking(w)
  local seen
  local h = sf.policy("share.requestAccess", function(req)
    seen = req
    if req.requester.participantLookupInfo.emailAddress:match("@example%.com$") then
      return sf.approve{ permission = "readWrite" }
    end
    return sf.deny("strangers wait")
  end)
  sf.accounts.create{ email = "eve@elsewhere.org" }
  local ec = sf.as("eve@elsewhere.org"):container(helpers.container)
  local _, err = ec:requestShareAccess{ share.url }
  local e = expect.code(err.partialErrors[share.url], "permissionFailure")
  expect.contains(e.message, "strangers wait")
  expect.eq(seen.url, share.url)
  expect.eq(seen.share.recordName, share.recordName, "the share as its owner sees it")
  expect.eq(#w.db:fetchRecord(share.recordID).requesters, 0, "a denied request is not recorded")

  local added = {}
  sf.on("participant.added", function(ev) added[#added + 1] = ev end)
  assert(w.dc:requestShareAccess{ share.url }[share.url])
  local after = w.db:fetchRecord(share.recordID)
  expect.eq(#after.requesters, 0)
  local dana
  for _, p in ipairs(after.participants) do
    if p.userIdentity.lookupInfo.emailAddress == "dana@example.com" then dana = p end
  end
  assert(dana, "approved at once")
  expect.eq(dana.acceptanceStatus, "pending")
  expect.eq(dana.permission, "readWrite")
  expect.eq(dana.isApprovedRequester, true)
  expect.eq(added[1].approvedRequester, true)
  expect.eq(added[1].caller.email, "alice@example.com", "with the owner's authority")
  local last = sf.decisions{ limit = 5 }
  expect.contains(last[#last].reasons[1], "owner's authority")
  accept(w.dc, share.url)
  h:remove()
end)

test("sf.approve: only known words, only at share.requestAccess, never changed after", function()
  expect.raises(function() sf.approve{ permission = "owner" } end, "permission must be")
  expect.raises(function() sf.approve{ role = "owner" } end, "role must be")
  expect.raises(function() sf.approve{ extra = 1 } end, "takes { permission =, role = } only")
  expect.raises(function() sf.approve("readWrite") end, "table expected")
  local w = world()
  local share = asking(w)
  -- An approval where no one asks to join denies, as the policy's mistake.
  local h = sf.policy("share.save", function() return sf.approve{} end)
  share.title = "x"
  local _, err = w.db:modifyRecords{ save = { share } }
  expect.contains(tostring(err), "share.requestAccess's verdict")
  h:remove()
  -- A verdict changed after it was made fails closed.
  h = sf.policy("share.requestAccess", function()
    local v = sf.approve{}
    rawset(v, "role", "owner")
    return v
  end)
  local _, err2 = w.dc:requestShareAccess{ share.url }
  expect.code(err2.partialErrors[share.url], "permissionFailure")
  expect.eq(#w.db:fetchRecord(share.recordID).participants, 1)
  h:remove()
  -- An approval still passes the owner's participant.add policies.
  sf.policy("share.requestAccess", function() return sf.approve{} end)
  sf.policy("participant.add", function() return sf.deny("no one new") end)
  local _, err3 = w.dc:requestShareAccess{ share.url }
  expect.contains(tostring(err3), "no one new")
end)

test("sf.admin.accessRequests lists open requests across the store, bounded", function()
  local w = world()
  local share = asking(w)
  assert(w.dc:requestShareAccess{ share.url }[share.url])
  assert(w.cc:requestShareAccess{ share.url }[share.url])
  local open = sf.admin.accessRequests{}
  expect.eq(#open, 2)
  expect.eq(open[1].participantLookupInfo.emailAddress, "dana@example.com")
  expect.eq(open[1].url, share.url)
  expect.eq(open[1].title, "Lisbon trip")
  expect.eq(type(open[1].age), "number")
  expect.eq(#sf.admin.accessRequests{ limit = 1 }, 1)
  expect.eq(#sf.admin.accessRequests{ olderThan = 3600 }, 0)
  expect.raises(function() sf.admin.accessRequests{ limit = 0 } end, "limit")
  expect.raises(function() sf.admin.accessRequests{ olderThan = 0 / 0 } end, "olderThan")
  expect.raises(function() sf.admin.accessRequests{ since = 1 } end, "since")
end)

test("R44: a one-time link is anyone's until its first accept, then its claimer's alone", function()
  local w = world()
  local share = shared(w, {}, "readOnly")
  local guest = sf.OneTimeURLParticipant{ permission = "readWrite" }
  expect.eq(guest.isOneTimeURLParticipant, true)
  share:addParticipant(guest)
  local second = sf.OneTimeURLParticipant{}
  share:addParticipant(second)
  assert(select(2, w.db:modifyRecords{ save = { share } }) == nil)
  expect.eq(#share.participants, 3, "two one-time participants are two people")
  local link = share:oneTimeURL(guest.participantID)
  assert(link and link ~= share.url and link ~= share:oneTimeURL(second.participantID))
  expect.eq(share:oneTimeURL("nobody"), nil)

  -- Anyone signed in may read it, as a pending participant with the link's permission.
  local ms = assert(w.bc:fetchShareMetadata{ link })
  expect.eq(ms[link].participantStatus, "pending")
  expect.eq(ms[link].participantPermission, "readWrite")
  local accepted = {}
  sf.on("share.accepted", function(ev) accepted[#accepted + 1] = ev end)
  local seenByPolicy
  local h = sf.policy("share.accept", function(req) seenByPolicy = req.oneTimeURL end)
  local shares, err = w.bc:acceptShares{ ms[link] }
  assert(shares[1], tostring(err))
  expect.eq(shares[1].currentUserParticipant.permission, "readWrite")
  expect.eq(accepted[1].oneTimeURL, true)
  expect.eq(seenByPolicy, true)
  h:remove()

  -- Claimed: Bob's link alone. Carol is a stranger to it (R16), the share's own URL included.
  local _, strangerErr = w.cc:fetchShareMetadata{ link }
  expect.code(strangerErr.partialErrors[link], "unknownItem")
  local late = w.cc:acceptShares{ ms[link] }
  expect.eq(#late, 0, "the metadata read before the claim accepts nothing now")
  local again = assert(w.bc:fetchShareMetadata{ link })
  expect.eq(again[link].participantStatus, "accepted")
  local owners = w.db:fetchRecord(share.recordID)
  local bob
  for _, p in ipairs(owners.participants) do
    if p.participantID == guest.participantID then bob = p end
  end
  expect.eq(bob.userIdentity.lookupInfo.emailAddress, "bob@example.com", "the link's participant is now Bob")
  expect.raises(function() sf.OneTimeURLParticipant{ permission = "none" } end, "readOnly or readWrite")
end)

test("§15: fault rules name the request requestShareAccess, and a request that failed records nothing", function()
  local w = world()
  local share = asking(w)
  local rule = sf.faults.add{ operation = "requestShareAccess", fault = "serviceUnavailable", count = 1 }
  local results, err = w.dc:requestShareAccess{ share.url }
  rule:remove()
  expect.eq(results[share.url], nil)
  expect.code(err, "serviceUnavailable")
  expect.eq(#w.db:fetchRecord(share.recordID).requesters, 0)
  expect.eq(sf.faults.history()[1].operation, "requestShareAccess")
  assert(w.dc:requestShareAccess{ share.url }[share.url], "the retry is recorded")
end)

test("R44, R42: a link read before its claim names only itself; a blocked identity cannot claim it", function()
  local w = world()
  local share = asking(w)
  assert(w.cc:requestShareAccess{ share.url }[share.url])
  local mine = w.db:fetchRecord(share.recordID)
  mine:blockRequesters(mine.requesters)                 -- Carol is blocked
  local guest = sf.OneTimeURLParticipant{}
  mine:addParticipant(guest)
  assert(select(2, w.db:modifyRecords{ save = { mine } }) == nil)
  local link = mine:oneTimeURL(guest.participantID)
  local ms = assert(w.cc:fetchShareMetadata{ link })
  expect.eq(ms[link].share.url, link, "the share's own URL would outlive the link")
  local _, err = w.cc:acceptShares{ ms[link] }
  expect.code(select(2, next(err.partialErrors)), "permissionFailure")
  expect.contains(tostring(err), "blocked")
  -- Added again after removal, a link is a new one: the old URL ends.
  mine = w.db:fetchRecord(share.recordID)
  local p
  for _, x in ipairs(mine.participants) do
    if x.participantID == guest.participantID then p = x end
  end
  mine:removeParticipant(p)
  assert(select(2, w.db:modifyRecords{ save = { mine } }) == nil)
  mine = w.db:fetchRecord(share.recordID)
  mine:addParticipant(guest)
  assert(select(2, w.db:modifyRecords{ save = { mine } }) == nil)
  local fresh = w.db:fetchRecord(share.recordID):oneTimeURL(guest.participantID)
  assert(fresh and fresh ~= link, "a new URL")
  local _, gone = w.dc:fetchShareMetadata{ link }
  expect.code(gone.partialErrors[link], "unknownItem")
end)

test("R44: a pending invitee opening someone's link accepts their own invitation, not the link", function()
  local w = world()
  local share = shared(w, { "bob@example.com" }, "readOnly")
  local guest = sf.OneTimeURLParticipant{ permission = "readWrite" }
  share:addParticipant(guest)
  assert(select(2, w.db:modifyRecords{ save = { share } }) == nil)
  local link = share:oneTimeURL(guest.participantID)
  local seen
  sf.on("share.accepted", function(ev) seen = ev end)
  local s = accept(w.bc, link)
  expect.eq(s.currentUserParticipant.permission, "readOnly", "Bob's own invitation")
  expect.eq(seen.oneTimeURL, nil)
  -- The link is still unclaimed: Carol claims it.
  local c = accept(w.cc, link)
  expect.eq(c.currentUserParticipant.permission, "readWrite")
end)

test("R41: a list naming one twice, or holding nil, is an error naming the item", function()
  local w = world()
  local share = asking(w)
  assert(w.dc:requestShareAccess{ share.url }[share.url])
  local mine = w.db:fetchRecord(share.recordID)
  local r = mine.requesters[1]
  expect.raises(function() mine:denyRequesters{ r, r.requestID } end, "item 2 names")
  expect.raises(function() mine:blockRequesters{ r, false } end, "item 2 must be an ID string")
  expect.raises(function() mine:denyRequesters{ nil, r } end, "must be an ID string")
end)
