local sf = require("shareflow")

local function setup()
  sf.accounts.create{ email = "owner@example.com" }
  sf.accounts.create{ email = "bob@example.com" }
  local c = sf.as("owner@example.com"):container("iCloud.test")
  local zone = c.privateCloudDatabase:saveZone("Z")
  local r = sf.Record{ recordType = "Doc", zone = zone }
  local s = sf.Share{ rootRecord = r, title = "doc" }
  s:addParticipant(c:fetchShareParticipants{ "bob@example.com" }[1])
  c.privateCloudDatabase:modifyRecords{ save = { r, s } }
  return c, s
end

test("fresh invitations stay and can be accepted", function()
  local _, s = setup()
  local bc = sf.as("bob@example.com"):container("iCloud.test")
  local shares = bc:acceptShares{ bc:fetchShareMetadata{ s.url }[s.url] }
  expect.eq(shares[1].currentUserParticipant.acceptanceStatus, "accepted")
end)

test("old pending invitations are removed with reason 'expired' and cannot be accepted", function()
  sf.plugins.load("expiring-invitations", { maxAgeSeconds = 0 })
  local reasons = {}
  sf.on("participant.removed", function(ev) reasons[#reasons + 1] = ev.reason end)
  local c, s = setup()
  local bc = sf.as("bob@example.com"):container("iCloud.test")
  local ms = bc:fetchShareMetadata{ s.url }   -- an operation finishes: the sweep runs
  expect.eq(reasons[1], "expired")
  expect.eq(#c.privateCloudDatabase:fetchRecord(s.recordID).participants, 1, "only the owner is left")
  local shares, err = bc:acceptShares{ ms[s.url] }
  expect.eq(#shares, 0)
  expect.code(select(2, next(err.partialErrors)), "permissionFailure")
end)

test("config bounds are checked", function()
  expect.raises(function() sf.plugins.load("expiring-invitations", { maxAgeSeconds = -5 }) end,
    "config key 'maxAgeSeconds' must be at least 0, got number %-5")
end)

test("an expired invitation is refused at accept even before the sweep has run", function()
  local _, s = setup()
  local bc = sf.as("bob@example.com"):container("iCloud.test")
  -- Read while invitations live a week: nothing is swept.
  local ms = bc:fetchShareMetadata{ s.url }
  sf.plugins.load("expiring-invitations", { maxAgeSeconds = 0 })
  local shares, err = bc:acceptShares{ ms[s.url] }
  expect.eq(#shares, 0)
  expect.denied(err, "expiring%-invitations/accept")
  expect.denied(err, "the invitation expired %(older than 0 seconds%)")
end)

test("an invitation lives exactly maxAgeSeconds: the test clock moves a week on, no sleeping", function()
  test.clock.set("2026-01-05T09:00:00Z")
  sf.plugins.load("expiring-invitations", { maxAgeSeconds = 7 * 24 * 3600 })
  local _, s = setup()
  local bc = sf.as("bob@example.com"):container("iCloud.test")
  test.clock.advance(7 * 24 * 3600 - 60)       -- a minute short of a week: still good
  local ms = bc:fetchShareMetadata{ s.url }
  expect.eq(ms[s.url].participantStatus, "pending")
  expect.eq(os.date("!%Y-%m-%d %H:%M", os.time()), "2026-01-12 08:59", "os.time and os.date follow the clock")
  test.clock.advance(120)                       -- a minute past: refused, then swept
  local shares, err = bc:acceptShares{ ms[s.url] }
  expect.eq(#shares, 0)
  expect.denied(err, "the invitation expired")
end)
