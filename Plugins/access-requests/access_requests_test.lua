local sf = require("shareflow")

-- Alice's share taking requests; the accounts asking exist.
local function setup(...)
  sf.accounts.create{ email = "alice@example.com" }
  for _, who in ipairs{ ... } do sf.accounts.create{ email = who } end
  local c = sf.as("alice@example.com"):container("iCloud.test")
  local zone = c.privateCloudDatabase:saveZone("Z")
  local r = sf.Record{ recordType = "Doc", zone = zone }
  local s = sf.Share{ rootRecord = r, title = "doc" }
  s.allowsAccessRequests = true
  assert(select(2, c.privateCloudDatabase:modifyRecords{ save = { r, s } }) == nil)
  return c.privateCloudDatabase, s
end

local function ask(who, url)
  local results, err = sf.as(who):container("iCloud.test"):requestShareAccess{ url }
  return results[url], err and err.partialErrors[url]
end

local function participant(db, share, email)
  for _, p in ipairs(db:fetchRecord(share.recordID).participants) do
    if p.userIdentity.lookupInfo.emailAddress == email then return p end
  end
end

test("colleagues are approved at once with the configured permission", function()
  sf.plugins.load("access-requests", { autoApproveDomains = { "Example.com" }, permission = "readWrite" })
  local db, s = setup("bob@example.com")
  expect.eq(ask("bob@example.com", s.url), true)
  local bob = participant(db, s, "bob@example.com")
  expect.eq(bob.acceptanceStatus, "pending")
  expect.eq(bob.permission, "readWrite")
  expect.eq(bob.isApprovedRequester, true)
  expect.eq(#db:fetchRecord(s.recordID).requesters, 0)
end)

test("throwaway domains are refused, naming the plugin", function()
  sf.plugins.load("access-requests", { denyDomains = { "mailinator.com" } })
  local db, s = setup("eve@mailinator.com")
  local ok, err = ask("eve@mailinator.com", s.url)
  expect.eq(ok, nil)
  expect.code(err, "permissionFailure")
  expect.contains(err.message, "access-requests/request")
  expect.eq(#db:fetchRecord(s.recordID).requesters, 0)
end)

test("everyone else waits for the owner, who approves or denies by hand", function()
  sf.plugins.load("access-requests", { autoApproveDomains = { "example.com" } })
  local db, s = setup("carol@elsewhere.org")
  expect.eq(ask("carol@elsewhere.org", s.url), true)
  local share = db:fetchRecord(s.recordID)
  expect.eq(#share.requesters, 1)
  share:approveRequesters(share.requesters)
  assert(select(2, db:modifyRecords{ save = { share } }) == nil)
  expect.eq(participant(db, s, "carol@elsewhere.org").permission, "readOnly")
end)

test("limitApprovedRequesters keeps approved requesters read-only; a bad permission is refused", function()
  sf.plugins.load("access-requests", { limitApprovedRequesters = true })
  local db, s = setup("carol@elsewhere.org")
  assert(ask("carol@elsewhere.org", s.url))
  local share = db:fetchRecord(s.recordID)
  share:approveRequesters(share.requesters, { permission = "readWrite" })
  local _, err = db:modifyRecords{ save = { share } }
  expect.contains(tostring(err), "approved requesters are added read-only")
  expect.raises(function() sf.plugins.load("access-requests", { permission = "owner" }) end, "permission must be")
end)

test.cases("throwaway domains are refused", { "eve@mailinator.test", "mallory@tempmail.test" }, function(email)
  sf.plugins.load("access-requests", { denyDomains = { "mailinator.test", "tempmail.test" } })
  local _, s = setup(email)
  local ok, err = ask(email, s.url)
  expect.eq(ok, nil)
  expect.denied(err, "requests from %a+%.test are not accepted")
end)
