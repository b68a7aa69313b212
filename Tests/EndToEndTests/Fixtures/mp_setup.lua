-- Alice's zone "Mix" in iCloud.test, shared whole with Bob, who has accepted: several
-- processes then write it at once (ChangeLogMultiProcessTests).
local sf = require("shareflow")
local c = sf.as("alice@example.com"):container("iCloud.test")
local db = c.privateCloudDatabase
local zone = assert(db:saveZone("Mix"))
local share = sf.Share{ zoneID = zone.zoneID }
share:addParticipant(c:fetchShareParticipants{ { emailAddress = "bob@example.com" } }[1])
local _, err = db:modifyRecords{ save = { share } }
assert(not err, tostring(err))
local bc = sf.as("bob@example.com"):container("iCloud.test")
_, err = bc:acceptShares{ bc:fetchShareMetadata{ share.url }[share.url] }
assert(not err, tostring(err))
