-- SPEC §15: fault rules armed from Lua make the engine fail as CloudKit does.
-- Run: shareflow test Tests/lua
local sf = require("shareflow")
local helpers = require("helpers")
local errorFor = helpers.errorFor

local function note(w, name, zone)
  return sf.Record{ recordType = "Note", recordName = name, zone = zone or w.zone, fields = { n = 1 } }
end

test("§15: a request-level fault is the call's error, with retryAfter, and count ends it", function()
  local w = helpers.world()
  local rule = sf.faults.add{ operation = "modifyRecords", fault = "requestRateLimited", retryAfter = 7, count = 1 }
  expect.eq(rule.id, sf.faults.list()[1].id)
  local saved, err = w.db:modifyRecords{ save = { w.trip } }
  expect.eq(saved, nil)
  expect.eq(err.code, "requestRateLimited")
  expect.eq(err.codeNumber, 7)
  expect.eq(err.retryAfter, 7)
  expect.eq(select(2, w.db:fetchRecord(w.trip.recordID)).code, "unknownItem", "nothing was written")
  saved, err = w.db:modifyRecords{ save = { w.trip } }
  expect.eq(err, nil, "count = 1: the second call goes through")
  expect.eq(#saved, 1)
  expect.eq(rule:remove(), true)
  expect.eq(rule:remove(), false)
end)

test("§15: each fault's native code", function()
  local w = helpers.world()
  assert(select(2, w.db:modifyRecords{ save = { w.trip } }) == nil)
  for fault, code in pairs{ serviceUnavailable = "serviceUnavailable", quotaExceeded = "quotaExceeded",
                            networkFailure = "networkFailure" } do
    local rule = sf.faults.add{ operation = "fetchRecords", fault = fault }
    local record, err = w.db:fetchRecord(w.trip.recordID)
    expect.eq(record, nil, fault)
    expect.eq(err.code, code, fault)
    rule:remove()
  end
  expect.truthy(w.db:fetchRecord(w.trip.recordID), "no rule: the record")
end)

test("§15: partialFailure fails the matched items of a non-atomic modify while the others commit", function()
  local w = helpers.world()
  local first = note(w, "bad-1")
  assert(select(2, w.db:modifyRecords{ save = { first } }) == nil)
  sf.faults.add{ operation = "records/modify", recordName = "bad-*", fault = "partialFailure" }
  first.fields.n = 2
  local fresh, other = note(w, "bad-2"), note(w, "good-1")
  local saved, err = w.db:modifyRecords{ save = { first, fresh, other }, atomic = false }
  expect.eq(#saved, 1)
  expect.eq(saved[1].recordName, "good-1")
  expect.eq(err.code, "partialFailure")
  local conflict = errorFor(err, first)
  expect.eq(conflict.code, "serverRecordChanged")
  expect.eq(conflict.serverRecord.fields.n, 1, "the server's record, as a real conflict carries")
  expect.eq(errorFor(err, fresh).code, "serverRecordChanged")
  expect.truthy(w.db:fetchRecord(other.recordID), "the other item committed")
  expect.eq(select(2, w.db:fetchRecord(fresh.recordID)).code, "unknownItem")
  expect.eq(w.db:fetchRecord(first.recordID).fields.n, 1)

  -- Atomic: the batch fails as R22 says.
  local third = note(w, "good-2")
  saved, err = w.db:modifyRecords{ save = { note(w, "bad-3"), third } }
  expect.eq(#saved, 0)
  expect.eq(errorFor(err, third).code, "batchRequestFailed")
  expect.eq(select(2, w.db:fetchRecord(third.recordID)).code, "unknownItem")
  sf.faults.clear()
end)

test("§15: partialFailure's item codes and zoneBusy per item carry what CloudKit's do", function()
  local w = helpers.world()
  sf.faults.add{ recordName = "q-*", fault = "partialFailure", itemCode = "quotaExceeded" }
  sf.faults.add{ recordName = "l-*", fault = "partialFailure", itemCode = "limitExceeded" }
  sf.faults.add{ recordName = "z-*", fault = "zoneBusy", retryAfter = 2 }
  local q, l, z = note(w, "q-1"), note(w, "l-1"), note(w, "z-1")
  local _, err = w.db:modifyRecords{ save = { q, l, z, note(w, "ok") }, atomic = false }
  expect.eq(errorFor(err, q).code, "quotaExceeded")
  expect.eq(errorFor(err, l).code, "limitExceeded")
  expect.eq(errorFor(err, z).code, "zoneBusy")
  expect.eq(errorFor(err, z).retryAfter, 2)
  expect.eq(#sf.faults.history(), 3, "one entry per failed item")
  expect.eq(sf.faults.history()[3].recordName, "z-1")
  sf.faults.clear()
end)

test("§15: networkFailure after commit leaves the write applied and answers an error", function()
  local w = helpers.world()
  sf.faults.add{ operation = "modifyRecords", fault = "networkFailure", when = "afterCommit", count = 1 }
  local saved, err = w.db:modifyRecords{ save = { w.trip } }
  expect.eq(saved, nil)
  expect.eq(err.code, "networkFailure")
  expect.eq(w.db:fetchRecord(w.trip.recordID).fields.title, "Lisbon", "the write stays")
  sf.faults.add{ operation = "modifyRecords", fault = "networkFailure", count = 1 }
  local other = note(w, "before")
  saved, err = w.db:modifyRecords{ save = { other } }
  expect.eq(err.code, "networkFailure")
  expect.eq(select(2, w.db:fetchRecord(other.recordID)).code, "unknownItem", "before commit: nothing written")
  sf.faults.clear()
end)

test("§15: the feeds: changeTokenExpired and zoneBusy per zone, zonePurged in the database feed", function()
  local w = helpers.world()
  assert(select(2, w.db:modifyRecords{ save = { w.trip } }) == nil)
  local start = assert(w.db:databaseChanges())
  local rule = sf.faults.add{ operation = "recordZoneChanges", zone = "Trips", fault = "changeTokenExpired", count = 1 }
  -- A fetch from the start is the recovery the error asks for: never struck.
  local first = assert(w.db:recordZoneChanges{ zoneID = w.zone })
  local page, err = w.db:recordZoneChanges{ zoneID = w.zone, since = first.changeToken }
  expect.eq(page, nil)
  expect.eq(err.code, "changeTokenExpired")
  rule:remove()
  rule = sf.faults.add{ operation = "databaseChanges", fault = "changeTokenExpired" }
  assert(w.db:databaseChanges(), "no token: not struck")
  expect.eq(select(2, w.db:databaseChanges{ since = start.changeToken }).code, "changeTokenExpired")
  rule:remove()
  sf.faults.add{ operation = "changes/zone", fault = "zoneBusy", retryAfter = 4, count = 1 }
  page, err = w.db:recordZoneChanges{ zoneID = w.zone }
  expect.eq(err.code, "zoneBusy")
  expect.eq(err.retryAfter, 4)
  expect.truthy(w.db:recordZoneChanges{ zoneID = w.zone }, "count = 1")

  sf.faults.add{ fault = "zonePurged", zone = "Trips", count = 1 }
  page = assert(w.db:databaseChanges{ since = start.changeToken })
  expect.eq(#page.modifications, 0)
  expect.eq(page.deletions[1].zoneID.zoneName, "Trips")
  expect.eq(page.deletions[1].reason, "purged")
  expect.truthy(w.db:fetchRecord(w.trip.recordID), "only reported: the data stay")

  -- The operation: the purged block, not the deleted one.
  sf.faults.add{ fault = "zonePurged", zone = "Trips", count = 1 }
  local purged, deleted = {}, {}
  local op = sf.FetchDatabaseChangesOperation{ previousServerChangeToken = start.changeToken }
  op.recordZoneWithIDWasPurgedBlock = function(id) purged[#purged + 1] = id.zoneName end
  op.recordZoneWithIDWasDeletedBlock = function(id) deleted[#deleted + 1] = id.zoneName end
  op.database = w.db
  w.c:add(op)
  op:wait()
  expect.eq(purged[1], "Trips")
  expect.eq(#deleted, 0)
  sf.faults.clear()

  -- A queued operation is the same request to rules: a token sent, changeTokenExpired strikes.
  sf.faults.add{ operation = "databaseChanges", fault = "changeTokenExpired" }
  local function fetchFrom(token)
    local fetch = sf.FetchDatabaseChangesOperation{ previousServerChangeToken = token }
    local failure
    fetch.fetchDatabaseChangesResultBlock = function(_, e) failure = e end
    fetch.database = w.db
    w.c:add(fetch)
    fetch:wait()
    return failure
  end
  expect.eq(fetchFrom(nil), nil, "no token: not struck")
  expect.eq(fetchFrom(start.changeToken).code, "changeTokenExpired")
  sf.faults.clear()
end)

test("§15: an operation's request-level fault is its error, and each item's", function()
  local w = helpers.world()
  sf.faults.add{ operation = "records/modify", fault = "serviceUnavailable", retryAfter = 5 }
  local op = sf.ModifyRecordsOperation{ recordsToSave = { w.trip }, recordIDsToDelete = { w.day.recordID } }
  local result
  local saves, deletes = {}, {}
  op.modifyRecordsResultBlock = function(r) result = r end
  op.perRecordSaveBlock = function(_, _, err) saves[#saves + 1] = err and err.code end
  op.perRecordDeleteBlock = function(_, err) deletes[#deletes + 1] = err and err.code end
  op.database = w.db
  w.c:add(op)
  op:wait()
  expect.eq(op.error.code, "serviceUnavailable")
  expect.eq(op.error.retryAfter, 5)
  expect.eq(#saves, 1, "each item's block once, with the request's error (O2)")
  expect.eq(saves[1], "serviceUnavailable")
  expect.eq(#deletes, 1)
  expect.eq(deletes[1], "serviceUnavailable")
  sf.faults.clear()

  assert(select(2, w.db:modifyRecords{ save = { w.trip } }) == nil)
  sf.faults.add{ operation = "fetchRecords", fault = "requestRateLimited", count = 1 }
  local before = #sf.faults.history()
  local fetch = sf.FetchRecordsOperation{ recordIDs = { w.trip.recordID, w.day.recordID } }
  local items = {}
  fetch.perRecordResultBlock = function(_, _, err) items[#items + 1] = err and err.code end
  fetch.database = w.db
  w.c:add(fetch)
  fetch:wait()
  expect.eq(fetch.error.code, "requestRateLimited", "the request's error, not a partial failure")
  expect.eq(#items, 2, "each item's block once (O2)")
  expect.eq(#sf.faults.history(), before + 1, "one request, one injection")
  sf.faults.clear()
  expect.eq(result ~= nil, true)
end)

test("§15: rules match what they name: other callers, zones and operations are untouched", function()
  local w = helpers.world()
  sf.faults.add{ caller = "bob@example.com", fault = "requestRateLimited" }
  sf.faults.add{ zone = "Elsewhere", fault = "serviceUnavailable" }
  sf.faults.add{ operation = "query", fault = "quotaExceeded" }
  assert(select(2, w.db:modifyRecords{ save = { w.trip } }) == nil)
  expect.truthy(w.db:fetchRecord(w.trip.recordID))
  local _, err = w.bc.privateCloudDatabase:saveZone("Bob's")
  expect.eq(err.code, "requestRateLimited", "Bob is throttled")
  expect.eq(#sf.faults.history(), 1)
  expect.eq(sf.faults.history()[1].caller, "bob@example.com")
  sf.faults.clear()
end)

test("§15: the same seed replays the same faults; history and fault.injected record each", function()
  local w = helpers.world()
  local function run(seed)
    sf.faults.clear()
    sf.faults.add{ operation = "fetchRecords", fault = "serviceUnavailable", probability = 0.5, seed = seed }
    local pattern = {}
    for i = 1, 40 do
      local _, err = w.db:fetchRecord(sf.RecordID{ recordName = "n" .. i, zoneID = w.zone.zoneID })
      pattern[i] = err.code == "serviceUnavailable" and "x" or "."
    end
    return table.concat(pattern)
  end
  local events = {}
  local hook = sf.on("fault.injected", function(ev) events[#events + 1] = ev end)
  local a = run(42)
  expect.eq(run(42), a)
  expect.truthy(run(43) ~= a, "another seed, other faults")
  expect.truthy(a:find("x") and a:find("%."), "about half: " .. a)
  hook:remove()
  local ev = events[1]
  expect.eq(ev.name, "fault.injected")
  expect.eq(ev.fault, "serviceUnavailable")
  expect.eq(ev.operation, "fetchRecords")
  expect.eq(ev.caller, "alice@example.com")
  expect.eq(ev.zone, "Trips")
  expect.eq(type(ev.rule), "number")
  local h = sf.faults.history()
  expect.eq(h[#h].fault, "serviceUnavailable")
  sf.faults.clear()
end)

test("§15: latency alone delays and fails nothing", function()
  local w = helpers.world()
  sf.faults.add{ operation = "modifyRecords", latencyMs = 60 }
  local t = os.clock()
  local start = os.time()
  assert(select(2, w.db:modifyRecords{ save = { w.trip } }) == nil)
  expect.truthy(os.time() - start <= 2 and os.clock() >= t)
  expect.eq(sf.faults.history()[1].fault, "latency")
  sf.faults.clear()
end)

test("§15: a bad rule is an error naming the key and what was given", function()
  local function err(rule)
    local ok, e = pcall(sf.faults.add, rule)
    expect.eq(ok, false)
    return tostring(e)
  end
  expect.truthy(err{ fault = "zoneBusy", probability = 2 }:find("sf.faults.add.probability must be a number from 0 to 1, got 2", 1, true))
  expect.truthy(err{ fault = "nope" }:find("sf.faults.add.fault must be one of", 1, true))
  expect.truthy(err{ fault = "zoneBusy", colour = "red" }:find("unknown key 'colour'", 1, true))
  expect.truthy(err{ fault = "zoneBusy", count = 0 / 0 }:find("sf.faults.add.count", 1, true))
  expect.truthy(err{ fault = "zoneBusy", zone = {} }:find("got a table", 1, true))
  expect.truthy(err{ "zoneBusy" }:find("fields are named", 1, true))
  expect.truthy(err{}:find("no fault and no latencyMs", 1, true))
  expect.truthy(err{ fault = "zoneBusy", itemCode = "limitExceeded" }:find("itemCode applies to fault partialFailure only", 1, true))
  expect.truthy(err(nil):find("table expected", 1, true))
  local weird = setmetatable({}, { __index = function() error("boom") end, __pairs = function() error("boom") end })
  expect.truthy(err(weird):find("no fault", 1, true), "read raw: no metamethod runs")
  expect.eq(#sf.faults.list(), 0)
end)

test("§15: sf.faults.list() shows a plugin's rule with its fields, as any other", function()
  sf.plugins.load("chaos", { rules = { { operation = "records/modify", fault = "zoneBusy", retryAfter = 2 } }, seed = 5 })
  local rule = sf.faults.list()[1]
  sf.plugins.unload("chaos")
  expect.eq(rule.owner, "plugin")
  expect.eq(rule.plugin, "chaos")
  expect.eq(rule.operation, "records/modify")
  expect.eq(rule.fault, "zoneBusy")
  expect.eq(rule.retryAfter, 2)
  expect.eq(rule.seed, 5)
  expect.eq(#sf.faults.list(), 0, "its rules end when it unloads")
end)

test("§15: an operation's callback makes requests of its own: a retry in it is not the failed request again", function()
  local w = helpers.world()
  sf.faults.add{ operation = "modifyRecords", fault = "requestRateLimited", count = 1 }
  local retried, retryErr
  local op = sf.ModifyRecordsOperation{ recordsToSave = { w.trip } }
  op.modifyRecordsResultBlock = function(result)
    retried, retryErr = w.db:modifyRecords{ save = { w.trip } }
  end
  op.database = w.db
  w.c:add(op)
  op:wait()
  expect.eq(op.error.code, "requestRateLimited")
  expect.eq(retryErr, nil, "count = 1: the retry goes through")
  expect.eq(#retried, 1)
  sf.faults.clear()

  -- A rule aimed at the callback's own request is asked, once.
  sf.faults.add{ operation = "fetchRecords", fault = "quotaExceeded", count = 1 }
  local fetched, fetchErr
  local op2 = sf.ModifyRecordsOperation{ recordsToSave = { w.day } }
  op2.modifyRecordsResultBlock = function() fetched, fetchErr = w.db:fetchRecord(w.trip.recordID) end
  op2.database = w.db
  w.c:add(op2)
  op2:wait()
  expect.eq(op2.error, nil)
  expect.eq(fetched, nil)
  expect.eq(fetchErr.code, "quotaExceeded")
  sf.faults.clear()

  -- After commit: the callback's read is not the lost answer.
  sf.faults.add{ operation = "modifyRecords", fault = "networkFailure", when = "afterCommit", count = 1 }
  local op3 = sf.ModifyRecordsOperation{ recordsToSave = { w.day } }
  op3.modifyRecordsResultBlock = function() fetched, fetchErr = w.db:fetchRecord(w.day.recordID) end
  op3.database = w.db
  w.c:add(op3)
  op3:wait()
  expect.eq(op3.error.code, "networkFailure")
  expect.eq(fetchErr, nil)
  expect.truthy(fetched)
  sf.faults.clear()
end)

test("§15: the chaos plugin's numbered seeds wrap at the top instead of failing its setup", function()
  sf.plugins.load("chaos", { rules = { { fault = "zoneBusy" }, { fault = "zoneBusy" } }, seed = 9007199254740991 })
  local rules = sf.faults.list()
  sf.plugins.unload("chaos")
  expect.eq(#rules, 2)
  expect.eq(rules[1].seed, 9007199254740991)
  expect.eq(rules[2].seed, 0)
end)

test("§15: what a fault.injected observer does with the engine asks no rule: no injection loop", function()
  local w = helpers.world()
  assert(select(2, w.db:modifyRecords{ save = { w.trip } }) == nil)
  sf.faults.add{ fault = "serviceUnavailable", operation = "fetchRecords" }
  local seen, fetched, retried = 0, nil, nil
  local hook = sf.on("fault.injected", function()
    seen = seen + 1
    fetched = w.db:fetchRecord(w.trip.recordID)
    -- An operation's callback inside the observer asks none either.
    local op = sf.FetchRecordsOperation{ recordIDs = { w.trip.recordID } }
    op.fetchRecordsResultBlock = function() retried = w.db:fetchRecord(w.trip.recordID) end
    op.database = w.db
    w.c:add(op)
    op:wait()
  end)
  local record, err = w.db:fetchRecord(w.trip.recordID)
  hook:remove()
  expect.eq(record, nil)
  expect.eq(err.code, "serviceUnavailable")
  expect.eq(seen, 1, "one injection, one event")
  expect.eq(#sf.faults.history(), 1)
  expect.truthy(fetched, "the observer's own fetch ran")
  expect.truthy(retried, "and its operation's callback's")
  sf.faults.clear()
end)
