-- After the kill: every token the writer printed still reads (never expired, never ahead of
-- the store), and following the feed from it gives exactly what changed after it. Prints
-- "checked=N broken=M"; each broken case on stderr.
local sf = require("shareflow")
local zones = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/zones.lua")
local c = sf.as("alice@example.com"):container("iCloud.crash")
local db = c.privateCloudDatabase
local sdb = sf.as("bob@example.com"):container("iCloud.crash").sharedCloudDatabase
local zone = zones.named(db, "Log")

-- Everything there is now, by name.
local now = {}
local function follow(database, since)
  local seen, gone, token = {}, {}, since
  repeat
    local page, err = database:recordZoneChanges{ zoneID = zone, since = token }
    if not page then return nil, err end
    for _, r in ipairs(page.modifications) do seen[r.recordID.recordName] = true; gone[r.recordID.recordName] = nil end
    for _, d in ipairs(page.deletions) do gone[d.recordID.recordName] = true; seen[d.recordID.recordName] = nil end
    token = page.changeToken
  until not page.moreComing
  return seen, gone, token
end
local live = follow(db, nil)
for name in pairs(live) do if name:match("^e") then now[name] = true end end
-- The feed's live set is the store's: every record it names is there, and nothing else is.
local stored = 0
for name in pairs(now) do
  stored = stored + 1
  assert(db:fetchRecord(sf.RecordID{ recordName = name, zoneID = zone }), name .. " is in the feed but not in the store")
end
local held, cursor = 0, nil
repeat
  local page = assert(db:query{ recordType = "Entry", zoneID = zone, cursor = cursor })
  held = held + #page
  cursor = page.cursor
until not cursor
assert(held == stored, ("the feed names %d records, the zone holds %d"):format(stored, held))

local checked, broken = 0, 0
local function fail(message) broken = broken + 1; io.stderr:write(message, "\n") end
for line in io.lines(arg[1]) do
  local step, mine, bobs = line:match("^(%d+) (%S+) (%S+)$")
  if step then
    step = tonumber(step)
    for _, case in ipairs{ { "alice", db, mine }, { "bob", sdb, bobs } } do
      local name, d, t = case[1], case[2], case[3]
      local seen, gone = follow(d, t)
      if not seen then
        fail(("%s's token after step %d no longer reads: %s"):format(name, step, tostring(gone)))
      else
        -- What changed after the step: records of later steps (and deletions of earlier ones).
        for rec in pairs(now) do
          local s = tonumber(rec:match("^e(%d+)_"))
          if s > step and not seen[rec] then fail(("%s: %s (step %d) missing after step %d's token"):format(name, rec, s, step)) end
          if s <= step and seen[rec] then fail(("%s: %s (step %d) given again after step %d's token"):format(name, rec, s, step)) end
        end
        for rec in pairs(seen) do
          if rec:match("^e") and not now[rec] then fail(("%s: %s given as live but it is gone"):format(name, rec)) end
        end
        -- Deleted after the step (each step deletes the first record of three steps before).
        for s = math.max(1, step - 2), step do
          local rec = ("e%d_1"):format(s)
          if not now[rec] and not gone[rec] then fail(("%s: %s's deletion missing after step %d's token"):format(name, rec, step)) end
        end
      end
      checked = checked + 1
    end
  end
end
print(("checked=%d broken=%d"):format(checked, broken))
