-- The CKFetchShareMetadataOperation sample, ported: fetch metadata for share URLs, with the root record.
local sf = require("shareflow")
sf.accounts.create{ email = "owner@example.com" }
sf.accounts.create{ email = "bob@example.com" }
local owner = sf.as("owner@example.com"):container("iCloud.com.example.app")
local zone = owner.privateCloudDatabase:saveZone("Lists")
local list = sf.Record{ recordType = "List", recordName = "groceries", zone = zone, fields = { title = "Groceries", items = 12 } }
local share = sf.Share{ rootRecord = list, title = "Groceries" }
share:addParticipant(owner:fetchShareParticipants{ { emailAddress = "bob@example.com" } }[1])
assert(not select(2, owner.privateCloudDatabase:modifyRecords{ save = { list, share } }))

local container = sf.as("bob@example.com"):container("iCloud.com.example.app")

local function fetchShareMetadata(shareURLs, completion)
  local cache = {}
  -- Create the fetch operation using the share URLs that the caller provides.
  local operation = sf.FetchShareMetadataOperation{ shareURLs = shareURLs }
  -- To reduce requests, include the root record in the metadata.
  operation.shouldFetchRootRecord = true
  -- Cache the metadata by URL; errors are handled in the completion.
  operation.perShareMetadataBlock = function(url, metadata, _)
    if metadata then cache[url] = metadata end
  end
  operation.fetchShareMetadataCompletionBlock = function(err)
    if err then completion(cache, err) else completion(cache) end
  end
  operation.qualityOfService = "userInitiated"
  container:add(operation)
end

fetchShareMetadata({ share.url, "https://shareflow.invalid/share/unknown" }, function(cache, err)
  for url, metadata in pairs(cache) do
    print(metadata)
    print("  root record:", metadata.rootRecord, "from", url == share.url and "the share's URL" or url)
  end
  if err then print("partial failure:", err) end
end)
container:waitUntilAllOperationsAreFinished()
