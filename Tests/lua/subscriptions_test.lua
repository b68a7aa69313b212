-- SPEC §20 N1–N2 (subscriptions and subscription.fired) through the Lua API.
-- Run: shareflow test Tests/lua/subscriptions_test.lua
local sf = require("shareflow")
local helpers = require("helpers")

local function ids(list)
  local out = {}
  for _, s in ipairs(list) do out[#out + 1] = s.subscriptionID end
  return table.concat(out, ",")
end

local function save(db, records)
  local _, err = db:modifyRecords{ save = records }
  assert(err == nil, tostring(err))
end

test("N1: the constructors make subscription tables; tostring names kind, ID and zone", function()
  local w = helpers.world()
  local q = sf.QuerySubscription{ subscriptionID = "long", recordType = "Trip", zone = w.zone,
    predicate = "stops > %@ AND title BEGINSWITH 'L'", arguments = { 2 },
    firesOn = { "delete", "create" }, firesOnce = true,
    notificationInfo = { alertBody = "A long trip", additionalFields = { "title", "stops" }, shouldBadge = true } }
  expect.eq(getmetatable(q), "Subscription")
  expect.eq(q.subscriptionID, "long"); expect.eq(q.subscriptionType, "query"); expect.eq(q.recordType, "Trip")
  expect.eq(q.predicate, "stops > 2 AND title BEGINSWITH 'L'", "values written into the format")
  expect.eq(q.arguments, nil)
  expect.eq(q.zoneID.zoneName, "Trips")
  expect.eq(table.concat(q.firesOn, ","), "create,delete"); expect.eq(q.firesOnce, true)
  expect.eq(q.notificationInfo.alertBody, "A long trip"); expect.eq(q.notificationInfo.shouldBadge, true)
  expect.eq(table.concat(q.notificationInfo.additionalFields, ","), "title,stops")
  expect.eq(tostring(q), "Subscription(query long: Trip in Trips)")

  local every = sf.QuerySubscription{ recordType = "Trip" }
  expect.eq(every.predicate, "TRUEPREDICATE"); expect.eq(every.zoneID, nil); expect.eq(every.firesOnce, false)
  expect.eq(table.concat(every.firesOn, ","), "create,update,delete")
  expect.eq(#every.subscriptionID, 36, "a UUID by default")
  expect.contains(tostring(every), "Trip in every zone")

  -- Values the format cannot spell are arguments; the text reads back to the same filter.
  local near = sf.QuerySubscription{ recordType = "Trip", arguments = { sf.Location{ latitude = 38.7, longitude = -9.1 }, sf.Date(1e9) },
    predicate = "NOT (stops IN {1, 2}) AND ANY tags == 'x' AND distanceToLocation:fromLocation:(place, %@) < 500 AND creationDate > %@" }
  expect.eq(near.predicate, "NOT (stops IN {1, 2}) AND ANY tags == 'x' AND distanceToLocation:fromLocation:(place, %@) < 500.0 AND creationDate > %@")
  expect.eq(#near.arguments, 2); expect.eq(near.arguments[2], sf.Date(1e9))
  local again = sf.QuerySubscription{ recordType = "Trip", predicate = near.predicate, arguments = near.arguments }
  expect.eq(again.predicate, near.predicate)

  local z = sf.RecordZoneSubscription{ subscriptionID = "trips", zoneID = w.zone.zoneID, notificationInfo = { soundName = "ping" } }
  expect.eq(z.subscriptionType, "zone"); expect.eq(z.zoneID.zoneName, "Trips"); expect.eq(z.notificationInfo.soundName, "ping")
  expect.eq(z.recordType, nil); expect.eq(z.firesOn, nil)
  expect.eq(tostring(z), "Subscription(zone trips: Trips)")
  local d = sf.DatabaseSubscription()
  expect.eq(d.subscriptionType, "database"); expect.eq(d.zoneID, nil); expect.eq(#d.subscriptionID, 36)
  expect.eq(tostring(sf.DatabaseSubscription{ subscriptionID = "all" }), "Subscription(database all)")
end)

test.cases("N1: a bad constructor argument is an error naming the argument and the field", {
  { function() sf.QuerySubscription{ predicate = "x == 1" } end, "bad argument #1 to 'QuerySubscription' %(field 'recordType' is required%)" },
  { function() sf.QuerySubscription{ recordType = "Trip", sortDescriptors = { "x" } } end, "unknown field 'sortDescriptors'" },
  { function() sf.QuerySubscription{ recordType = "Trip", subscriptionType = "zone" } end, "unknown field 'subscriptionType'" },
  { function() sf.QuerySubscription{ recordType = "Trip", firesOn = { "explode" } } end,
    "bad argument #1 to 'QuerySubscription' %(field 'firesOn%[1%]' must be one of create, update, delete, got 'explode'%)" },
  { function() sf.QuerySubscription{ recordType = "Trip", firesOn = {} } end, "field 'firesOn' must name at least one" },
  { function() sf.QuerySubscription{ recordType = "Trip", firesOn = "create" } end, "field 'firesOn' must be a list of strings, got string" },
  { function() sf.QuerySubscription{ recordType = "Trip", firesOnce = 0 / 0 } end, "field 'firesOnce' must be a boolean, got number" },
  { function() sf.QuerySubscription{ recordType = "Trip", predicate = "stops >>= 3" } end, "at character 8" },
  { function() sf.QuerySubscription{ recordType = "Trip", predicate = "stops > %@", arguments = { 0 / 0 } } end, "finite" },
  { function() sf.QuerySubscription{ recordType = "Trip", subscriptionID = "" } end, "field 'subscriptionID' must not be empty" },
  { function() sf.RecordZoneSubscription{ subscriptionID = "z" } end,
    "bad argument #1 to 'RecordZoneSubscription' %(field 'zone' is required" },
  { function() sf.RecordZoneSubscription{ zoneID = { zoneName = "Z", ownerName = "_o" }, recordType = "Trip" } end, "unknown field 'recordType'" },
  { function() sf.DatabaseSubscription("all") end, "bad argument #1 to 'DatabaseSubscription' %(table expected, got string%)" },
  { function() sf.DatabaseSubscription{ notificationInfo = "hello" } end, "field 'notificationInfo' must be a table, got string" },
  { function() sf.DatabaseSubscription{ notificationInfo = { bogus = true } } end, "notificationInfo: unknown field 'bogus'" },
  { function() sf.DatabaseSubscription{ notificationInfo = { alertBody = 3 } } end, "field 'notificationInfo.alertBody' must be a string, got number" },
  { function() sf.DatabaseSubscription{ notificationInfo = { shouldBadge = "yes" } } end, "field 'notificationInfo.shouldBadge' must be a boolean" },
  { function() sf.DatabaseSubscription{ notificationInfo = { additionalFields = { "a", 2 } } } end,
    "field 'notificationInfo.additionalFields%[2%]' must be a string, got number" },
}, function(row)
  expect.raises(row[1], row[2])
end)

test("N1: hostile values are refused or read raw, bounded, before anything is copied", function()
  local w = helpers.world()
  -- A 10 MB ID and text, 10,000 field names: measured, not copied.
  expect.raises(function() sf.DatabaseSubscription{ subscriptionID = string.rep("x", 10 * 1024 * 1024) } end,
    "field 'subscriptionID' is 10485760 bytes; at most 255")
  expect.raises(function() sf.DatabaseSubscription{ notificationInfo = { alertBody = string.rep("x", 1025) } } end, "at most 1024")
  local many = {}
  for i = 1, 10000 do many[i] = "f" .. i end
  expect.raises(function() sf.QuerySubscription{ recordType = "Trip", notificationInfo = { additionalFields = many } } end,
    "field 'notificationInfo.additionalFields' lists 10000 items; at most 16")
  expect.raises(function() sf.QuerySubscription{ recordType = "Trip", firesOn = { "create", "update", "delete", "create" } } end, "at most 3")
  expect.raises(function() w.db:fetchSubscription(string.rep("x", 10 * 1024 * 1024)) end,
    "bad argument #1 to 'fetchSubscription' %(a subscriptionID is 1–255 bytes, got 10485760%)")
  -- A metatable whose __index raises is never consulted: fields are read raw.
  local trap = setmetatable({ recordType = "Trip" }, { __index = function() error("trapped") end })
  expect.eq(sf.QuerySubscription(trap).recordType, "Trip")
  local info = setmetatable({}, { __index = function() error("trapped") end, __pairs = function() error("trapped") end })
  expect.eq(sf.DatabaseSubscription{ notificationInfo = info }.notificationInfo.alertBody, nil)
  -- A cyclic zone table is read one level down; a deeply nested argument is a list of lists.
  local zone = { zoneName = "Trips", ownerName = w.alice.userRecordID }
  zone.zoneID = zone
  expect.eq(sf.RecordZoneSubscription{ zone = zone }.zoneID.zoneName, "Trips")
  local deep = {}
  for _ = 1, 10000 do deep = { deep } end
  expect.raises(function() sf.QuerySubscription{ recordType = "Trip", predicate = "x == %@", arguments = { deep } } end, "list of lists")
  -- A predicate nested 10,000 deep is refused before the parser recurses into it.
  expect.raises(function() sf.QuerySubscription{ recordType = "Trip", predicate = string.rep("NOT ", 10000) .. "x == 1" } end,
    "bad argument #1 to 'QuerySubscription' %(.*nested deeper than 64")
  expect.raises(function() w.db:query{ recordType = "Trip", predicate = string.rep("(", 10000) .. "x == 1" .. string.rep(")", 10000) } end,
    "nested deeper than 64")
  expect.eq(sf.QuerySubscription{ recordType = "Trip", predicate = "notes == '" .. string.rep("(", 200) .. "' AND NOT (x != 1)" }.predicate,
    "notes == '" .. string.rep("(", 200) .. "' AND NOT (x != 1)", "quotes, names and != are not nesting")
  local cyclic = {}
  cyclic[1] = cyclic
  expect.raises(function() sf.QuerySubscription{ recordType = "Trip", predicate = "x IN %@", arguments = { cyclic } } end, "list of lists")
  local selfish = { subscriptionType = "database" }
  selfish.notificationInfo = { additionalFields = { selfish } }
  expect.raises(function() w.db:saveSubscription(selfish) end, "additionalFields%[1%]")
end)

test("N1: save, list, fetch and delete; saving again replaces (idempotent)", function()
  local w = helpers.world()
  local z, err = w.db:saveSubscription(sf.RecordZoneSubscription{ subscriptionID = "trips", zone = w.zone,
    notificationInfo = { alertBody = "Trips changed" } })
  expect.eq(err, nil)
  expect.eq(getmetatable(z), "Subscription")
  expect.eq(z.zoneID.zoneName, "Trips"); expect.eq(z.zoneID.ownerName, w.alice.userRecordID)
  local q = assert(w.db:saveSubscription(sf.QuerySubscription{ subscriptionID = "q", recordType = "Trip", zone = w.zone,
    predicate = "title == %@", arguments = { "Lisbon" }, firesOn = { "update" } }))
  expect.eq(q.predicate, "title == 'Lisbon'")
  assert(w.db:saveSubscription(sf.DatabaseSubscription{ subscriptionID = "all" }))
  -- The same tables, or the ones a save returned, saved again: still three.
  assert(w.db:saveSubscription(z)); assert(w.db:saveSubscription(q))
  z.notificationInfo.alertBody = "Changed again"
  assert(w.db:saveSubscription(z))
  local all, listErr = w.db:fetchAllSubscriptions()
  expect.eq(listErr, nil)
  expect.eq(ids(all), "trips,q,all")
  local fetched = assert(w.db:fetchSubscription("q"))
  expect.eq(fetched.predicate, "title == 'Lisbon'"); expect.eq(fetched.recordType, "Trip")
  expect.eq(table.concat(fetched.firesOn, ","), "update"); expect.eq(fetched.zoneID.zoneName, "Trips")
  expect.eq(assert(w.db:fetchSubscription("trips")).notificationInfo.alertBody, "Changed again")
  -- A plain table naming its kind is a subscription too.
  assert(w.db:saveSubscription{ subscriptionType = "query", subscriptionID = "plain", recordType = "Day" })
  expect.eq(ids(w.db:fetchAllSubscriptions()), "trips,q,all,plain")
  expect.eq(w.db:deleteSubscription("q"), true)
  local none, gone = w.db:fetchSubscription("q")
  expect.eq(none, nil); expect.code(gone, "unknownItem")
  expect.code(select(2, w.db:deleteSubscription("q")), "unknownItem")
  -- Others' subscriptions are theirs: Bob lists none of Alice's and may use the same ID.
  expect.eq(#assert(w.bc.privateCloudDatabase:fetchAllSubscriptions()), 0)
  assert(w.bc.privateCloudDatabase:saveSubscription(sf.DatabaseSubscription{ subscriptionID = "all" }))
  expect.eq(#w.db:fetchAllSubscriptions(), 3)
  -- What the engine refuses is an error value.
  expect.code(select(2, w.db:saveSubscription(sf.RecordZoneSubscription{ zoneID = { zoneName = "_defaultZone" } })), "invalidArguments")
  expect.code(select(2, w.c.publicCloudDatabase:saveSubscription(sf.DatabaseSubscription())), "invalidArguments")
  expect.code(select(2, w.db:saveSubscription(sf.RecordZoneSubscription{ zoneID = { zoneName = "Nope" } })), "zoneNotFound")
  -- A zone named without its owner is the caller's (R24).
  local named = assert(w.db:saveSubscription(sf.RecordZoneSubscription{ subscriptionID = "named", zone = "Trips" }))
  expect.eq(named.zoneID.ownerName, w.alice.userRecordID)
  assert(w.db:deleteSubscription("named"))
  expect.code(select(2, w.db:saveSubscription(sf.DatabaseSubscription{ subscriptionID = "bad\nid" })), "invalidArguments")
  -- A bad argument raises, naming it.
  expect.raises(function() w.db:saveSubscription{ subscriptionType = "explode" } end,
    "bad argument #1 to 'saveSubscription' %(subscriptionType must be query, zone or database, got 'explode'%)")
  expect.raises(function() w.db:saveSubscription{ subscriptionID = "x" } end, "without subscriptionType")
  expect.raises(function() w.db:saveSubscription("all") end, "bad argument #1 to 'saveSubscription' %(Subscription expected, got string%)")
  expect.raises(function() w.db:saveSubscription{ subscriptionType = "zone" } end, "field 'zone' is required")
  expect.raises(function() w.db:deleteSubscription(42) end, "bad argument #1 to 'deleteSubscription' %(string expected, got number%)")
  expect.raises(function() w.db:fetchSubscription("") end, "1–255 bytes, got 0")
end)

test("N2: subscription.fired tells of created, updated and deleted in order, with the fields", function()
  local w = helpers.world()
  local fired = {}
  sf.on("subscription.fired", function(ev) fired[#fired + 1] = ev end)
  assert(w.db:saveSubscription(sf.QuerySubscription{ subscriptionID = "long", recordType = "Trip", zone = w.zone,
    predicate = "stops > 2",
    notificationInfo = { alertLocalizationKey = "LONG", alertLocalizationArgs = { "title" }, additionalFields = { "title", "stops" } } }))
  local trip = sf.Record{ recordType = "Trip", recordName = "road", zone = w.zone, fields = { title = "Road", stops = 5 } }
  save(w.db, { trip })
  trip.fields.stops = 6
  save(w.db, { trip })
  trip.fields.stops = 1 -- no longer matching: evaluated on the record as saved, nothing
  save(w.db, { trip })
  trip.fields.stops = 3
  save(w.db, { trip })
  assert(select(2, w.db:modifyRecords{ delete = { trip.recordID } }) == nil)
  save(w.db, { sf.Record{ recordType = "Day", recordName = "d", zone = w.zone } }) -- another type
  local reasons, stops = {}, {}
  for _, ev in ipairs(fired) do
    reasons[#reasons + 1] = ev.notification.reason
    stops[#stops + 1] = tostring(ev.notification.additionalFields.stops)
  end
  expect.eq(table.concat(reasons, ","), "created,updated,updated,deleted")
  expect.eq(table.concat(stops, ","), "5,6,3,3")
  local ev = fired[1]
  expect.eq(ev.name, "subscription.fired")
  expect.eq(ev.container, helpers.container)
  expect.eq(ev.caller.userRecordID, w.alice.userRecordID, "the writer")
  expect.eq(ev.owner.userRecordID, w.alice.userRecordID, "whose subscription it is")
  expect.eq(getmetatable(ev.subscription), "Subscription")
  expect.eq(ev.subscription.subscriptionID, "long"); expect.eq(ev.subscription.predicate, "stops > 2")
  expect.eq(ev.database, "private"); expect.eq(ev.zoneID.zoneName, "Trips"); expect.eq(ev.recordID.recordName, "road")
  local n = ev.notification
  expect.eq(#n.notificationID, 36)
  expect.eq(n.subscriptionID, "long"); expect.eq(n.database, "private")
  expect.eq(n.zoneID.zoneName, "Trips"); expect.eq(n.zoneID.ownerName, w.alice.userRecordID)
  expect.eq(n.recordID.recordName, "road"); expect.eq(n.recordID.zoneID.zoneName, "Trips")
  expect.eq(n.additionalFields.title, "Road"); expect.eq(n.additionalFields.stops, 5)
  expect.eq(n.alertArguments[1], "Road")
  -- The event's subscription is a table db:saveSubscription takes back.
  assert(w.db:saveSubscription(ev.subscription))
  expect.eq(ids(w.db:fetchAllSubscriptions()), "long")
end)

test("N1: a stranger's zone subscription in their shared database is zoneNotFound; a participant's fires", function()
  local w = helpers.world()
  local _, err = w.cc.sharedCloudDatabase:saveSubscription(sf.RecordZoneSubscription{ subscriptionID = "peek", zoneID = w.zone.zoneID })
  expect.code(err, "zoneNotFound", "Carol has no share of the zone (R27, R37)")
  local share = helpers.shared(w, { "bob@example.com" }, "readWrite")
  helpers.accept(w.bc, share.url)
  assert(w.bc.sharedCloudDatabase:saveSubscription(sf.RecordZoneSubscription{ subscriptionID = "trips", zoneID = w.zone.zoneID }))
  local fired = {}
  sf.on("subscription.fired", function(ev) fired[#fired + 1] = ev end)
  w.trip.fields.title = "Lisbon, again"
  save(w.db, { w.trip })
  expect.eq(#fired, 1)
  local ev = fired[1]
  expect.eq(ev.owner.email, "bob@example.com")
  expect.eq(ev.caller.email, "alice@example.com")
  expect.eq(ev.database, "shared"); expect.eq(ev.recordID, nil)
  expect.eq(ev.subscription.subscriptionType, "zone")
  expect.eq(ev.notification.reason, nil); expect.eq(ev.notification.additionalFields, nil)
  expect.eq(ev.notification.zoneID.zoneName, "Trips")
end)
