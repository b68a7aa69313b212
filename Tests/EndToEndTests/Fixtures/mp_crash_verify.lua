-- After writers were killed: every token line of the files arg[1..] (Alice's, Bob's) still
-- reads; one record is then saved, and following from every token gives it and ends where a
-- fetch from the start ends. Prints "checked=N broken=M"; each broken case on stderr.
local sf = require("shareflow")
local zones = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/zones.lua")
local adb = sf.as("alice@example.com"):container("iCloud.test").privateCloudDatabase
local bdb = sf.as("bob@example.com"):container("iCloud.test").sharedCloudDatabase
local zone = zones.named(adb, "Mix")
local checked, broken = 0, 0
local function fail(m) broken = broken + 1; io.stderr:write(m, "\n") end
local function follow(db, token)
  local seen = {}
  repeat
    local page, err = db:recordZoneChanges{ zoneID = zone, since = token, resultsLimit = 100 }
    if not page then return nil, err end
    for _, r in ipairs(page.modifications) do seen[r.recordName] = true end
    token = page.changeToken
  until not page.moreComing
  return seen, token
end
local tokens = {}
for i = 1, #arg do
  for line in io.lines(arg[i]) do
    local a, b = line:match("^(%S+) (%S+)$")
    if a then tokens[#tokens + 1] = { a, b } end
  end
end
for _, t in ipairs(tokens) do
  for k, db in ipairs{ adb, bdb } do
    local seen, err = follow(db, t[k])
    if not seen then fail(("a token from before the kill no longer reads: %s"):format(tostring(err))) end
  end
end
local afterKill = sf.Record{ recordType = "Item", recordName = "after-kill", zoneID = zone, fields = { w = "v" } }
local _, err = adb:modifyRecords{ save = { afterKill },
  savePolicy = "allKeys" }
assert(not err, tostring(err))
local ends = { select(2, follow(adb, nil)), select(2, follow(bdb, nil)) }
for _, t in ipairs(tokens) do
  for k, db in ipairs{ adb, bdb } do
    local seen, token = follow(db, t[k])
    if not seen then fail("a token no longer reads after a save")
    else
      if not seen["after-kill"] then
        fail(("%s: the record saved after the kill is missing from an earlier token"):format(k == 1 and "alice" or "bob"))
      end
      if token ~= ends[k] then fail("following an earlier token does not end where a fetch from the start does") end
    end
    checked = checked + 1
  end
end
print(("checked=%d broken=%d"):format(checked, broken))
