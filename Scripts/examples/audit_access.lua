-- Who can see what in a container: every share with everyone on it, whatever their status
-- (sf.admin.shares, O8), and the records each share gives access to (a query as the owner, O7).
--
--   shareflow run --store STORE Scripts/examples/audit_access.lua [CONTAINER]
--
-- On an empty store it first makes a small example to audit.
local sf = require("shareflow")
local C = arg[1] or "iCloud.com.example.audit"
-- The record types your app keeps in shared hierarchies (a query names its type).
local TYPES = { "Project", "Task", "Note" }

if sf.accounts.count() == 0 then
  for _, who in ipairs{ "owner@example.com", "editor@example.com", "viewer@example.com", "guest@example.com" } do
    sf.accounts.create{ email = who }
  end
  local c = sf.as("owner@example.com"):container(C)
  local db = c.privateCloudDatabase
  local zone = db:saveZone("Projects")
  local plan = sf.Record{ recordType = "Project", recordName = "launch", zone = zone, fields = { name = "Launch" } }
  local tasks = {}
  for i = 1, 3 do
    tasks[i] = sf.Record{ recordType = "Task", recordName = "task" .. i, zone = zone, parent = plan, fields = { n = i } }
  end
  local share = sf.Share{ rootRecord = plan, title = "Launch plan" }
  local people = c:fetchShareParticipants{ "editor@example.com", "viewer@example.com", "nobody@example.com" }
  people[1].permission = "readWrite"
  for _, p in ipairs(people) do share:addParticipant(p) end
  assert(not select(2, db:modifyRecords{ save = { plan, tasks[1], tasks[2], tasks[3], share } }))
  local ec = sf.as("editor@example.com"):container(C)
  ec:acceptShares{ ec:fetchShareMetadata{ share.url }[share.url] }
  local notes = db:saveZone("Notes")
  local note = sf.Record{ recordType = "Note", recordName = "memo", zone = notes, fields = { text = "hi" } }
  local public = sf.Share{ rootRecord = note, title = "Memo", publicPermission = "readOnly" }
  assert(not select(2, db:modifyRecords{ save = { note, public } }))
  local gc = sf.as("guest@example.com"):container(C)
  gc:acceptShares{ gc:fetchShareMetadata{ public.url }[public.url] }
end

-- The records a share covers, as its owner sees them: the root and its descendants.
local function covered(share)
  local owner = sf.as(share.owner.userRecordID):container(share.container).privateCloudDatabase
  if not share.rootRecordID then return { "every record of zone " .. share.recordID.zoneID.zoneName } end
  local root = owner:fetchRecord(share.rootRecordID)
  if not root then return {} end
  local names, frontier = { root.recordType .. " " .. root.recordName }, { root }
  while #frontier > 0 do
    local parent = table.remove(frontier)
    for _, type in ipairs(TYPES) do
      local children = owner:query{ recordType = type, zoneID = share.recordID.zoneID, sortDescriptors = { "recordName" } }
      for _, r in ipairs(children or {}) do
        if r.parent and r.parent.recordName == parent.recordName then
          names[#names + 1] = r.recordType .. " " .. r.recordName
          frontier[#frontier + 1] = r
        end
      end
    end
  end
  return names
end

local function who(p)
  local info = p.lookupInfo
  return info.emailAddress or info.phoneNumber or info.userRecordID
end

local byPerson = {}
local shares = sf.admin.shares{ container = C }
print(string.format("%d share(s) in %s", #shares, C))
for _, s in ipairs(shares) do
  print(string.format("\n%s — owner %s, public: %s", s.title or s.recordID.recordName, who(s.owner), s.publicPermission))
  print("  records: " .. table.concat(covered(s), ", "))
  for _, p in ipairs(s.participants) do
    local sees = p.acceptanceStatus == "accepted" and p.permission ~= "none"
    print(string.format("  %-22s %-12s %-10s %-9s%s", who(p), p.role, p.permission, p.acceptanceStatus,
                        p.userRecordID and "" or "  (no account yet)"))
    if sees then
      byPerson[who(p)] = byPerson[who(p)] or {}
      table.insert(byPerson[who(p)], string.format("%s (%s)", s.title or s.recordID.recordName, p.permission))
    end
  end
end

print("\nWho can see what now:")
local people = {}
for person in pairs(byPerson) do people[#people + 1] = person end
table.sort(people)
for _, person in ipairs(people) do
  print(string.format("  %-22s %s", person, table.concat(byPerson[person], ", ")))
end
