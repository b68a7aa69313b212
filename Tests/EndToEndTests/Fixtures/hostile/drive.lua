-- Drives one case of the hostile plugin corpus (SPEC §6-§8):
--
--   shareflow run --store DIR/s.sqlite --plugins Tests/EndToEndTests/Fixtures/hostile \
--     --config Tests/EndToEndTests/Fixtures/hostile/hostile.config.lua \
--     Tests/EndToEndTests/Fixtures/hostile/drive.lua CASE
--
-- Each case sets up accounts, a zone and shares, loads the case's plugin, triggers its hook
-- (timing the triggering call in CPU time against 2x the budget), then checks that nothing
-- changed that should not have and that the next request is served. It prints "ok CASE" when
-- every check passed, "check failed: ..." lines and an error (exit status 1) otherwise. A crash or a
-- hang shows as the process dying or timing out (HostilePluginTests). The README beside this
-- file lists the cases.
local sf = require("shareflow")
local H = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/harness.lua")

local case = arg[1]
local cases = {}

local BUDGET = "CPU budget of 50 ms exceeded"

local function nest(depth, leaf)
  local v = leaf or "leaf"
  for _ = 1, depth do v = { v } end
  return v
end

-- Checks that `text` contains one of `parts` (a denial or load error that may name either of
-- two limits, whichever is met first): "<what> names one of '…'<detail>".
local function namesOneOf(text, parts, what, detail)
  local found = false
  for _, part in ipairs(parts) do found = found or text:find(part, 1, true) ~= nil end
  H.check(found, what .. " names one of '" .. table.concat(parts, "', '") .. "'" .. (detail or ""))
end

-- Class 5 and friends: a share.save policy. Two rounds (the state must be usable after the
-- first), each a new share whose save is timed; then the next requests, then the next
-- requests again with the plugin unloaded.
--   expect.deny: true (must be denied), false (must be allowed), nil (either)
--   expect.parts: strings the denial's message must contain
--   expect.oneOf: strings of which the denial's message must contain one
--   expect.rounds: how many saves (2 unless given)
local function atSave(plugin, expect, settings)
  return function()
    local w = H.world()
    if not H.load(plugin, settings) then return end
    for round = 1, expect.rounds or 2 do
      local record, share = H.share(w, "doc")
      local ok, saved, err = H.timed(plugin .. " share.save #" .. round, expect.calls or 1, w.db.modifyRecords, w.db,
        { save = { record, share } })
      if H.check(ok, "modifyRecords returns instead of raising: " .. tostring(saved)) then
        if expect.deny == true then
          local e = H.expectDenied(err, "the save", expect.parts)
          if e and expect.oneOf then namesOneOf(e.message, expect.oneOf, "the save: the reason") end
          H.check(w.db:fetchRecord(share.recordID) == nil, "the denied share was not stored")
          local d = H.lastDecision()
          H.check(d ~= nil and d.allow == false and d.point == "share.save", "the decision log shows the denial")
        elseif expect.deny == false then
          H.check(err == nil and saved ~= nil, "the save is allowed: " .. tostring(err))
        else
          print("outcome: " .. (err and ("denied: " .. tostring(err.message or err):gsub("\n.*", "")) or "allowed"))
        end
      end
    end
    H.served(w)
    sf.plugins.unload(plugin)
    H.served(w, true)
  end
end

-- A participant.fetched observer: two timed fetches (one event each), then the next requests.
local function atFetch(plugin, settings)
  return function()
    local w = H.world()
    if not H.load(plugin, settings) then return end
    for round = 1, 2 do
      local ok, participants, err = H.timed(plugin .. " participant.fetched #" .. round, 1,
        w.c.fetchShareParticipants, w.c, { "carol@example.com" })
      H.check(ok and participants ~= nil and participants[1] ~= nil and err == nil,
        "the fetch that delivered the event succeeded: " .. tostring(ok and err or participants))
    end
    H.served(w)
    sf.plugins.unload(plugin)
    H.served(w, true)
  end
end

-- Load time: init.lua and setup are the two plugin calls. A plugin may load or fail to load
-- (mustFail: it has to fail); a failure is one clear error naming the plugin (and every string
-- in `parts`, and one of `oneOf`).
local function atLoad(plugin, mustFail, parts, oneOf)
  return function()
    local w = H.world()
    local ok, err = H.timed("load " .. plugin, 2, sf.plugins.load, plugin)
    if ok then
      H.check(not mustFail, plugin .. " must fail to load")
      H.check(H.isLoaded(plugin), "a plugin that loaded is listed")
      local record, share = H.share(w, "doc")
      local okSave, _, serr = H.timed(plugin .. " share.save", 1, w.db.modifyRecords, w.db, { save = { record, share } })
      H.check(okSave and serr == nil, "its allowing policy allows: " .. tostring(serr))
    else
      print("load failed: " .. tostring(err):gsub("\n.*", ""))
      H.check(tostring(err):find("plugin '" .. plugin .. "'", 1, true) ~= nil, "the load error names the plugin: " .. tostring(err))
      for _, part in ipairs(parts or {}) do
        H.check(tostring(err):find(part, 1, true) ~= nil, "the load error names '" .. part .. "': " .. tostring(err))
      end
      if oneOf then namesOneOf(tostring(err), oneOf, "the load error", ": " .. tostring(err)) end
      H.check(not H.isLoaded(plugin), "a plugin that failed to load is not listed")
    end
    H.served(w, true)
  end
end

