-- What every driver case needs: a small world (accounts, a zone, shares), CPU-time
-- measurement of the hostile call, checks that keep going after a failure, and the final
-- "ok <case>" line HostilePluginTests looks for. Loaded by drive.lua with dofile.
local sf = require("shareflow")

local H = {}

H.CONTAINER = "iCloud.com.example.hostile"

-- hostile.config.lua's limits.cpuMillis.
H.CPU_MILLIS = 50
-- SPEC §8: "A call ends within 2x its budget, whatever it does." A triggering request makes
-- `calls` plugin calls; on top of 2 x budget per call we allow SLACK_MS of CPU for the
-- engine's own work around them (a debug build's store writes, building the event or the
-- request, logging the error, loading a plugin's state). Time is process CPU time
-- (os.clock): the plugin burns CPU, so CPU time is a fair measure, and it does not count
-- the time a busy CI machine spends running something else.
H.SLACK_MS = 50

local failures = 0

--- Records a failed check (and goes on, so one run shows every problem).
function H.check(cond, what)
  if not cond then
    failures = failures + 1
    print("check failed: " .. what)
  end
  return cond
end

function H.note(text) print("note: " .. text) end

--- Calls fn(...) under pcall, measuring its CPU time against calls x 2 x budget + slack.
--- Returns pcall's results (ok, ...).
function H.timed(label, calls, fn, ...)
  local limit = calls * 2 * H.CPU_MILLIS + H.SLACK_MS
  local t0 = os.clock()
  local r = table.pack(pcall(fn, ...))
  local ms = (os.clock() - t0) * 1000
  print(string.format("time %s: %.1f ms of CPU (limit %d ms)", label, ms, limit))
  H.check(ms <= limit, string.format("%s took %.1f ms of CPU, over %d ms (%d call(s) x 2 x %d ms budget + %d ms slack)",
    label, ms, limit, calls, H.CPU_MILLIS, H.SLACK_MS))
  return table.unpack(r, 1, r.n)
end

--- Alice (the owner), Bob, Carol and Mallory, and Alice's zone. Made before the hostile
--- plugin is loaded, so setting up fires nothing into it.
function H.world()
  local w = { n = 0 }
  for _, who in ipairs{ "alice", "bob", "carol", "mallory" } do
    w[who] = sf.accounts.create{ email = who .. "@example.com" }
  end
  w.c = sf.as("alice@example.com"):container(H.CONTAINER)
  w.db = w.c.privateCloudDatabase
  w.zone = w.db:saveZone("Z")
  w.bc = sf.as("bob@example.com"):container(H.CONTAINER)
  return w
end

--- A new root record and its (unsaved) share, inviting `invite` (a list of emails).
function H.share(w, title, invite)
  w.n = w.n + 1
  local record = sf.Record{ recordType = "Doc", recordName = "doc" .. w.n, zone = w.zone, fields = { title = title } }
  local share = sf.Share{ rootRecord = record, title = title }
  if invite then
    local participants, err = w.c:fetchShareParticipants(invite)
    assert(not err, tostring(err))
    for _, p in ipairs(participants) do share:addParticipant(p) end
  end
  return record, share
end

--- A saved share with Bob invited (pending), and Bob's metadata for it.
function H.invited(w, title)
  local record, share = H.share(w, title or "doc", { "bob@example.com" })
  local _, err = w.db:modifyRecords{ save = { record, share } }
  assert(not err, tostring(err))
  local metadatas, err2 = w.bc:fetchShareMetadata{ share.url }
  assert(not err2, tostring(err2))
  return record, share, metadatas[share.url]
end

--- Loads a plugin of the corpus (trusted script API); returns pcall's ok and error.
function H.load(name, settings)
  local ok, err = pcall(sf.plugins.load, name, settings)
  H.check(ok, "plugin '" .. name .. "' loads: " .. tostring(err))
  return ok, err
end

function H.isLoaded(name)
  for _, n in ipairs(sf.plugins.loaded()) do if n == name then return true end end
  return false
