-- CKShare.Participant in practice: roles, permissions and statuses as a share lives.
local sf = require("shareflow")
sf.accounts.create{ email = "owner@example.com" }
sf.accounts.create{ email = "writer@example.com" }
sf.accounts.create{ email = "reader@example.com" }
local c = sf.as("owner@example.com"):container("iCloud.com.example.app")
local db = c.privateCloudDatabase
local zone = db:saveZone("Docs")
local doc = sf.Record{ recordType = "Doc", recordName = "plan", zone = zone, fields = { text = "v1" } }
local share = sf.Share{ rootRecord = doc, title = "Plan" }
local people = c:fetchShareParticipants{ { emailAddress = "writer@example.com" }, { emailAddress = "reader@example.com" } }
people[1].permission = "readWrite"
share:addParticipant(people[1]); share:addParticipant(people[2])
assert(not select(2, db:modifyRecords{ save = { doc, share } }))

local function show(label)
  print(label)
  for _, p in ipairs(db:fetchRecord(share.recordID).participants) do
    print(string.format("  %-20s %-12s %-10s %s", p.userIdentity.lookupInfo.emailAddress, p.role, p.permission, p.acceptanceStatus))
  end
end
show("after inviting:")
for _, who in ipairs{ "writer@example.com", "reader@example.com" } do
  local pc = sf.as(who):container("iCloud.com.example.app")
  pc:acceptShares{ pc:fetchShareMetadata{ share.url }[share.url] }
end
show("after both accept:")
-- Making the share public removes pending participants (none left here) and keeps the accepted ones.
share = db:fetchRecord(share.recordID)
share.publicPermission = "readOnly"
db:modifyRecords{ save = { share } }
show("after publicPermission = readOnly:")