-- Class 8 and class 2: a share.accept policy's verdict. Bob accepts a share he was invited to.
local function atAccept(plugin, settings, allow, parts)
  return function()
    local w = H.world()
    local _, share, metadata = H.invited(w)
    if not H.load(plugin, settings) then return end
    local ok, _, err = H.timed(plugin .. " share.accept", 1, w.bc.acceptShares, w.bc, { metadata })
    H.check(ok, "acceptShares returns instead of raising: " .. tostring(err))
    local status = w.bc:fetchShareMetadata{ share.url }[share.url].participantStatus
    local d = H.lastDecision()
    if allow then
      H.check(ok and err == nil, "the accept is allowed: " .. tostring(err))
      H.check(status == "accepted", "Bob is accepted, got " .. tostring(status))
      H.check(d ~= nil and d.allow == true, "the decision log shows an allow")
    else
      H.expectDenied(err, "the accept", parts)
      H.check(status == "pending", "Bob is still pending, got " .. tostring(status))
      H.check(d ~= nil and d.allow == false and d.point == "share.accept", "the decision log shows the denial")
      if d and d.reasons[1] then
        print("reason: " .. d.reasons[1]:gsub("\n.*", ""))
        H.check(#d.reasons[1] > #(plugin .. "/x: "), "the denial has a reason")
      end
    end
    H.served(w)
    -- the next accept, with the plugin gone, goes through
    sf.plugins.unload(plugin)
    local _, err2 = w.bc:acceptShares{ metadata }
    H.check(err2 == nil, "with the plugin unloaded Bob accepts: " .. tostring(err2))
    H.check(w.bc:fetchShareMetadata{ share.url }[share.url].participantStatus == "accepted", "Bob is accepted")
    H.served(w, true)
  end
end

---------------------------------------------------------------------------------------------
-- Class 1: stack overruns (depth and cycles)

-- (whether a 40-deep list is refused when the record is made or only when it is saved (R23)
-- is the host's choice: either verdict; the host must survive and serve)
-- (40 deep is the issue's reproduction: today it corrupts memory silently or crashes, run by
-- run; 200 deep crashes every time)
cases["deep-record-field"] = atSave("deep-record-field", {}, { via = "constructor", depth = 40 })
cases["deep-record-field-200"] = atSave("deep-record-field", {}, { via = "constructor", depth = 200 })
cases["deep-record-field-view"] = atSave("deep-record-field", {}, { via = "fields", depth = 200 })
cases["deep-record-field-set"] = atSave("deep-record-field", {}, { via = "set", depth = 200 })
cases["json-encode-cyclic"] = atSave("json-encode-cyclic", { deny = true })
cases["json-encode-deep"] = atSave("json-encode-deep", { deny = false })
cases["return-deep-value"] = atLoad("return-deep-value")
cases["config-default-deep"] = atLoad("config-default-deep")

-- (script) cyclic and deep values given to the host's converters by a trusted script.
cases["script-cyclic-field"] = function()
  local w = H.world()
  local cyclic = {}
  cyclic[1] = cyclic
  local hashCycle = { name = "loop" }
  hashCycle.self = hashCycle
  local function record() return sf.Record{ recordType = "Doc", zone = w.zone } end
  -- { label, fn, mustRaise }: a cycle cannot be converted, so it must raise; a 150-deep value
  -- may be refused now or later (R23, the depth limit), but must not crash.
  local attempts = {
    { "sf.Record{ fields = { x = cyclic } }", function()
      return sf.Record{ recordType = "Doc", zone = w.zone, fields = { x = cyclic } }
    end, true },
    { "record.fields.x = cyclic", function() record().fields.x = cyclic end, true },
    { "record:set('x', cyclic)", function() record():set("x", cyclic) end, true },
    { "sf.Record{ fields = { x = 150-deep list } }", function()
      return sf.Record{ recordType = "Doc", zone = w.zone, fields = { x = nest(150) } }
    end, false },
    { "sf.json.encode(cyclic)", function() return sf.json.encode(cyclic) end, true },
    { "sf.json.encode(cycle through a hash field)", function() return sf.json.encode(hashCycle) end, true },
    { "sf.json.encode(150-deep)", function() return sf.json.encode(nest(150)) end, false },
  }
  for _, attempt in ipairs(attempts) do
    local ok, err = H.timed(attempt[1], 0, attempt[2])
    if attempt[3] then H.check(not ok, attempt[1] .. " raises an error") end
    print(attempt[1] .. ": " .. (ok and "accepted" or tostring(err):gsub("\n.*", "")))
  end
  H.served(w, true)
end

-- (script) deep and cyclic plugin settings: copied out of the script's state, pushed into
-- the plugin's.
cases["script-deep-plugin-settings"] = function()
  local w = H.world()
  local cyclic = {}
  cyclic[1] = cyclic
  for _, settings in ipairs{ { label = "150-deep", junk = nest(150) }, { label = "cyclic", junk = cyclic } } do
    local label = settings.label
    settings.label = nil
    local ok, err = H.timed("load benign-observer with " .. label .. " settings", 2, sf.plugins.load, "benign-observer", settings)
    print(label .. " settings: " .. (ok and "loaded" or ("refused: " .. tostring(err):gsub("\n.*", ""))))
    if label == "cyclic" then H.check(not ok, "cyclic settings are refused") end
  end
  sf.plugins.unload("benign-observer")
  H.served(w, true)
end

---------------------------------------------------------------------------------------------
-- Class 2: unprotected calls on a plugin's state

cases["verdict-index-raises"] = atAccept("verdict-index-raises", nil, false, { "verdict-index-raises/hostile" })
cases["verdict-index-loops"] = atAccept("verdict-index-loops", nil, false, { "verdict-index-loops/hostile" })
cases["global-newindex-raises"] = atLoad("global-newindex-raises")
cases["global-newindex-loops"] = atLoad("global-newindex-loops")
cases["global-index-raises"] = atLoad("global-index-raises")

-- The plugin's participant.fetched observer fills its state up to the cap (over as many calls
-- as its budget needs; it writes "full" when there); the next events and the next decision
-- must not take the host down.
cases["memory-cap-hold"] = function()
  local w = H.world()
  if not H.load("memory-cap-hold") then return end
  local full = false
  for round = 1, 30 do
    local ok, participants, err = H.timed("memory-cap-hold participant.fetched #" .. round, 1,
      w.c.fetchShareParticipants, w.c, { "carol@example.com" })
    H.check(ok and participants ~= nil and err == nil, "the fetch is served: " .. tostring(ok and err or participants))
    if full then break end
    full = H.lines("memory-cap-hold", "results.log")[1] == "full"
  end
  H.check(full, "the plugin reached its memory cap and wrote \"full\" to results.log (the case's precondition)")
  local record, share = H.share(w, "doc")
  local ok, _, err = H.timed("memory-cap-hold share.save", 1, w.db.modifyRecords, w.db, { save = { record, share } })
  H.check(ok, "modifyRecords returns instead of raising")
  print("share.save at the cap: " .. (err and ("denied: " .. tostring(err.message or err):gsub("\n.*", "")) or "allowed"))
  H.served(w)
  sf.plugins.unload("memory-cap-hold")
  H.served(w, true)
end

---------------------------------------------------------------------------------------------
-- Class 3: numbers the host converts (NaN, ±inf, huge, negative)

local function numeric(call, value, position, fname, mayWork)
  return function()
    local w = H.world()
    if not H.load("numeric-args", { call = call, value = value }) then return end
    local lines = H.lines("numeric-args", "results.log")
    local line = lines[#lines] or ""
    print("result: " .. line)
    local ok = line:match("^[^\t]*\t(%a+)\t")
    local expected = "bad argument #" .. position .. " to '" .. fname .. "'"
    if mayWork and ok == "true" then
      H.note(call .. " " .. value .. " was accepted (allowed for a valid integer)")
    else
      H.check(ok == "false", call .. " with " .. value .. " raises an error")
      H.check(line:find(expected, 1, true) ~= nil, "the error is \"" .. expected .. " (...)\": " .. line)
    end
    sf.plugins.unload("numeric-args")
    H.served(w, true)
  end
end

cases["decisions-limit-negative"] = numeric("decisions", "-1", 1, "decisions")
cases["decisions-limit-nan"] = numeric("decisions", "nan", 1, "decisions")
cases["decisions-limit-inf"] = numeric("decisions", "inf", 1, "decisions")
cases["decisions-limit-huge"] = numeric("decisions", "huge", 1, "decisions")
cases["decisions-limit-2p63"] = numeric("decisions", "2^63", 1, "decisions")
cases["decisions-limit-maxinteger"] = numeric("decisions", "maxinteger", 1, "decisions", true)
cases["priority-nan-on"] = numeric("on", "nan", 3, "on")
cases["priority-inf-on"] = numeric("on", "inf", 3, "on")
cases["priority-neginf-policy"] = numeric("policy", "-inf", 3, "policy")
cases["priority-huge-policy"] = numeric("policy", "huge", 3, "policy")
cases["config-schema-inf-bound"] = atLoad("config-schema-inf-bound")

---------------------------------------------------------------------------------------------
-- Class 4 (script): unload or reload a plugin while the same event is being delivered

local function duringDelivery(action)
  return function()
    local w = H.world()
    if not H.load("benign-observer") then return end
    local handle = sf.on("participant.fetched", function()
      if action == "unload" then sf.plugins.unload("benign-observer") else sf.plugins.reload("benign-observer") end
      H.churn()   -- so that memory a closed state gave back is reused at once
    end, { priority = 100, name = action .. "er" })
    for round = 1, 20 do
      local ok, participants, err = pcall(w.c.fetchShareParticipants, w.c, { "carol@example.com" })
      H.check(ok and participants ~= nil and participants[1] ~= nil and err == nil,
        action .. " during delivery, round " .. round .. ": the fetch is served: " .. tostring(ok and err or participants))
      if action == "unload" then
        H.check(not H.isLoaded("benign-observer"), "unloaded")
        H.load("benign-observer")
      end
    end
    handle:remove()
    -- the plugin, loaded once, sees the next event exactly once
    local before = #H.lines("benign-observer", "results.log")
    w.c:fetchShareParticipants{ "carol@example.com" }
    local after = #H.lines("benign-observer", "results.log")
    H.check(after == before + 1, "the next event reaches the plugin once, got " .. (after - before))
    H.check(H.isLoaded("benign-observer"), "the plugin is loaded")
    H.served(w)
  end
end

cases["script-unload-during-delivery"] = duringDelivery("unload")
cases["script-reload-during-delivery"] = duringDelivery("reload")

-- The same from a script's policy that runs before the plugin's policy at the same point.
cases["script-unload-in-policy"] = function()
  local w = H.world()
  if not H.load("benign-observer") then return end
  local handle = sf.policy("share.save", function()
    sf.plugins.unload("benign-observer")
    H.churn()
  end, { priority = 100, name = "unloader" })
  for round = 1, 20 do
    local record, share = H.share(w, "doc")
    local ok, _, err = pcall(w.db.modifyRecords, w.db, { save = { record, share } })
    H.check(ok, "round " .. round .. ": modifyRecords returns")
    if round == 1 then print("outcome: " .. (err and tostring(err.message):gsub("\n.*", "") or "allowed")) end
    H.load("benign-observer")
  end
  handle:remove()
  sf.plugins.unload("benign-observer")
  H.served(w, true)
end

---------------------------------------------------------------------------------------------
-- Class 5: CPU budget escapes (a share.save policy; the save is denied naming the budget)

for _, plugin in ipairs{
  "budget-plain-loop", "budget-pcall-loop", "budget-close-loop", "budget-coroutine-65",
  "budget-coroutine-wrap", "budget-coroutine-close", "budget-xpcall-handler", "budget-error-tostring",
  "budget-string-find", "budget-gsub", "budget-find-plain", "budget-table-sort", "budget-table-move",
  "budget-load-big-chunk",
} do
  cases[plugin] = atSave(plugin, { deny = true, parts = { "plugin '" .. plugin .. "': " .. BUDGET } })
end
cases["budget-gc-finalizer"] = atSave("budget-gc-finalizer", { deny = true, parts = { "__gc" } })
cases["gc-placeholder-swap"] = atSave("gc-placeholder-swap", { deny = true, parts = { "__gc" } })
cases["class-metatable-gc-swap"] = atSave("class-metatable-gc-swap", {})
cases["memory-bomb"] = atSave("memory-bomb", { deny = true, parts = { "memory" } })
-- (a stack overflow or the budget, whichever comes first)
cases["deep-recursion"] = atSave("deep-recursion", { deny = true })
cases["yield-across-host"] = atSave("yield-across-host", { deny = false })
-- Each level of the re-entry is a whole save (the engine's work between two Lua frames) on
-- top of the budget's Lua: about 85 ms of the process's CPU alone, measured up to 158 ms on
-- a machine loaded with other builds (os.clock counts every thread). Bounded is the claim:
-- an unbounded re-entry would take seconds.
cases["reentrant-policy-save"] = atSave("reentrant-policy-save", { calls = 2 })
cases["budget-observer-pcall-loop"] = atFetch("budget-observer-pcall-loop")
cases["reentrant-observer-fetch"] = atFetch("reentrant-observer-fetch")
cases["budget-setup-loop"] = atLoad("budget-setup-loop", true, { "plugin 'budget-setup-loop': " .. BUDGET })

---------------------------------------------------------------------------------------------
-- Class 6: plugins see engine objects read-only

local function attemptsAllRaised(plugin, atLeast)
  local lines = H.lines(plugin, "results.log")
  H.check(#lines >= atLeast, plugin .. " made at least " .. atLeast .. " attempts, got " .. #lines)
  for _, line in ipairs(lines) do
    local what, outcome = line:match("^(.-)\t(.*)$")
    H.check(outcome ~= nil and outcome:sub(1, 6) == "error ", "a plugin's setter raises: " .. tostring(what) .. " -> " .. tostring(outcome))
  end
end

local function participantsOf(share)
  local out = {}
  for _, p in ipairs(share.participants) do
    local info = p.userIdentity and p.userIdentity.lookupInfo
    out[(info and (info.emailAddress or info.userRecordID)) or p.participantID] = p.permission
  end
  return out
end

local function sameShare(share, label, title)
  H.check(share.publicPermission == "none", label .. ": publicPermission stays none, got " .. tostring(share.publicPermission))
  H.check(share.title == title, label .. ": title stays " .. title .. ", got " .. tostring(share.title))
  local people = participantsOf(share)
  H.check(#share.participants == 2, label .. ": two participants (owner and Bob), got " .. #share.participants)
  H.check(people["bob@example.com"] == "readOnly", label .. ": Bob stays readOnly, got " .. tostring(people["bob@example.com"]))
  H.check(people["mallory@example.com"] == nil, label .. ": Mallory was not added")
end

cases["mutate-event-objects"] = function()
  local w = H.world()
  if not H.load("mutate-event-objects") then return end
  local fetched = w.c:fetchShareParticipants{ "bob@example.com", "carol@example.com", "mallory@example.com" }
  H.check(fetched[1].permission == "readOnly", "the caller's fetched participant stays readOnly, got " .. fetched[1].permission)
  local record = sf.Record{ recordType = "Doc", recordName = "doc", zone = w.zone, fields = { title = "doc" } }
  local share = sf.Share{ rootRecord = record, title = "doc" }
  share:addParticipant(fetched[1])
  local _, err = w.db:modifyRecords{ save = { record, share } }
  H.check(err == nil, "the save succeeds: " .. tostring(err))
  sameShare(share, "the caller's share after share.saved", "doc")
  -- a later event: the plugin edits the objects it kept
  local metadata = w.bc:fetchShareMetadata{ share.url }[share.url]
  if not H.check(metadata ~= nil, "Bob finds the share") then return end
  H.check(metadata.share.publicPermission == "none", "Bob's metadata share stays private")
  H.check(metadata.participantPermission == "readOnly", "Bob's metadata says readOnly")
  sameShare(share, "the caller's share after a later event", "doc")
  -- trusted scripts keep writable objects; the owner's next save stores what the owner holds
  share.title = "doc v2"
  H.check(share.title == "doc v2", "the script's own share object stays writable")
  local _, err2 = w.db:modifyRecords{ save = { share } }
  H.check(err2 == nil, "the owner's second save succeeds: " .. tostring(err2))
  local stored = w.db:fetchRecord(share.recordID)
  if H.check(stored ~= nil, "the share is stored") then sameShare(stored, "the stored share", "doc v2") end
  local _, err3 = w.bc:acceptShares{ metadata }
  H.check(err3 == nil, "Bob accepts: " .. tostring(err3))
  local mine = w.bc:fetchShareMetadata{ share.url }[share.url]
  H.check(mine.participantPermission == "readOnly", "Bob joined readOnly, got " .. tostring(mine.participantPermission))
  attemptsAllRaised("mutate-event-objects", 12)
  H.served(w, true)
end

cases["mutate-policy-request"] = function()
  local w = H.world()
  if not H.load("mutate-policy-request") then return end
  w.c:fetchShareParticipants{ "mallory@example.com" }
  local record, share = H.share(w, "doc", { "bob@example.com" })
  local _, err = w.db:modifyRecords{ save = { record, share } }
  H.check(err == nil, "the save is allowed: " .. tostring(err))
  sameShare(share, "the caller's share", "doc")
  local stored = w.db:fetchRecord(share.recordID)
  if H.check(stored ~= nil, "the share is stored") then sameShare(stored, "the stored share", "doc") end
  local metadata = w.bc:fetchShareMetadata{ share.url }[share.url]
  if not H.check(metadata ~= nil, "Bob finds the share") then return end
  local _, err2 = w.bc:acceptShares{ metadata }
  H.check(err2 == nil, "Bob's accept is allowed: " .. tostring(err2))
  local mine = w.bc:fetchShareMetadata{ share.url }[share.url]
  H.check(mine.participantPermission == "readOnly", "Bob joined readOnly, got " .. tostring(mine.participantPermission))
  H.check(mine.share.title == "doc", "the share's title is the owner's, got " .. tostring(mine.share.title))
  H.check(metadata.share.title == "doc", "Bob's metadata object is untouched, got " .. tostring(metadata.share.title))
  attemptsAllRaised("mutate-policy-request", 5)
  H.served(w, true)
end

---------------------------------------------------------------------------------------------
-- Class 7: ctx.appendFile (quota here; bytes, symlinks and paths in append-probe/append_test.lua)

local function emails(n, prefix)
  local out = {}
  for i = 1, n do out[i] = string.format("%s%03d@example.com", prefix, i) end
  return out
end

-- Run with quota.config.lua (diskMiB = 1): 300 KiB chunks, so three fit and the fourth would
-- pass the quota; a write past it fails whole.
cases["append-quota-config"] = function()
  local w = H.world()
  if not H.load("append-quota", { chunkKiB = 300 }) then return end
  w.c:fetchShareParticipants(emails(4, "q"))
  H.check(H.size("append-quota", "quota.bin") == 3 * 300 * 1024,
    "three 300 KiB chunks fit in 1 MiB and the fourth is refused whole, got " .. tostring(H.size("append-quota", "quota.bin")) .. " bytes")
  w.c:fetchShareParticipants(emails(1, "r"))
  H.check(H.size("append-quota", "quota.bin") == 3 * 300 * 1024, "later writes past the quota are refused too")
  H.served(w, true)
end

-- The default quota, 64 MiB: 1000 KiB chunks, 65 fit (66,560,000 bytes), the 66th would not.
cases["append-quota-default"] = function()
  local w = H.world()
  if not H.load("append-quota", { chunkKiB = 1000 }) then return end
  w.c:fetchShareParticipants(emails(66, "q"))
  H.check(H.size("append-quota", "quota.bin") == 65 * 1000 * 1024,
    "65 chunks of 1000 KiB fit in 64 MiB and the 66th is refused whole, got " .. tostring(H.size("append-quota", "quota.bin")) .. " bytes")
  H.served(w, true)
end

-- Run with --store :memory:: the data folder is the process's own; HostilePluginTests checks
-- that it is not the shared /tmp/shareflow-plugin-data and is gone after exit.
cases["append-memory-private"] = function()
  local w = H.world()
  local file = string.format("private-%x-%x.txt", os.time(), math.random(1 << 30))
  if not H.load("append-probe", { path = file }) then return end
  w.c:fetchShareParticipants{ "carol@example.com" }
  local folder = sf.plugins.dataFolder("append-probe")
  print("datafolder " .. folder)
  print("datafile " .. folder .. "/" .. file)
  local f = io.open(folder .. "/" .. file, "rb")
  H.check(f ~= nil and f:read("a") == "plain text\n", "the plugin's file is in its data folder")
  if f then f:close() end
  H.served(w, true)
end

---------------------------------------------------------------------------------------------
-- Class 8: malformed verdicts deny (fail closed); nil, true and sf.allow() allow

for _, kind in ipairs{ "allow-string-false", "allow-zero", "reason-only", "empty-table", "metatable", "index-allow", "userdata" } do
  cases["verdict-" .. kind] = atAccept("verdict-malformed", { kind = kind }, false, { "verdict-malformed/" .. kind })
end
for kind, typeName in pairs{ string = "string", zero = "number", nan = "number", ["function"] = "function", thread = "thread" } do
  cases["verdict-" .. kind] = atAccept("verdict-malformed", { kind = kind }, false, { "verdict-malformed/" .. kind, typeName })
end
for _, kind in ipairs{ "nil", "true", "allow" } do
  cases["verdict-" .. kind] = atAccept("verdict-malformed", { kind = kind }, true)
end
cases["verdict-deny"] = atAccept("verdict-malformed", { kind = "deny" }, false, { "denied on purpose" })
cases["verdict-false-reason"] = atAccept("verdict-malformed", { kind = "false-reason" }, false, { "denied on purpose" })

---------------------------------------------------------------------------------------------
-- Class 9: the attack review's findings (request tables, host calls from coroutines, objects a
-- plugin hands back to the host, require, walks and copies in Swift, big texts, chains)

-- results.log of a plugin as a list of { what, outcome } and a map what -> outcome.
local function results(plugin)
  local list, map = {}, {}
  for _, line in ipairs(H.lines(plugin, "results.log")) do
    local what, outcome = line:match("^(.-)\t(.*)$")
    list[#list + 1] = { what or line, outcome or "" }
    map[what or line] = outcome
    print("result: " .. line:sub(1, 300))
  end
  return list, map
end

-- Checks that `outcome` is an error whose message contains `part` (when given).
local function raised(outcome, what, part)
  outcome = outcome or "(none)"
  if H.check(outcome:sub(1, 6) == "error ", what .. " raises, got " .. outcome:sub(1, 200)) and part then
    H.check(outcome:find(part, 1, true) ~= nil, what .. ": the error says '" .. part .. "', got " .. outcome:sub(1, 200))
  end
end

-- The folder the store is in (HostilePluginTests gives each case a fresh one): plugin data
-- folders are <it>/plugin-data/<plugin>.
local function scratchFolder()
  return (sf.plugins.dataFolder("x"):match("^(.*)/[^/]+/[^/]+$"))
end

local function sh(command)
  local ok = os.execute(command)
  H.check(ok == true, "the driver's command succeeds: " .. command)
  return ok == true
end

local function quoted(path) return "'" .. path:gsub("'", "'\\''") .. "'" end

-- A FIFO with no writer (opening it to read blocks), in the case's scratch folder.
local function fifo()
  local path = scratchFolder() .. "/hostile.fifo"
  sh("rm -f " .. quoted(path) .. " && mkfifo " .. quoted(path))
  return path
end

local function readAll(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

local function writeAll(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

-- The plugins folder HostilePluginTests puts first for the cases that make plugin files the
-- repository cannot hold (arg[2]); a copy of a corpus plugin made there wins over the corpus's.
local function generated()
  local dir = arg[2]
  assert(dir and dir ~= "", "this case needs a generated plugins folder as its second argument")
  return dir
end

-- Text of `size` bytes: `head`, then a Lua comment to fill up.
local function padded(head, size)
  local line = "-- " .. ("p"):rep(76) .. "\n"
  local body = head .. "\n"
  local fill = size - #body - 3   -- the last line: "--", the rest, "\n"
  assert(fill >= 0, "padding")
  local n = fill // #line
  local text = body .. line:rep(n) .. "--" .. ("p"):rep(fill - n * #line) .. "\n"
  assert(#text == size, "padding")
  return text
end

local CORPUS = (arg[0]:match("^(.*)/[^/]*$") or ".")

-- 1: the request table's hidden serial set to values the host never wrote.
cases["request-serial-overwrite"] = function()
  local w = H.world()
  if not H.load("request-serial-overwrite") then return end
  for round = 1, 2 do
    local record, share = H.share(w, "doc")
    local ok, saved, err = H.timed("request-serial-overwrite share.save #" .. round, 1, w.db.modifyRecords, w.db,
      { save = { record, share } })
    H.check(ok, "modifyRecords returns instead of raising: " .. tostring(saved))
    print("outcome: " .. (err and ("denied: " .. tostring(err.message or err):gsub("\n.*", "")) or "allowed"))
    local list, map = results("request-serial-overwrite")
    H.check(#list == 14, "14 reads were made, got " .. #list)
    for i = 1, #list - 1 do
      local what, outcome = list[i][1], list[i][2]
      H.check(outcome == "ok " .. share.recordName or outcome:sub(1, 6) == "error ",
        "req.proposed with the serial set to " .. what .. " errors or gives the share being saved, got " .. outcome)
    end
    H.check(map["restored"] == "ok " .. share.recordName, "with the serial put back, req.proposed is the share being saved, got "
      .. tostring(map["restored"]))
    os.remove(sf.plugins.dataFolder("request-serial-overwrite") .. "/results.log")
  end
  H.served(w)
  sf.plugins.unload("request-serial-overwrite")
  H.served(w, true)
end

-- 2 and 3: the request's `next` called with a non-table, and with a key not in the table
-- (then a 1 GiB string.rep that the memory cap must stop).
cases["request-next-non-table"] = atSave("request-next-misuse",
  { deny = true, parts = { "bad argument #1", "table expected, got number" } }, { kind = "non-table" })

local function thenRepFails(plugin, first, settings, part)
  local run = atSave(plugin, { deny = true, parts = { "not enough memory" } }, settings)
  return function()
    run()
    local list = results(plugin)
    H.check(#list == 2, "two rounds, one line each, got " .. #list)
    for _, entry in ipairs(list) do
      H.check(entry[1] == first, "only '" .. first .. "' lines (no 'rep' line: the 1 GiB string was never made), got " .. entry[1])
      if part then raised(entry[2], first, part) end
    end
  end
end

cases["request-next-missing-key"] = thenRepFails("request-next-misuse", "missing key", { kind = "missing-key" }, "next")
cases["json-encode-key-tostring"] = thenRepFails("json-encode-key-tostring", "encode")

-- 4: host calls from inside coroutines, compared with what the policy reads outside them.
cases["coroutine-host-calls"] = function()
  local w = H.world()
  if not H.load("coroutine-host-calls") then return end
  local record, share = H.share(w, "doc")
  local ok, saved, err = H.timed("coroutine-host-calls share.save", 1, w.db.modifyRecords, w.db, { save = { record, share } })
  H.check(ok and saved ~= nil and err == nil, "the save is allowed: " .. tostring(ok and err or saved))
  local list, map = results("coroutine-host-calls")
  H.check(map["main caller"] == "alice@example.com", "outside a coroutine req.caller.email is Alice's")
  for label, times in pairs{ co1 = "300", co2 = "20", co2b = "20" } do
    local function is(what, want, says)
      local got = map[label .. " " .. what]
      H.check(got == want or (type(want) == "table" and (got == want[1] or got == want[2])),
        label .. ": " .. says .. ", got " .. tostring(got))
    end
    is("decisions", times, times .. " calls of ctx.decisions returned a table")
    is("caller", "alice@example.com", "req.caller.email is Alice's")
    is("share", share.recordName, "req.proposed.recordName is the share's")
    is("json", { '{"a":[1,2,3],"b":"x"}', '{"b":"x","a":[1,2,3]}' }, "ctx.json.encode is right")
    is("record", label .. " 7", "ctx.Record made the record asked for")
    is("fetch", "carol@example.com", "the fetch found Carol")
  end
  local events = 0
  for _, entry in ipairs(list) do
    if entry[1] == "event" then
      events = events + 1
      H.check(entry[2] == "carol@example.com", "the event delivered during a coroutine's call is Carol's fetch, got " .. entry[2])
    end
  end
  H.check(events == 3, "three participant.fetched events reached the plugin, got " .. events)
  H.check(map["co2 yield"] == "true mid", "the inner coroutine yielded between host calls, got " .. tostring(map["co2 yield"]))
  H.check(map["co2 end"] == "true dead", "the inner coroutine finished, got " .. tostring(map["co2 end"]))
  H.check(map["main share"] == share.recordName, "after the coroutines req.proposed is still the share, got "
    .. tostring(map["main share"]))
  H.served(w)
  sf.plugins.unload("coroutine-host-calls")
  H.served(w, true)
end

-- 5: a caller's participant handed to the plugin's own share (to change its permission).
cases["participant-escalate"] = function()
  local w = H.world()
  if not H.load("participant-escalate") then return end
  local record, share = H.share(w, "doc", { "bob@example.com" })
  local ok, saved, err = H.timed("participant-escalate share.save", 1, w.db.modifyRecords, w.db, { save = { record, share } })
  H.check(ok and saved ~= nil and err == nil, "the save is allowed: " .. tostring(ok and err or saved))
  local _, map = results("participant-escalate")
  raised(map["mine:addParticipant(caller's bob)"], "adding the caller's participant to the plugin's share", "read-only")
  raised(map["mine:removeParticipant(caller's bob)"], "removing the caller's participant from the plugin's share", "read-only")
  raised(map["req.proposed:addParticipant(own bob)"], "adding to the caller's share", "read-only")
  for _, after in ipairs{ "add", "merge", "remove", "adding to the caller's share" } do
    local permission = map["bob after " .. after]
    H.check(permission == "readOnly", "the caller's Bob stays readOnly after " .. after .. ", got " .. tostring(permission))
  end
  sameShare(share, "the caller's share", "doc")
  local stored = w.db:fetchRecord(share.recordID)
  if H.check(stored ~= nil, "the share is stored") then sameShare(stored, "the stored share", "doc") end
  local metadata = w.bc:fetchShareMetadata{ share.url }[share.url]
  H.check(metadata ~= nil and metadata.participantPermission == "readOnly", "Bob's metadata says readOnly, got "
    .. tostring(metadata and metadata.participantPermission))
  H.served(w)
  sf.plugins.unload("participant-escalate")
  H.served(w, true)
end

-- 6: a caller's record as the root of the plugin's own share; the caller's objects in a save.
cases["caller-record-as-root"] = function()
  local w = H.world()
  local record, share = H.share(w, "doc", { "bob@example.com" })
  local _, err = w.db:modifyRecords{ save = { record, share } }
  assert(not err, tostring(err))
  local before = w.db:fetchRecord(record.recordID)
  if not H.load("caller-record-as-root") then return end
  local ok, metadatas, ferr = H.timed("caller-record-as-root share.metadataFetched", 1, w.bc.fetchShareMetadata, w.bc,
    { share.url }, { shouldFetchRootRecord = true })
  H.check(ok and metadatas ~= nil and ferr == nil, "Bob's metadata fetch is served: " .. tostring(ok and ferr or metadatas))
  local m = ok and metadatas and metadatas[share.url]
  if H.check(m ~= nil and m.rootRecord ~= nil, "Bob's metadata has the root record") then
    H.check(m.rootRecord.share ~= nil and m.rootRecord.share.recordName == share.recordName,
      "the caller's root record still names the owner's share, got " .. tostring(m.rootRecord.share and m.rootRecord.share.recordName))
  end
  local _, map = results("caller-record-as-root")
  raised(map["Share{rootRecord = caller's record}"], "ctx.Share with the caller's record as rootRecord", "read-only")
  raised(map["modifyRecords{save = {caller's record}}"], "saving the caller's record", "read-only")
  raised(map["modifyRecords{save = {caller's share}}"], "saving the caller's share", "read-only")
  H.check(map["root.share after"] == share.recordName, "the plugin's view of the root record names the owner's share, got "
    .. tostring(map["root.share after"]))
  local after = w.db:fetchRecord(record.recordID)
  if H.check(after ~= nil, "the root record is stored") then
    H.check(after.share ~= nil and after.share.recordName == share.recordName, "the stored root record names the owner's share")
    H.check(after.recordChangeTag == before.recordChangeTag, "the stored root record was not saved again")
  end
  local evil = w.db:fetchRecord(sf.RecordID{ recordName = "EVIL", zoneID = record.zoneID })
  H.check(evil == nil, "no share named EVIL was stored")
  H.served(w, true)
end

-- 7: require led out of the folder by a replaced ipairs or replaced string methods; a FIFO.
local function requireEscape(poison, target)
  return function()
    local w = H.world()
    local settings = { poison = poison, target = target == "fifo" and fifo() or (CORPUS .. "/hostile.config.lua"),
      relative = "../hostile.config" }
    if not H.load("require-escape", settings) then return end
    local record, share = H.share(w, "doc")
    local ok, saved, err = H.timed("require-escape share.save", 1, w.db.modifyRecords, w.db, { save = { record, share } })
    H.check(ok and saved ~= nil and err == nil, "the save is allowed (the policy catches require's error): "
      .. tostring(ok and err or saved))
    local _, map = results("require-escape")
    raised(map["require"], "require('anything') with " .. poison .. " replaced", "module 'anything' not found")
    H.served(w)
    sf.plugins.unload("require-escape")
    H.served(w, true)
  end
end

cases["require-escape-ipairs"] = requireEscape("ipairs")
cases["require-escape-string"] = requireEscape("string")
cases["require-escape-fifo"] = requireEscape("ipairs", "fifo")

-- 7 and 13: modules that are a FIFO, links leading out, 1 MiB + 1 byte; odd names.
cases["require-module-files"] = function()
  local w = H.world()
  local gen = generated()
  local dir = gen .. "/require-module-files"
  sh("mkdir -p " .. quoted(dir .. "/sub") .. " " .. quoted(gen .. "/outside-dir"))
  for _, file in ipairs{ "init.lua", "inside.lua", "sub/init.lua" } do
    writeAll(dir .. "/" .. file, readAll(CORPUS .. "/require-module-files/" .. file))
  end
  writeAll(dir .. "/edge.lua", padded("return 'edge'", 1024 * 1024))
  writeAll(dir .. "/big.lua", padded("return 'big'", 1024 * 1024 + 1))
  writeAll(gen .. "/outside.lua", "return 'outside'\n")
  writeAll(gen .. "/outside-dir/x.lua", "return 'outside x'\n")
  sh("mkfifo " .. quoted(dir .. "/fifo.lua"))
  sh("ln -s ../outside.lua " .. quoted(dir .. "/link.lua"))
  sh("ln -s ../outside-dir " .. quoted(dir .. "/linkdir"))
  local expected = {
    { "inside", "ok inside" }, { "sub", "ok sub" }, { "sub.init", "ok sub" }, { "edge", "ok edge" },
    { "big", "error", "larger than 1 MiB" }, { "fifo", "error", "not a regular file" },
    { "link", "error", "symbolic link" }, { "linkdir.x", "error" }, { "../outside", "error" },
    { "/etc/passwd", "error" }, { "a..b", "error" }, { ".inside", "error" }, { "inside.", "error" },
  }
  local modules = {}
  for i, e in ipairs(expected) do modules[i] = e[1] end
  if not H.load("require-module-files", { modules = modules }) then return end
  local record, share = H.share(w, "doc")
  local ok, saved, err = H.timed("require-module-files share.save", 1, w.db.modifyRecords, w.db, { save = { record, share } })
  H.check(ok and saved ~= nil and err == nil, "the save is allowed (the policy catches require's errors): "
    .. tostring(ok and err or saved))
  local list, map = results("require-module-files")
  H.check(#list == #expected, #expected .. " modules were asked for, got " .. #list)
  for _, e in ipairs(expected) do
    local outcome = map[e[1]]
    if e[2] == "error" then
      raised(outcome, "require('" .. e[1] .. "')", e[3])
      H.check(outcome == nil or not outcome:find("ok outside", 1, true), "require('" .. e[1] .. "') did not load a file outside")
    else
      H.check(outcome == e[2], "require('" .. e[1] .. "') gives " .. e[2] .. ", got " .. tostring(outcome))
    end
  end
  H.served(w)
  sf.plugins.unload("require-module-files")
  H.served(w, true)
end

-- 8: package.searchpath (and loadlib, cpath) gone from plugins; the probe is a FIFO.
cases["package-searchpath"] = function()
  atSave("package-searchpath", { deny = false }, { probe = fifo() })()
end

-- 9: string.rep of the empty string 1e10 times, and string.rep's answers.
cases["string-rep-empty"] = atSave("string-rep-empty", { deny = false })

-- 11: shared subtables and repeated strings walked by the encoder. The walk stops past 100,000
-- values or 16 MiB of text; when the budget ran out first (a debug build walks slowly) the
-- reason is the budget's.
cases["json-encode-dag"] = atSave("json-encode-dag", { deny = true, oneOf = { "more than 100000 values", BUDGET } }, { kind = "dag" })
cases["json-encode-amplify"] = atSave("json-encode-dag", { deny = true, oneOf = { "longer than 16 MiB", BUDGET }, rounds = 1 },
  { kind = "amplify" })
-- (the same finding, one value: the encoder's work per byte of a control character)
cases["json-encode-control-chars"] = atSave("json-encode-dag", { rounds = 1 }, { kind = "control" })

-- 12: init.lua's table carries a 2^40-path DAG (the copy stops past 100,000 values, or the
-- budget first).
cases["init-returns-dag"] = atLoad("init-returns-dag", true, nil, { "more than 100000 values", BUDGET })

-- 13: init.lua at exactly 1 MiB loads; one byte more is refused, naming the file.
cases["init-over-1mib"] = function()
  local w = H.world()
  local dir = generated() .. "/init-over-1mib"
  sh("mkdir -p " .. quoted(dir))
  local source = readAll(CORPUS .. "/init-over-1mib/init.lua")
  writeAll(dir .. "/init.lua", padded(source, 1024 * 1024))
  local ok, err = H.timed("load init-over-1mib at 1 MiB", 2, sf.plugins.load, "init-over-1mib")
  H.check(ok and H.isLoaded("init-over-1mib"), "an init.lua of exactly 1 MiB loads: " .. tostring(err))
  if ok then sf.plugins.unload("init-over-1mib") end
  writeAll(dir .. "/init.lua", padded(source, 1024 * 1024 + 1))
  ok, err = H.timed("load init-over-1mib at 1 MiB + 1", 2, sf.plugins.load, "init-over-1mib")
  H.check(not ok, "an init.lua of 1 MiB + 1 byte is refused")
  print("load failed: " .. tostring(err):gsub("\n.*", ""))
  for _, part in ipairs{ "init-over-1mib/init.lua", "larger than 1 MiB" } do
    H.check(tostring(err):find(part, 1, true) ~= nil, "the load error names '" .. part .. "': " .. tostring(err):sub(1, 300))
  end
  H.check(#tostring(err) < 1024, "the load error is one short line, got " .. #tostring(err) .. " bytes")
  H.check(not H.isLoaded("init-over-1mib"), "the refused plugin is not listed")
  H.served(w, true)
end

-- 14: a 16 MiB reason: cut before the host keeps it; the host does not grow per call.
local function residentKiB()
  local f = io.open("/proc/self/status", "r")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return tonumber(text:match("VmRSS:%s*(%d+)"))
end

local function hugeReason(kind, maxBytes)
  return function()
    local w = H.world()
    if not H.load("deny-huge-reason", { kind = kind }) then return end
    local rss = {}
    for round = 1, 16 do
      local record, share = H.share(w, "doc")
      local ok, _, err = H.timed("deny-huge-reason share.save #" .. round, 1, w.db.modifyRecords, w.db, { save = { record, share } })
      H.check(ok, "modifyRecords returns instead of raising")
      local e = H.denial(err)
      if H.check(e ~= nil, "the save is denied") then
        H.check(#e.message <= maxBytes + 256, "the caller's error holds at most about " .. maxBytes .. " bytes of the reason, got "
          .. #e.message)
        H.check(e.message:find("deny-huge-reason/hostile", 1, true) ~= nil, "the caller's error names the policy")
      end
      local d = H.lastDecision()
      if H.check(d ~= nil and d.allow == false and d.reasons[1] ~= nil, "the decision log shows the denial") then
        H.check(#d.reasons[1] <= maxBytes + 256, "the logged reason holds at most about " .. maxBytes .. " bytes, got " .. #d.reasons[1])
        if round == 1 then print("reason: " .. #d.reasons[1] .. " bytes: " .. d.reasons[1]:sub(1, 100) .. "...") end
      end
      collectgarbage()
      rss[round] = residentKiB()
    end
    print("host resident memory by round (KiB): " .. table.concat(rss, " "))
    if rss[16] then
      -- From round 5 on the reason is 16 MiB each time; the plugin's garbage makes the host's
      -- size swing by a few tens of MiB, so compare the highest of rounds 5-10 and 11-16: six
      -- more reasons kept whole would add 96 MiB.
      local function highest(from, to)
        local m = 0
        for i = from, to do m = math.max(m, rss[i]) end
        return m
      end
      local grew = highest(11, 16) - highest(5, 10)
      H.check(grew < 48 * 1024, string.format("the host grew by %d KiB over six denials with a 16 MiB reason", grew))
    else
      H.note("no /proc/self/status here: the host's memory is not measured")
    end
    H.served(w)
    sf.plugins.unload("deny-huge-reason")
    H.served(w, true)
  end
end

cases["deny-huge-reason"] = hugeReason("deny", 1024)
cases["error-huge-message"] = hugeReason("error", 8192)

-- 16: a chain of twelve plugins (copies of budget-chain-link), each spinning 15 ms and calling
-- the next one, nested.
local LINKS = 12

local function chain(via)
  return function()
    local w = H.world()
    local template = readAll(CORPUS .. "/budget-chain-link/init.lua")
    for i = 1, LINKS do
      local dir = generated() .. "/budget-chain-" .. i
      sh("mkdir -p " .. quoted(dir))
      local text, n = template:gsub("\nlocal index = 0\n", "\nlocal index = " .. i .. "\n", 1)
      assert(n == 1, "budget-chain-link/init.lua sets `local index = 0` on a line of its own")
      writeAll(dir .. "/init.lua", text)
      sf.accounts.create{ email = "chain" .. i .. "@example.com" }
    end
    for i = 1, LINKS do
      if not H.load("budget-chain-" .. i, { via = via, links = LINKS }) then return end
    end
    if via == "policy" then
      local record, share = H.share(w, "chain-1")
      local ok, saved, err = H.timed("budget-chain share.save (" .. LINKS .. " links)", 1, w.db.modifyRecords, w.db,
        { save = { record, share } })
      if H.check(ok, "modifyRecords returns instead of raising: " .. tostring(saved)) then
        H.expectDenied(err, "the chain's save", { "budget-chain-1/link", "CPU budget" })
        H.check(w.db:fetchRecord(share.recordID) == nil, "the denied share was not stored")
      end
    else
      local ok, participants, err = H.timed("budget-chain participant.fetched (" .. LINKS .. " links)", 1,
        w.c.fetchShareParticipants, w.c, { "chain1@example.com" })
      H.check(ok and participants ~= nil and participants[1] ~= nil and err == nil,
        "the fetch that started the chain is served: " .. tostring(ok and err or participants))
    end
    H.served(w, true)
  end
end

cases["budget-chain-policies"] = chain("policy")
cases["budget-chain-observers"] = chain("observer")

-- 17: utf8.len over a 24 MiB string (the plugin grows it over a few events first).
cases["budget-utf8-len"] = function()
  local w = H.world()
  if not H.load("budget-utf8-len") then return end
  local size
  for _ = 1, 20 do
    w.c:fetchShareParticipants{ "carol@example.com" }
    local lines = H.lines("budget-utf8-len", "results.log")
    size = tonumber((lines[#lines] or ""):match("^size (%d+)$"))
    if size and size >= 24 * 1024 * 1024 then break end
  end
  if not H.check(size and size >= 24 * 1024 * 1024, "the plugin grew its string to 24 MiB (the case's precondition), got "
    .. tostring(size)) then
    return
  end
  for round = 1, 2 do
    local record, share = H.share(w, "doc")
    local ok, _, err = H.timed("budget-utf8-len share.save #" .. round, 1, w.db.modifyRecords, w.db, { save = { record, share } })
    if H.check(ok, "modifyRecords returns instead of raising") then
      H.expectDenied(err, "the save", { "plugin 'budget-utf8-len': " .. BUDGET })
    end
  end
  H.served(w)
  sf.plugins.unload("budget-utf8-len")
  H.served(w, true)
end

---------------------------------------------------------------------------------------------
-- Others

-- One plugin poisons its own string metatable and library tables; another plugin's string
-- methods and the host keep working (run with --plugins hostile --plugins Plugins).
cases["string-metatable-poison"] = function()
  local w = H.world()
  sf.accounts.create{ email = "eve@elsewhere.test" }
  local _, share, metadata = H.invited(w)
  local record2, share2 = H.share(w, "eve's", { "eve@elsewhere.test" })
  assert(not select(2, w.db:modifyRecords{ save = { record2, share2 } }))
  local ec = sf.as("eve@elsewhere.test"):container(H.CONTAINER)
  local eveMetadata = ec:fetchShareMetadata{ share2.url }[share2.url]
  if not H.load("string-metatable-poison") then return end
  if not H.load("domain-allowlist", { domains = { "example.com" } }) then return end
  local _, err = w.bc:acceptShares{ metadata }
  H.check(err == nil, "Bob (example.com) is allowed: " .. tostring(err))
  H.check(w.bc:fetchShareMetadata{ share.url }[share.url].participantStatus == "accepted", "Bob is accepted")
  local _, err2 = ec:acceptShares{ eveMetadata }
  H.expectDenied(err2, "Eve's accept", { "domain-allowlist/accept", "has no email in an allowed domain (example.com)" })
  H.served(w)
end

-- (issue 9) States are closed at exit: the script's own state runs its finalizers when the
-- process ends normally. Prints "gc at exit" after "ok ...".
cases["script-gc-at-exit"] = function()
  local w = H.world()
  H.load("benign-observer")
  package.loaded["hostile.keep"] = setmetatable({}, { __gc = function()
    io.stdout:write("gc at exit\n")
    io.stdout:flush()
  end })
  H.served(w)
end

-- For configs that turn a hostile plugin on at startup: the plugins loaded; serve.
cases["startup"] = function()
  local w = H.world()
  print("loaded: " .. table.concat(sf.plugins.loaded(), ", "))
  H.served(w)
end

---------------------------------------------------------------------------------------------

local run = cases[case]
if not run then
  local names = {}
  for name in pairs(cases) do names[#names + 1] = name end
  table.sort(names)
  error("unknown case '" .. tostring(case) .. "'; cases: " .. table.concat(names, " "), 0)
end
run()
H.finish(case)
