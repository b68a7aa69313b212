-- The CKFetchShareParticipantsOperation sample, ported: turn lookup infos into participants.
local sf = require("shareflow")
sf.accounts.create{ email = "owner@example.com" }
sf.accounts.create{ email = "bob@example.com", phone = "+1 415 555 0101" }

local container = sf.as("owner@example.com"):container("iCloud.com.example.app")

local function fetchParticipants(lookupInfos, completion)
  local participants = {}
  -- Create the operation using the lookup objects that the caller provides.
  local operation = sf.FetchShareParticipantsOperation{ userIdentityLookupInfos = lookupInfos }
  -- Collect the participants as ShareFlow generates them.
  operation.shareParticipantFetchedBlock = function(participant)
    participants[#participants + 1] = participant
  end
  -- If the operation fails, return the error to the caller; otherwise the participants.
  operation.fetchShareParticipantsCompletionBlock = function(err)
    if err then completion(nil, err) else completion(participants) end
  end
  -- Set an appropriate QoS and add the operation to the container's queue.
  operation.qualityOfService = "userInitiated"
  container:add(operation)
end

fetchParticipants({ sf.LookupInfo{ emailAddress = "bob@example.com" }, sf.LookupInfo{ phoneNumber = "+14155550101" },
                    sf.LookupInfo{ emailAddress = "nobody@example.com" } },
  function(participants, err)
    assert(not err, tostring(err))
    for _, p in ipairs(participants) do print(p) end
  end)
container:waitUntilAllOperationsAreFinished()
