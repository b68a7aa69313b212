-- What the change-log fixtures share: `local zones = dofile(<this folder> .. "/zones.lua")`
-- (`shareflow run` puts no script's folder on package.path). Not a script of its own.
local sf = require("shareflow")
local zones = {}

--- Alice's new zone `name` in `container`, shared whole with Bob, who accepts: both feeds
--- (hers, his) then follow it. Both accounts exist already.
function zones.shareWithBob(container, name)
  local c = sf.as("alice@example.com"):container(container)
  local db = c.privateCloudDatabase
  local zone = assert(db:saveZone(name))
  local share = sf.Share{ zoneID = zone.zoneID }
  share:addParticipant(c:fetchShareParticipants{ { emailAddress = "bob@example.com" } }[1])
  local _, err = db:modifyRecords{ save = { share } }
  assert(not err, tostring(err))
  local bc = sf.as("bob@example.com"):container(container)
  _, err = bc:acceptShares{ bc:fetchShareMetadata{ share.url }[share.url] }
  assert(not err, tostring(err))
end

--- The ID of `db`'s zone `name`, made by the setup script: the writers and readers run as
--- processes of their own, after it.
function zones.named(db, name)
  local zone
  for _, z in ipairs(assert(db:fetchAllRecordZones())) do
    if z.zoneID.zoneName == name then zone = z.zoneID end
  end
  return assert(zone, "no zone " .. name)
end

return zones
