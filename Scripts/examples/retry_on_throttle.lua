-- An app's retry loop meeting CloudKit's failures on purpose (SPEC §15): fault rules make the
-- engine throttle, lose a connection after commit, fail one item of a batch and expire a change
-- token, as CloudKit does on a bad day, so the retry, back-off and merge code runs before
-- production does.
--
--   shareflow run --store STORE Scripts/examples/retry_on_throttle.lua
local sf = require("shareflow")
local C = "iCloud.com.example.notes"

if sf.accounts.find("alice@example.com") == nil then sf.accounts.create{ email = "alice@example.com" } end
local db = sf.as("alice@example.com"):container(C).privateCloudDatabase
local zone = db:saveZone("Notes")

-- What CloudKit says is worth trying again: wait `retryAfter` when it gives one, else back off.
local retryable = { requestRateLimited = true, serviceUnavailable = true, zoneBusy = true, networkFailure = true }

--- Runs `attempt` until it succeeds, fails for good, or `tries` run out. A real app sleeps the
--- delay; this one adds it up, so the example runs at once.
local function withRetries(what, attempt, tries)
  local waited = 0
  for n = 1, tries do
    local result, err = attempt(n)
    if not err then return result, n, waited end
    if not retryable[err.code] then return nil, n, waited, err end
    local delay = err.retryAfter or 0.5 * 2 ^ (n - 1)
    print(string.format("  %s, attempt %d: %s; retry in %gs", what, n, err.code, delay))
    waited = waited + delay
  end
  return nil, tries, waited, { code = "gave up" }
end

local function note(name, text)
  return sf.Record{ recordType = "Note", recordName = name, zone = zone, fields = { text = text } }
end

--- The error a modify reported for `record`: the call's own, or its item's in a partial failure
--- (partialErrors are keyed "name (zone/owner)").
local function errorFor(err, record)
  if not err or err.code ~= "partialFailure" then return err end
  for key, e in pairs(err.partialErrors) do
    if key:sub(1, #record.recordName + 2) == record.recordName .. " (" then return e end
  end
end

local function save(record)
  local saved, err = db:modifyRecords{ save = { record } }
  return saved and saved[1], errorFor(err, record)
end

print("1. throttled twice, then through")
local rule = sf.faults.add{ operation = "modifyRecords", fault = "requestRateLimited", retryAfter = 2, count = 2 }
local _, tries, waited = withRetries("save groceries", function() return save(note("groceries", "milk")) end, 5)
print(string.format("  saved after %d attempts, %gs waited", tries, waited))
rule:remove()

print("2. the connection drops after the save committed")
sf.faults.add{ operation = "modifyRecords", fault = "networkFailure", when = "afterCommit", count = 1 }
local saved, _, _, err = withRetries("save todo", function(n)
  local record, e = save(note("todo", "call Bob"))
  -- The retry of a create that was applied finds the record there: fetch it, and if it is
  -- what this app wrote, the save happened (a retry must not apply it twice).
  if e and e.code == "serverRecordChanged" and n > 1 then
    local server = db:fetchRecord(note("todo").recordID)
    if server and server.fields.text == "call Bob" then
      print("  the retry finds it saved already: the first attempt's write went through")
      return server
    end
  end
  return record, e
end, 5)
print("  todo: " .. (saved and saved.fields.text or tostring(err and err.code)))

print("3. one item of a batch fails; the app retries only that one")
sf.faults.add{ recordName = "b-2", fault = "zoneBusy", retryAfter = 1, count = 1 }
local batch = { note("b-1", "one"), note("b-2", "two"), note("b-3", "three") }
local done, failed = db:modifyRecords{ save = batch, atomic = false }
local again = {}
for _, r in ipairs(batch) do
  local e = errorFor(failed, r)
  if e then
    print(string.format("  %s: %s, retry in %gs", r.recordName, e.code, e.retryAfter or 0))
    again[#again + 1] = r
  end
end
local retried = assert(db:modifyRecords{ save = again, atomic = false })
print(string.format("  saved %d at once, %d on retry", #done, #retried))

print("4. the change token expired: fetch the zone again from the start")
local first = assert(db:recordZoneChanges{ zoneID = zone })
sf.faults.add{ operation = "recordZoneChanges", fault = "changeTokenExpired", count = 1 }
local page, e = db:recordZoneChanges{ zoneID = zone, since = first.changeToken }
if e and e.code == "changeTokenExpired" then
  print("  " .. e.code .. ": dropping the token")
  page = assert(db:recordZoneChanges{ zoneID = zone })
end
print(string.format("  refetched %d records", #page.modifications))

print("5. a bad day, reproducible: 30% of saves fail, seed 7")
sf.faults.clear()
sf.faults.add{ operation = "modifyRecords", fault = "serviceUnavailable", retryAfter = 1, probability = 0.3, seed = 7 }
local attempts, total = 0, 0
for i = 1, 20 do
  local _, n, w = withRetries("note " .. i, function() return save(note("day-" .. i, "entry " .. i)) end, 10)
  attempts, total = attempts + n, total + w
end
print(string.format("  20 notes saved in %d attempts, %gs waited; %d faults injected in all",
  attempts, total, #sf.faults.history()))
sf.faults.clear()
