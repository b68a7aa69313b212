-- Follows Alice's zone "Mix" by token, as its owner and as Bob (who has it shared), a few
-- entries a page, while other processes write it; once the file arg[1] exists, syncs a last
-- time and compares each replica with a fetch from the start and with the zone's records
-- (name and tag). With arg[2] "expiring", a token the log was pruned past starts its replica
-- again from the start. Prints "rounds=N mismatches=M expired=E"; each mismatch on stderr.
local sf = require("shareflow")
local zones = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/zones.lua")
local adb = sf.as("alice@example.com"):container("iCloud.test").privateCloudDatabase
local bdb = sf.as("bob@example.com"):container("iCloud.test").sharedCloudDatabase
local zone = zones.named(adb, "Mix")
local mismatches = 0
local function fail(m) mismatches = mismatches + 1; io.stderr:write(m, "\n") end
local expiring, expired = arg[2] == "expiring", 0
local function sync(db, replica, limit)
  repeat
    local page, err = db:recordZoneChanges{ zoneID = zone, since = replica.token, resultsLimit = limit }
    if not page and expiring and err.code == "changeTokenExpired" then
      -- The log was pruned past the token (store compact in another process): from the start.
      expired = expired + 1
      replica.records, replica.token = {}, nil
      page = assert(db:recordZoneChanges{ zoneID = zone, resultsLimit = limit })
    end
    assert(page, tostring(err))
    for _, r in ipairs(page.modifications) do replica.records[r.recordName] = r.recordChangeTag end
    for _, d in ipairs(page.deletions) do replica.records[d.recordID.recordName] = nil end
    if replica.token and page.changeToken ~= replica.token and #page.modifications + #page.deletions == 0 then
      fail("a page with nothing in it moved the token")
    end
    replica.token = page.changeToken
  until not page.moreComing
end
local function done() local f = io.open(arg[1]); if f then f:close(); return true end; return false end
local owner, viewer = { records = {} }, { records = {} }
local rounds = 0
repeat
  local finished = done()
  sync(adb, owner, math.random(1, 3))
  sync(bdb, viewer, math.random(1, 3))
  rounds = rounds + 1
until finished
local function compare(label, replica, db)
  local fresh = { records = {} }
  sync(db, fresh, 200)
  for n, tag in pairs(fresh.records) do
    if replica.records[n] ~= tag then
      fail(("%s: %s is %s in a fetch from the start, %s in the replica"):format(label, n, tag, tostring(replica.records[n])))
    end
  end
  for n in pairs(replica.records) do
    if not fresh.records[n] then fail(("%s: %s is in the replica, not in a fetch from the start"):format(label, n)) end
  end
  if fresh.token ~= replica.token then fail(label .. ": the replica's token is not the fresh fetch's") end
  if db:currentChangeToken(zone) ~= fresh.token then fail(label .. ": currentChangeToken is not where a fetch from the start ends") end
  local again = assert(db:recordZoneChanges{ zoneID = zone, since = replica.token })
  if #again.modifications + #again.deletions > 0 then fail(label .. ": the replica's token gives more") end
  return fresh
end
local fresh = compare("owner", owner, adb)
compare("viewer", viewer, bdb)
-- The store's records are the owner's feed (the share's record too).
local held, cursor = 0, nil
repeat
  local page = assert(adb:query{ recordType = "Item", zoneID = zone, cursor = cursor })
  for _, r in ipairs(page) do
    held = held + 1
    if fresh.records[r.recordName] ~= r.recordChangeTag then fail("the store's " .. r.recordName .. " is not the feed's") end
  end
  cursor = page.cursor
until not cursor
local fed = 0
for n in pairs(fresh.records) do if n:match("^n%d$") or n:match("^h%d+$") then fed = fed + 1 end end
if fed ~= held then fail(("the feed has %d items, the zone %d"):format(fed, held)) end
print(("rounds=%d mismatches=%d expired=%d"):format(rounds, mismatches, expired))
