-- Reviews the open access requests on one owner's shares (SPEC §17): approves requesters from a
-- trusted domain, denies requests older than a number of days, leaves the rest for the owner,
-- and prints a summary.
--
--   shareflow run --store STORE Scripts/examples/review_access_requests.lua [OWNER] [DOMAIN] [STALE_DAYS]
--
-- On an empty store it first makes an example: two shares taking requests and four requesters.
local sf = require("shareflow")
local OWNER = arg[1] or "owner@example.com"
local DOMAIN = (arg[2] or "example.com"):lower()
local STALE_DAYS = tonumber(arg[3] or "14")
local C = "iCloud.com.example.review"

if sf.accounts.count() == 0 then
  for _, who in ipairs{ OWNER, "colleague@example.com", "friend@elsewhere.org", "intern@example.com", "stranger@elsewhere.org" } do
    sf.accounts.create{ email = who }
  end
  local db = sf.as(OWNER):container(C).privateCloudDatabase
  local zone = db:saveZone("Plans")
  for _, name in ipairs{ "Roadmap", "Offsite" } do
    local root = sf.Record{ recordType = "Plan", recordName = name:lower(), zone = zone, fields = { name = name } }
    local share = sf.Share{ rootRecord = root, title = name }
    share.allowsAccessRequests = true
    assert(not select(2, db:modifyRecords{ save = { root, share } }))
  end
  local function ask(who, title)
    for _, s in ipairs(sf.admin.shares{ owner = OWNER }) do
      if s.title == title then assert(sf.as(who):container(C):requestShareAccess{ s.url }[s.url]) end
    end
  end
  ask("colleague@example.com", "Roadmap")
  ask("friend@elsewhere.org", "Roadmap")
  ask("intern@example.com", "Offsite")
  ask("stranger@elsewhere.org", "Offsite")
end

local function domainOf(requester)
  local email = requester.participantLookupInfo.emailAddress
  return email and email:match("@([^@]+)$") and email:match("@([^@]+)$"):lower()
end

local approved, denied, waiting = 0, 0, 0
for _, audit in ipairs(sf.admin.shares{ owner = OWNER }) do
  local db = sf.as(OWNER):container(audit.container, { environment = audit.environment }).privateCloudDatabase
  local share = db:fetchRecord(audit.recordID)
  if #share.requesters > 0 then
    local approve, deny = {}, {}
    for _, r in ipairs(share.requesters) do
      local who = r.participantLookupInfo.emailAddress or r.participantLookupInfo.phoneNumber
      if domainOf(r) == DOMAIN then
        approve[#approve + 1] = r
        print(string.format("%-10s approve  %s", share.title, who))
      elseif os.time() - r.requestedAt > STALE_DAYS * 86400 then
        deny[#deny + 1] = r
        print(string.format("%-10s deny     %s (asked %d days ago)", share.title, who, (os.time() - r.requestedAt) // 86400))
      else
        waiting = waiting + 1
        print(string.format("%-10s waiting  %s", share.title, who))
      end
    end
    share:approveRequesters(approve, { permission = "readOnly" })
    share:denyRequesters(deny)
    local _, err = db:modifyRecords{ save = { share } }
    if err then
      print(share.title .. ": not saved: " .. tostring(err))
    else
      approved, denied = approved + #approve, denied + #deny
    end
  end
end
print(string.format("approved %d, denied %d stale, %d left for %s", approved, denied, waiting, OWNER))