end

--- The permissionFailure in an item error or a partialFailure, or nil.
function H.denial(err)
  if type(err) ~= "table" then return nil end
  if err.code == "permissionFailure" then return err end
  for _, e in pairs(err.partialErrors or {}) do
    if e.code == "permissionFailure" then return e end
  end
  return nil
end

--- Checks that `err` is a denial whose message contains every string in `parts`.
function H.expectDenied(err, what, parts)
  local e = H.denial(err)
  local got = tostring(err and (err.message or err) or "no error"):gsub("\n.*", "")
  if not H.check(e ~= nil, what .. " is denied (permissionFailure), got " .. got) then
    return nil
  end
  print("denied: " .. (e.message:gsub("\n.*", "")))
  for _, part in ipairs(parts or {}) do
    H.check(e.message:find(part, 1, true) ~= nil, what .. ": the reason names '" .. part .. "': " .. (e.message:gsub("\n.*", "")))
  end
  return e
end

--- The most recent policy decision.
function H.lastDecision()
  return sf.decisions{ limit = 1 }[1]
end

--- The lines of a file in a plugin's data folder.
function H.lines(plugin, file)
  local out = {}
  local f = io.open(sf.plugins.dataFolder(plugin) .. "/" .. file, "rb")
  if not f then return out end
  for line in f:lines() do out[#out + 1] = line end
  f:close()
  return out
end

--- The size of a file in a plugin's data folder (nil when absent).
function H.size(plugin, file)
  local f = io.open(sf.plugins.dataFolder(plugin) .. "/" .. file, "rb")
  if not f then return nil end
  local n = f:seek("end")
  f:close()
  return n
end

--- The next request is served: a record round trip, an account, a participant fetch and a
--- share save, none of which the hostile plugins of the corpus hook (apart from the ones
--- whose hooks the caller turned off with `unhooked`).
function H.served(w, unhooked)
  w.n = w.n + 1
  local record = sf.Record{ recordType = "Note", recordName = "served" .. w.n, zone = w.zone, fields = { n = w.n } }
  local saved, err = w.db:modifyRecords{ save = { record } }
  H.check(saved ~= nil and err == nil, "the next request (a record save) is served: " .. tostring(err))
  local back = w.db:fetchRecord(record.recordID)
  H.check(back ~= nil and back.fields.n == w.n, "the record saved after the hostile call reads back")
  local account = sf.accounts.create{ email = "served" .. w.n .. "@example.com" }
  local found = sf.accounts.find{ email = "served" .. w.n .. "@example.com" }
  H.check(found ~= nil and found.userRecordID == account.userRecordID, "a new account is stored and found")
  if unhooked then
    local ps, perr = w.c:fetchShareParticipants{ "served" .. w.n .. "@example.com" }
    H.check(ps ~= nil and ps[1] ~= nil and perr == nil, "a participant fetch is served: " .. tostring(perr))
    local r, s = H.share(w, "served")
    local _, serr = w.db:modifyRecords{ save = { r, s } }
    H.check(serr == nil, "a share save is served: " .. tostring(serr))
  end
end

--- Allocates and drops a few thousand small tables and strings, then collects: memory a
--- closed Lua state gave back is reused at once, so a use after free shows.
function H.churn()
  local junk = {}
  for i = 1, 2000 do junk[i] = { string.rep("u", 64 + i % 64) } end
  local n = #junk
  for i = 1, n, 2 do junk[i] = false end
  collectgarbage()
  return n
end

--- Prints "ok <case>" when every check passed; otherwise fails the script (status 1). An
--- error, not os.exit: the host then closes its states, so a sanitizer sees no leak.
function H.finish(case)
  if failures == 0 then
    print("ok " .. case)
  else
    print(string.format("FAILED %s: %d check(s)", case, failures))
    io.stdout:flush()
    error(string.format("the driver's checks failed: %s", case), 0)
  end
end

return H
