-- Alice's zone "Log", shared whole with Bob, who has accepted: both feeds (hers, his) follow it.
local sf = require("shareflow")
sf.accounts.create{ email = "alice@example.com" }
sf.accounts.create{ email = "bob@example.com" }
local c = sf.as("alice@example.com"):container("iCloud.crash")
local db = c.privateCloudDatabase
local zone = db:saveZone("Log")
local share = sf.Share{ zoneID = zone.zoneID }
share:addParticipant(c:fetchShareParticipants{ { emailAddress = "bob@example.com" } }[1])
local _, err = db:modifyRecords{ save = { share } }
assert(not err, tostring(err))
local bc = sf.as("bob@example.com"):container("iCloud.crash")
local metadata = bc:fetchShareMetadata{ share.url }[share.url]
_, err = bc:acceptShares{ metadata }
assert(not err, tostring(err))
