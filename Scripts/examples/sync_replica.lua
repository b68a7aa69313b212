-- Keep a local replica of what is shared with you, as a sync app does (SPEC §14): follow your
-- shared database's feed to learn which zones you have, and each zone's feed from its token to
-- learn what changed, what was deleted, and what left your view.
--
--   shareflow run --store STORE Scripts/examples/sync_replica.lua
--
-- On an empty store it first makes Alice's albums, shares one with Bob, and changes it while
-- Bob's replica follows.
local sf = require("shareflow")
local C = "iCloud.com.example.photos"

if sf.accounts.count() == 0 then
  sf.accounts.create{ email = "alice@example.com" }
  sf.accounts.create{ email = "bob@example.com" }
end
local alice = sf.as("alice@example.com"):container(C)
local bob = sf.as("bob@example.com"):container(C)
local adb = alice.privateCloudDatabase
local zone = adb:saveZone("Albums")

-- Bob's replica: zones by "name/owner", each with its token and records by name.
local replica = { token = nil, zones = {} }

local function key(zoneID) return zoneID.zoneName .. "/" .. zoneID.ownerName end

local function sync(db)
  repeat -- the database feed: zones come and go
    local page = assert(db:databaseChanges{ since = replica.token })
    for _, zoneID in ipairs(page.modifications) do
      replica.zones[key(zoneID)] = replica.zones[key(zoneID)] or { zoneID = zoneID, records = {} }
    end
    for _, gone in ipairs(page.deletions) do replica.zones[key(gone.zoneID)] = nil end
    replica.token = page.changeToken
  until not page.moreComing
  for _, z in pairs(replica.zones) do
    repeat -- each zone's feed: records changed or deleted since its token
      local page = assert(db:recordZoneChanges{ zoneID = z.zoneID, since = z.token, resultsLimit = 50 })
      for _, r in ipairs(page.modifications) do z.records[r.recordName] = r end
      for _, d in ipairs(page.deletions) do z.records[d.recordID.recordName] = nil end
      z.token = page.changeToken
    until not page.moreComing
  end
end

local function show(label)
  local lines = {}
  for k, z in pairs(replica.zones) do
    local names = {}
    for name, r in pairs(z.records) do
      names[#names + 1] = r.recordType == "cloudkit.share" and "(share)" or (name .. "=" .. tostring(r.fields.title))
    end
    table.sort(names)
    lines[#lines + 1] = k:match("^[^/]*") .. ": " .. table.concat(names, ", ")
  end
  table.sort(lines)
  print(label .. ": " .. (#lines == 0 and "no shared zones" or table.concat(lines, "; ")))
end

-- Alice's album, shared with Bob; he has not accepted yet.
local album = sf.Record{ recordType = "Album", recordName = "summer", zone = zone, fields = { title = "Summer" } }
local photo = sf.Record{ recordType = "Photo", recordName = "beach", zone = zone, parent = album, fields = { title = "Beach" } }
local private = sf.Record{ recordType = "Photo", recordName = "draft", zone = zone, fields = { title = "Draft" } }
local share = sf.Share{ rootRecord = album, title = "Summer" }
share:addParticipant(alice:fetchShareParticipants{ "bob@example.com" }[1])
assert(not select(2, adb:modifyRecords{ save = { album, photo, private, share } }))
sync(bob.sharedCloudDatabase)
show("before accepting")

bob:acceptShares{ bob:fetchShareMetadata{ share.url }[share.url] }
sync(bob.sharedCloudDatabase)
show("accepted")

-- Alice renames the photo, adds one, and moves her draft into the album.
photo = assert(adb:fetchRecord(photo.recordID))
photo.fields.title = "Beach at noon"
private = assert(adb:fetchRecord(private.recordID))
private.parent = album
local sunset = sf.Record{ recordType = "Photo", recordName = "sunset", zone = zone, parent = album, fields = { title = "Sunset" } }
assert(not select(2, adb:modifyRecords{ save = { photo, private, sunset } }))
sync(bob.sharedCloudDatabase)
show("after Alice's edits")

-- She deletes one photo, then takes the draft back out of the album.
assert(not select(2, adb:modifyRecords{ delete = { sunset.recordID } }))
private = assert(adb:fetchRecord(private.recordID))
private.parent = nil
assert(not select(2, adb:modifyRecords{ save = { private } }))
sync(bob.sharedCloudDatabase)
show("after the delete and the move out")

-- Asked again with the same tokens: nothing new, the same token.
local z = replica.zones[key(zone.zoneID)]
local again = assert(bob.sharedCloudDatabase:recordZoneChanges{ zoneID = z.zoneID, since = z.token })
print(("asked again: %d changed, %d deleted, same token: %s"):format(#again.modifications, #again.deletions,
  tostring(again.changeToken == z.token)))

-- Alice ends the share: the zone leaves Bob's shared database.
assert(not select(2, adb:modifyRecords{ delete = { share.recordID } }))
sync(bob.sharedCloudDatabase)
show("after the share ended")
