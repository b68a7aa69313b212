-- What the suites in Tests/lua share: `local helpers = require("helpers")` (`shareflow test`
-- finds modules in the test file's folder). Not a test file: its name does not end in _test.
local sf = require("shareflow")
local helpers = {}

--- The error a modify call reported for `record` (partialErrors are keyed "name (zone/owner)").
function helpers.errorFor(err, record)
  for k, e in pairs(err.partialErrors) do
    if k:sub(1, #record.recordName + 2) == record.recordName .. " (" then return e end
  end
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

return helpers
