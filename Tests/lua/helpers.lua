-- What the suites in Tests/lua share: `local helpers = require("helpers")` (`shareflow test`
-- finds modules in the test file's folder). Not a test file: its name does not end in _test.
local sf = require("shareflow")
local helpers = {}

--- The container the suites' worlds live in.
helpers.container = "iCloud.com.example.trips"

--- Alice owns a Trips zone in helpers.container, with a trip and a day under it (not saved);
--- Bob and Carol have accounts. w.c, w.bc, w.cc: their containers; w.db: Alice's private database.
function helpers.world()
  local C = helpers.container
  local w = {}
  w.alice = sf.accounts.create{ email = "alice@example.com" }
  sf.accounts.create{ email = "bob@example.com" }
  sf.accounts.create{ email = "carol@example.com" }
  w.c = sf.as("alice@example.com"):container(C)
  w.bc = sf.as("bob@example.com"):container(C)
  w.cc = sf.as("carol@example.com"):container(C)
  w.db = w.c.privateCloudDatabase
  w.zone = w.db:saveZone("Trips")
  w.trip = sf.Record{ recordType = "Trip", recordName = "lisbon", zone = w.zone, fields = { title = "Lisbon" } }
  w.day = sf.Record{ recordType = "Day", recordName = "day1", zone = w.zone, parent = w.trip }
  return w
end

--- The error a modify call reported for `record` (partialErrors are keyed "name (zone/owner)").
function helpers.errorFor(err, record)
  for k, e in pairs(err.partialErrors) do
    if k:sub(1, #record.recordName + 2) == record.recordName .. " (" then return e end
  end
end

--- Expects the one item error of `err` to be `code`, its message citing rule `rule` (as
--- "R5"): how a call refuses an item that breaks a sharing rule. Returns the error.
function helpers.expectBrokenRule(err, code, rule, what)
  local e = expect.code(select(2, next(err.partialErrors)), code, what)
  expect.contains(e.message, rule)
  return e
end

--- `who` (an address, or a lookup table) as container `c` finds them: a participant to add.
function helpers.participant(c, who)
  local ps, err = c:fetchShareParticipants{ who }
  assert(ps[1], tostring(err))
  return ps[1]
end

--- Adds `who` to `share` as w.c finds them, with `permission` (readOnly by default).
function helpers.invite(w, share, who, permission)
  local p = helpers.participant(w.c, who)
  p.permission = permission or "readOnly"
  share:addParticipant(p)
end

--- Saves w.trip, w.day and a share of w.trip with `people` on it (with `permission`): the
--- share, and what the save returned.
function helpers.shared(w, people, permission)
  local share = sf.Share{ rootRecord = w.trip, title = "Lisbon trip" }
  for _, who in ipairs(people or {}) do helpers.invite(w, share, who, permission) end
  local saved, err = w.db:modifyRecords{ save = { w.trip, w.day, share } }
  assert(err == nil, tostring(err))
  return share, saved
end

--- Container `c` fetches the metadata of share `url` and accepts it: the share accepted.
function helpers.accept(c, url)
  local ms = assert(c:fetchShareMetadata{ url })
  local shares, err = c:acceptShares{ ms[url] }
  assert(shares[1], tostring(err))
  return shares[1]
end

return helpers
