-- SPEC §18 P2: what a policy sees. req.share is the share as stored before the change (its
-- owner included; nil while the share is being created), req.proposed the share as the change
-- would leave it, req.changes what differs.
local sf = require("shareflow")
local helpers = require("helpers")

local function emails(list)
  local out = {}
  for _, p in ipairs(list) do
    local info = p.userIdentity.lookupInfo
    out[#out + 1] = info and info.emailAddress or "?"
  end
  table.sort(out)
  return table.concat(out, ",")
end

test("share.save on a new share: no req.share, the proposed share has its owner and pending invitees", function()
  local w = helpers.world()
  local seen
  sf.policy("share.save", function(req)
    seen = {
      share = req.share,
      owner = req.proposed.owner and req.proposed.owner.role,
      statuses = {},
      added = emails(req.changes.participantsAdded),
      title = req.changes.title and req.changes.title.to,
    }
    for _, p in ipairs(req.proposed.participants) do
      if p.role ~= "owner" then seen.statuses[#seen.statuses + 1] = p.acceptanceStatus end
    end
  end)
  helpers.shared(w, { "bob@example.com", "carol@example.com" })
  expect.eq(seen.share, nil, "req.share of a share being created")
  expect.eq(seen.owner, "owner", "the proposed share's owner")
  expect.eq(table.concat(seen.statuses, ","), "pending,pending", "invitees as the save leaves them")
  expect.eq(seen.added, "bob@example.com,carol@example.com")
  expect.eq(seen.title, "Lisbon trip")
end)

test("participant.add: req.share is before the add, req.proposed after; a two-writer limit counts right", function()
  local w = helpers.world()
  local share = helpers.shared(w, { "bob@example.com" }, "readWrite")
  local before, after
  sf.policy("participant.add", function(req)
    local function writers(s)
      local n = 0
      for _, p in ipairs(s.participants) do
        if p.role ~= "owner" and p.permission == "readWrite" and p.acceptanceStatus ~= "removed" then n = n + 1 end
      end
      return n
    end
    before, after = writers(req.share), writers(req.proposed)
    expect.eq(req.share.owner.role, "owner", "the stored share names its owner")
    if after > 2 then return sf.deny("at most two writers") end
  end, { name = "two-writers" })
  helpers.invite(w, share, "carol@example.com", "readWrite")
  local _, err = w.db:modifyRecords{ save = { share } }
  expect.eq(err, nil, "the second writer is allowed")
  expect.eq(before, 1)
  expect.eq(after, 2)
  sf.accounts.create{ email = "dana@example.com" }
  helpers.invite(w, share, "dana@example.com", "readWrite")
  _, err = w.db:modifyRecords{ save = { share } }
  expect.denied(err, "at most two writers")
end)

test("share.save: req.changes lists removes, permission changes and the title", function()
  local w = helpers.world()
  local share = helpers.shared(w, { "bob@example.com", "carol@example.com" })
  local changes
  sf.policy("share.save", function(req) changes = req.changes end)
  for _, p in ipairs(share.participants) do
    local info = p.userIdentity.lookupInfo
    if info and info.emailAddress == "bob@example.com" then share:removeParticipant(p) end
    if info and info.emailAddress == "carol@example.com" then p.permission = "readWrite" end
  end
  share.title = "Porto trip"
  local _, err = w.db:modifyRecords{ save = { share } }
  expect.eq(err, nil)
  expect.eq(emails(changes.participantsRemoved), "bob@example.com")
  expect.eq(#changes.participantsAdded, 0)
  expect.eq(#changes.permissionsChanged, 1)
  expect.eq(changes.permissionsChanged[1].from, "readOnly")
  expect.eq(changes.permissionsChanged[1].to, "readWrite")
  expect.eq(changes.title.from, "Lisbon trip")
  expect.eq(changes.title.to, "Porto trip")
  expect.eq(changes.publicPermission, nil, "unchanged values are not listed")
end)

test("share.publicPermission: from and to, and the same change in req.changes", function()
  local w = helpers.world()
  local share = helpers.shared(w, {})
  local seen
  sf.policy("share.publicPermission", function(req)
    seen = { from = req.from, to = req.to, stored = req.share.publicPermission, proposed = req.proposed.publicPermission,
      change = req.changes.publicPermission }
  end)
  share.publicPermission = "readOnly"
  local _, err = w.db:modifyRecords{ save = { share } }
  expect.eq(err, nil)
  expect.eq(seen.from, "none")
  expect.eq(seen.to, "readOnly")
  expect.eq(seen.stored, "none")
  expect.eq(seen.proposed, "readOnly")
  expect.eq(seen.change.from, "none")
  expect.eq(seen.change.to, "readOnly")
end)

test("a policy that changes req.proposed or req.participant changes nothing saved", function()
  local w = helpers.world()
  local share = helpers.shared(w, {})
  sf.policy("participant.add", function(req)
    req.participant.permission = "readWrite"
    req.proposed.publicPermission = "readWrite"
  end)
  helpers.invite(w, share, "bob@example.com", "readOnly")
  local saved, err = w.db:modifyRecords{ save = { share } }
  expect.eq(err, nil)
  for _, p in ipairs(saved[1].participants) do
    if p.role ~= "owner" then expect.eq(p.permission, "readOnly", "the invitee's permission as the owner set it") end
  end
  expect.eq(saved[1].publicPermission, "none")
end)

test("share.accept: req.share is the share before the accept, owner included; no proposed share", function()
  local w = helpers.world()
  local share = helpers.shared(w, { "bob@example.com" })
  local seen
  sf.policy("share.accept", function(req)
    seen = { owner = req.share.owner.role, proposed = req.proposed, changes = req.changes }
  end)
  helpers.accept(w.bc, share.url)
  expect.eq(seen.owner, "owner")
  expect.eq(seen.proposed, nil)
  expect.eq(seen.changes, nil)
end)

-- SPEC §18 P3, P4: the log names who asked about which share, the policy, its line and the input;
-- sf.policies.evaluate asks again by hand, changing nothing and logging nothing.
test("a logged denial names the caller, the share, the policy's line and its input; evaluate asks it again", function()
  local w = helpers.world()
  local share = helpers.shared(w, { "bob@example.com" })
  sf.policy("share.accept", function(req)
    if req.caller.email == "bob@example.com" then return sf.deny("not bob") end
  end, { name = "no-bob" })
  local ms = assert(w.bc:fetchShareMetadata{ share.url })
  local _, err = w.bc:acceptShares{ ms[share.url] }
  expect.denied(err, "not bob")
  local d = sf.decisions{ limit = 1, point = "share.accept", denied = true }[1]
  expect.eq(d.allow, false)
  expect.eq(d.policy, "no-bob")
  expect.contains(d.location, "policy_requests_test.lua:")
  expect.eq(d.share.recordName, share.recordName)
  expect.truthy(d.caller, "the caller's user record ID")
  expect.contains(d.input, "bob@example.com")
  local before = #sf.decisions{ limit = 100 }
  local again = sf.policies.evaluate("share.accept", { caller = { userRecordID = d.caller, email = "bob@example.com" } })
  expect.denied(again, "not bob")
  expect.eq(again.policy, "no-bob")
  expect.eq(#sf.decisions{ limit = 100 }, before, "evaluate logs nothing")
  expect.allowed(sf.policies.evaluate("share.accept", { caller = { userRecordID = "_x", email = "carol@example.com" } }))
end)

test.cases("sf.decisions and sf.policies.evaluate refuse bad arguments", {
  { function() sf.decisions{ point = "share.nope" } end, "unknown decision point" },
  { function() sf.decisions{ since = "yesterday" } end, "since must be" },
  { function() sf.decisions{ limit = 0 } end, "limit" },
  { function() sf.decisions{ colour = "red" } end, "colour" },
  { function() sf.policies.evaluate("share.nope", {}) end, "unknown decision point" },
  { function() sf.policies.evaluate("share.accept", { caller = 5 }) end, "caller must be an object" },
  { function() sf.policies.evaluate("share.accept", { point = "share.save" }) end, "not share.accept" },
}, function(row)
  expect.raises(row[1], row[2])
end)

test("every question of one save sees the share as it was before the save", function()
  local w = helpers.world()
  local seen = {}
  sf.policy("participant.add", function(req)
    seen[#seen + 1] = { share = req.share, added = #req.changes.participantsAdded }
  end)
  sf.policy("share.publicPermission", function(req) seen.public = req.share end)
  local saved = helpers.shared(w, { "bob@example.com", "carol@example.com" })
  expect.eq(#seen, 2, "one participant.add per invitee")
  for i, s in ipairs(seen) do
    expect.eq(s.share, nil, "req.share of a share being created, at add " .. i)
    expect.eq(s.added, 2, "the save's whole change, at add " .. i)
  end
  -- An existing share: each add sees it as stored before the save, not after the earlier adds.
  local share = w.db:fetchRecord(saved.recordID)
  seen = {}
  sf.accounts.create{ email = "dana@example.com" }
  sf.accounts.create{ email = "erin@example.com" }
  helpers.invite(w, share, "dana@example.com")
  helpers.invite(w, share, "erin@example.com")
  local _, err = w.db:modifyRecords{ save = { share } }
  expect.eq(err, nil)
  expect.eq(#seen, 2)
  for _, s in ipairs(seen) do expect.eq(#s.share.participants, 3, "owner, Bob and Carol, before the save") end
end)
