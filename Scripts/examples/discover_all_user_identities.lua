-- The CKDiscoverAllUserIdentitiesOperation sample, ported: find discoverable users among contacts.
local sf = require("shareflow")
local me = sf.accounts.create{ email = "me@example.com" }
sf.accounts.create{ email = "ana@example.com", name = { given = "Ana" }, discoverable = true }
sf.accounts.create{ email = "ben@example.com", phone = "+44 20 7946 0958", name = { given = "Ben" }, discoverable = true }
sf.accounts.create{ email = "private@example.com", name = { given = "Pat" }, discoverable = false }
me:addContacts{ { email = "ana@example.com", contactIdentifier = "contact-ana" },
                { phone = "+442079460958", contactIdentifier = "contact-ben" },
                { email = "private@example.com", contactIdentifier = "contact-pat" } }
local container = sf.as("me@example.com"):container("iCloud.com.example.app")

local function fetchUserIdentities(completion)
  local identities = {}
  -- Discover every user in the contacts who opted in to being discoverable.
  local operation = sf.DiscoverAllUserIdentitiesOperation()
  -- Cache the identities as ShareFlow discovers them.
  operation.userIdentityDiscoveredBlock = function(userIdentity)
    identities[#identities + 1] = userIdentity
  end
  operation.discoverAllUserIdentitiesCompletionBlock = function(err)
    if err then completion(nil, err) else completion(identities) end
  end
  operation.qualityOfService = "userInitiated"
  container:add(operation)
end

fetchUserIdentities(function(identities, err)
  assert(not err, tostring(err))
  for _, identity in ipairs(identities) do
    print(identity, "contact:", identity.contactIdentifiers[1])
  end
end)
container:waitUntilAllOperationsAreFinished()
