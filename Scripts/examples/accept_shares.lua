-- The CKAcceptSharesOperation sample, ported: accept a share in its own container.
local sf = require("shareflow")
sf.accounts.create{ email = "owner@example.com" }
sf.accounts.create{ email = "bob@example.com" }
local owner = sf.as("owner@example.com"):container("iCloud.com.example.app")
local zone = owner.privateCloudDatabase:saveZone("Albums")
local album = sf.Record{ recordType = "Album", recordName = "summer", zone = zone, fields = { title = "Summer" } }
local share = sf.Share{ rootRecord = album, title = "Summer album" }
share:addParticipant(owner:fetchShareParticipants{ { emailAddress = "bob@example.com" } }[1])
assert(not select(2, owner.privateCloudDatabase:modifyRecords{ save = { album, share } }))

local bob = sf.as("bob@example.com")
-- What the app receives when Bob opens the link.
local metadata = bob:container("iCloud.com.example.app"):fetchShareMetadata{ share.url }[share.url]

local function acceptShare(md, completion)
  -- A container for the metadata's container, so the operation runs in the right context.
  local container = bob:container(md.containerIdentifier)
  local operation = sf.AcceptSharesOperation{ shareMetadatas = { md } }
  local rootRecordID
  -- If accepted, keep the root record's ID; the completion handles errors.
  operation.perShareCompletionBlock = function(m, acceptedShare, err)
    if acceptedShare and not err then rootRecordID = m.hierarchicalRootRecordID end
  end
  operation.acceptSharesCompletionBlock = function(err)
    if err then completion(nil, err) else completion(rootRecordID) end
  end
  operation.qualityOfService = "utility"
  container:add(operation)
  container:waitUntilAllOperationsAreFinished()
end

acceptShare(metadata, function(recordID, err)
  assert(not err, tostring(err))
  print("accepted; root record:", recordID)
  local root = bob:container("iCloud.com.example.app").sharedCloudDatabase:fetchRecord(recordID)
  print("fetched from the shared database:", root)
end)
