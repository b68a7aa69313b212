local sf = require("shareflow")

local function invite(owner, guests)
  local c = sf.as(owner):container("iCloud.test")
  local zone = c.privateCloudDatabase:saveZone("Z")
  local r = sf.Record{ recordType = "Doc", zone = zone }
  local s = sf.Share{ rootRecord = r, title = "doc" }
  for _, g in ipairs(guests) do s:addParticipant(c:fetchShareParticipants{ g }[1]) end
  local _, err = c.privateCloudDatabase:modifyRecords{ save = { r, s } }
  return s, err
end

-- The item that failed a modify call (the others fail with batchRequestFailed: R22).
local function culprit(err)
  for _, e in pairs(err.partialErrors) do
    if e.code ~= "batchRequestFailed" then return e end
  end
end

local function accept(who, url)
  local c = sf.as(who):container("iCloud.test")
  local shares, err = c:acceptShares{ c:fetchShareMetadata{ url }[url] }
  return shares[1], err and select(2, next(err.partialErrors))
end

test("members of an allowed domain accept", function()
  sf.accounts.create{ email = "owner@example.com" }
  sf.accounts.create{ email = "bob@example.com" }
  local s = invite("owner@example.com", { "bob@example.com" })
  expect.truthy(accept("bob@example.com", s.url))
end)

test("outsiders are denied with the policy's reason, and the decision is logged", function()
  sf.accounts.create{ email = "owner@example.com" }
  sf.accounts.create{ email = "eve@evil.test" }
  local s = invite("owner@example.com", { "eve@evil.test" })
  local share, err = accept("eve@evil.test", s.url)
  expect.eq(share, nil)
  expect.code(err, "permissionFailure")
  expect.contains(err.message, "domain-allowlist/accept")
  expect.contains(err.message, "eve@evil.test has no email in an allowed domain (example.com)")
  local d = sf.decisions{ limit = 1 }[1]
  expect.eq(d.point, "share.accept"); expect.eq(d.allow, false)
  expect.eq(d.policies[1], "domain-allowlist/accept")
end)

test("a second address in the domain is enough", function()
  sf.accounts.create{ email = "owner@example.com" }
  local eve = sf.accounts.create{ email = "eve@evil.test" }
  local s = invite("owner@example.com", { "eve@evil.test" })
  eve:addEmail("eve@example.com")
  expect.truthy(accept("eve@evil.test", s.url))
end)

test("config: other domains, and invitations checked too", function()
  sf.plugins.load("domain-allowlist", { domains = { "corp.test" }, checkInvitations = true })
  sf.accounts.create{ email = "owner@corp.test" }
  sf.accounts.create{ email = "bob@example.com" }
  local _, err = invite("owner@corp.test", { "bob@example.com" })
  local e = culprit(err)
  expect.code(e, "permissionFailure")
  expect.contains(e.message, "bob@example.com is not in an allowed domain (corp.test)")
end)

test("config errors name the plugin, the key and the expected type", function()
  expect.raises(function() sf.plugins.load("domain-allowlist", { domains = "example.com" }) end,
    "plugin 'domain%-allowlist': config key 'domains' must be a list of strings, got string \"example.com\"")
  expect.raises(function() sf.plugins.load("domain-allowlist", { domain = { "x" } }) end, "unknown config key 'domain'")
end)

test("a one-time link is nobody's invitation; whoever claims it meets the accept policy", function()
  sf.plugins.load("domain-allowlist", { domains = { "example.com" }, checkInvitations = true })
  sf.accounts.create{ email = "owner@example.com" }
  sf.accounts.create{ email = "eve@evil.test" }
  local c = sf.as("owner@example.com"):container("iCloud.test")
  local zone = c.privateCloudDatabase:saveZone("Z")
  local r = sf.Record{ recordType = "Doc", zone = zone }
  local s = sf.Share{ rootRecord = r, title = "doc" }
  local guest = sf.OneTimeURLParticipant{}
  s:addParticipant(guest)
  local _, err = c.privateCloudDatabase:modifyRecords{ save = { r, s } }
  expect.eq(err, nil)
  local link = s:oneTimeURL(guest.participantID)
  local share, acceptErr = accept("eve@evil.test", link)
  expect.eq(share, nil)
  expect.contains(acceptErr.message, "domain-allowlist/accept")
end)

test.cases("outsiders are denied whatever their domain", { "eve@evil.test", "mallory@example.org" }, function(email)
  sf.accounts.create{ email = "owner@example.com" }
  sf.accounts.create{ email = email }
  local s = invite("owner@example.com", { email })
  local share, err = accept(email, s.url)
  expect.eq(share, nil)
  expect.denied(err, "has no email in an allowed domain %(example%.com%)")
end)

test("members are allowed: the accept returns no error", function()
  sf.accounts.create{ email = "owner@example.com" }
  sf.accounts.create{ email = "bob@example.com" }
  local s = invite("owner@example.com", { "bob@example.com" })
  local _, err = accept("bob@example.com", s.url)
  expect.allowed(err)
end)
