-- R23 (values and names), R24 (default zone), R27 (zone privacy), R28 (fresh objects) through
-- the Lua API. Run: shareflow test Tests/lua
local sf = require("shareflow")
local helpers = require("helpers")
local world = helpers.world
local C = helpers.container

test("R23: bytes, dates, locations, references and lists come back exactly", function()
  local w = world()
  local raw = "\0\255\195\40\n\0"
  local r = sf.Record{ recordType = "Everything", recordName = "all", zone = w.zone, fields = {
    s = "Lisbon", i = math.mininteger, d = -0.5, b = false,
    y = sf.Bytes(raw), t = sf.Date(1790000000.25), l = sf.Location{ latitude = 38.7223, longitude = -9.1393 },
    r = sf.Reference{ recordID = w.trip.recordID, action = "deleteSelf" }, p = w.trip,
    ls = { "a", "b" }, ly = { sf.Bytes("x"), sf.Bytes("") }, le = {},
  } }
  assert(select(2, w.db:modifyRecords{ save = { w.trip, r } }) == nil)
  local f = w.db:fetchRecord(r.recordID).fields
  expect.eq(f.s, "Lisbon"); expect.eq(f.i, math.mininteger); expect.eq(f.d, -0.5); expect.eq(f.b, false)
  expect.eq(f.y.data, raw); expect.eq(#f.y, 6); expect.eq(f.y, sf.Bytes(raw))
  expect.eq(f.t.seconds, 1790000000.25); expect.eq(f.t, sf.Date(1790000000.25))
  expect.eq(f.l.latitude, 38.7223); expect.eq(f.l.longitude, -9.1393)
  expect.eq(f.l.altitude, nil, "a bare location has its coordinates only")
  expect.eq(f.r.action, "deleteSelf"); expect.eq(f.r.recordID.recordName, "lisbon"); expect.eq(f.r.recordName, "lisbon")
  expect.eq(f.p.action, "none"); expect.eq(f.p.recordName, "lisbon")
  expect.eq(#f.ls, 2); expect.eq(f.ly[1], sf.Bytes("x")); expect.eq(#f.le, 0)
  expect.contains(tostring(f.y), "Bytes(6 bytes)")
  expect.contains(tostring(f.r), "Reference(lisbon")
end)

test("An encrypted value comes back as given and no query matches it", function()
  local w = world()
  local r = sf.Record{ recordType = "Secret", zone = w.zone,
    fields = { pin = sf.Encrypted(sf.Bytes("\1\2")), note = sf.Encrypted("hi"), nums = sf.Encrypted({ 1, 2 }) } }
  assert(select(2, w.db:modifyRecords{ save = { r } }) == nil)
  local f = w.db:fetchRecord(r.recordID).fields
  expect.eq(f.pin, sf.Encrypted(sf.Bytes("\1\2")))
  expect.eq(f.note.value, "hi")
  expect.eq(f.nums.value[2], 2)
  expect.contains(tostring(f.note), "Encrypted(\"hi\")")
  local found = w.db:query{ recordType = "Secret", predicate = "note == %@", arguments = { "hi" }, zoneID = w.zone.zoneID }
  expect.eq(#found, 0, "the server cannot read it")
  expect.raises(function() sf.Encrypted(sf.Encrypted("x")) end, "encrypted twice")
  expect.raises(function() sf.Record{ recordType = "S", zone = w.zone, fields = { l = { sf.Encrypted("x") } } } end, "encrypted item")
  expect.raises(function() sf.Encrypted(nil) end, "field value")
  -- Changed by hand to hold itself, directly or through a list: refused, never a loop.
  local e = sf.Encrypted("x")
  e.value = e
  expect.raises(function() sf.Record{ recordType = "S", zone = w.zone, fields = { k = e } } end, "encrypted twice")
  local l = sf.Encrypted({ "a" })
  l.value = { l }
  expect.raises(function() sf.Record{ recordType = "S", zone = w.zone, fields = { k = l } } end, "encrypted item")
end)

test("A location keeps all eight keys CloudKit gives one, alone and in a list", function()
  local w = world()
  local full = { latitude = 38.72, longitude = -9.14, horizontalAccuracy = 5, verticalAccuracy = -1,
    altitude = 95.5, speed = 1.25, course = 270, timestamp = 1700000000.5 }
  local r = sf.Record{ recordType = "Place", zone = w.zone,
    fields = { at = sf.Location(full), stops = { sf.Location(full), sf.Location{ latitude = 1, longitude = 2 } } } }
  assert(select(2, w.db:modifyRecords{ save = { r } }) == nil)
  local f = w.db:fetchRecord(r.recordID).fields
  for k, v in pairs(full) do
    expect.eq(f.at[k], v, k)
    expect.eq(f.stops[1][k], v, "in a list: " .. k)
  end
  expect.eq(f.stops[2].speed, nil)
  -- Queried by distance and sorted by it, as CloudKit's NEAR and CKLocationSortDescriptor.
  local far = sf.Record{ recordType = "Place", zone = w.zone, fields = { at = sf.Location{ latitude = 59.91, longitude = 10.75 } } }
  assert(select(2, w.db:modifyRecords{ save = { far } }) == nil)
  local lisbon = sf.Location{ latitude = 38.7, longitude = -9.1 }
  local near = w.db:query{ recordType = "Place", zoneID = w.zone.zoneID,
    predicate = "distanceToLocation:fromLocation:(at, %@) < 50000", arguments = { lisbon } }
  expect.eq(#near, 1)
  expect.eq(near[1].recordID.recordName, r.recordID.recordName)
  local sorted = w.db:query{ recordType = "Place", zoneID = w.zone.zoneID,
    sortDescriptors = { { key = "at", relativeTo = sf.Location{ latitude = 60, longitude = 10 } } } }
  expect.eq(sorted[1].recordID.recordName, far.recordID.recordName, "nearest first")
  expect.raises(function() w.db:query{ recordType = "Place", zoneID = w.zone.zoneID,
    sortDescriptors = { { key = "at", relativeTo = 5 } } } end, "relativeTo must be an sf.Location")
  expect.eq(f.at, sf.Location(full))
  expect.eq(f.at == sf.Location{ latitude = 38.72, longitude = -9.14 }, false, "the details are part of the value")
end)

test("R23: a dictionary, holes, mixed lists, lists of lists, NaN, ±inf and invalid UTF-8 are refused naming the field", function()
  local w = world()
  local r = sf.Record{ recordType = "Note", zone = w.zone }
  local cases = {
    { { a = 1 }, "field 'x' is a dictionary" },
    { { 1, nil, 3 }, "field 'x'" },
    { { 1, 2, k = 3 }, "keys other than 1...2" },
    { { 1, "a" }, "field 'x' mixes integer and string" },
    { { { 1 } }, "list of lists" },
    { 0 / 0, "finite" },
    { math.huge, "finite" },
    { -math.huge, "finite" },
    { "caf\233", "not valid UTF" },
    { print, "cannot hold a function" },
  }
  for _, case in ipairs(cases) do
    expect.raises(function() r.fields.x = case[1] end, case[2])
    expect.raises(function() sf.Record{ recordType = "N", zone = w.zone, fields = { x = case[1] } } end, case[2])
  end
  expect.eq(r.fields.x, nil, "nothing was set")
  expect.raises(function() sf.Location{ latitude = 91, longitude = 0 } end, "latitude")
  expect.raises(function() sf.Location{ latitude = 1, longitude = 0, speed = 1 / 0 } end, "speed inf is not a finite number")
  expect.raises(function() sf.Location{ latitude = 1, longitude = 0, altitude = "high" } end, "'altitude' must be a number")
  expect.raises(function() sf.Location{ latitude = 1, longitude = 0, bearing = 3 } end, "bearing")
  expect.raises(function() sf.Date(0 / 0) end, "finite")
  expect.raises(function() sf.Bytes(12) end, "string expected")
  expect.raises(function() sf.Reference{ recordID = w.trip.recordID, action = "explode" } end, "invalid reference action")
  -- A value table changed by hand is checked again when it is used.
  local d = sf.Date(5)
  d.seconds = "soon"
  expect.raises(function() r.fields.when = d end, "Date.seconds must be a number")
end)

test("R23: record types, field keys and record names follow CloudKit's rules; NUL is refused everywhere", function()
  local w = world()
  local function refused(rec, text)
    local _, err = w.db:modifyRecords{ save = { rec } }
    local _, e = next(err.partialErrors)
    expect.code(e, "invalidArguments")
    expect.contains(e.message, text)
  end
  refused(sf.Record{ recordType = "Not a type", zone = w.zone }, "record type")
  refused(sf.Record{ recordType = "N", recordName = "", zone = w.zone }, "empty record name")
  refused(sf.Record{ recordType = "N", recordName = string.rep("n", 256), zone = w.zone }, "at most 255")
  refused(sf.Record{ recordType = "N", recordName = "a\0b", zone = w.zone }, "printable ASCII")
  local bad = sf.Record{ recordType = "N", zone = w.zone }
  bad.fields["2nd"] = 1
  refused(bad, "field key '2nd'")
  expect.raises(function() sf.accounts.create{ email = "mallory@example.com\0.evil.org" } end, "NUL")
  expect.eq(sf.accounts.find("mallory@example.com"), nil, "no account was made")
  expect.raises(function() sf.as("alice@example.com\0.x.y") end, "NUL")
  expect.raises(function() sf.as("alice@example.com"):container("iCloud.a\0b") end, "NUL")
  local zone, err = w.db:saveZone("Z\0Y")
  expect.eq(zone, nil); expect.code(err, "invalidArguments")
end)

test("R24: a record without a zone is saved in the default zone of its database", function()
  local w = world()
  local note = sf.Record{ recordType = "Note", recordName = "n1", fields = { t = "hi" } }
  expect.eq(note.zoneID.zoneName, "_defaultZone")
  local saved = w.db:modifyRecords{ save = { note } }
  expect.eq(saved[1].zoneID.ownerName, w.alice.userRecordID)
  expect.eq(w.db:fetchRecord(note.recordID).fields.t, "hi")
end)

test("R27: in the shared database a zone not shared with the caller is as a missing one", function()
  local w = world()
  local share = sf.Share{ rootRecord = w.trip }
  share:addParticipant(w.c:fetchShareParticipants{ "bob@example.com" }[1])
  assert(select(2, w.db:modifyRecords{ save = { w.trip, share } }) == nil)
  local sdb = sf.as("carol@example.com"):container(C).sharedCloudDatabase
  local _, existing = sdb:fetchRecord(w.trip.recordID)
  local _, missing = sdb:fetchRecord(sf.RecordID{ recordName = "lisbon",
    zoneID = { zoneName = "Nope", ownerName = w.alice.userRecordID } })
  expect.code(existing, "zoneNotFound")
  expect.code(missing, "zoneNotFound")
  expect.eq(existing.message:gsub("Trips", "ZONE"), missing.message:gsub("Nope", "ZONE"))
end)

test("R28: an account object read after setName and setDiscoverable shows them", function()
  local w = world()
  local alice = sf.accounts.find("alice@example.com")
  w.alice:setName{ given = "Ally" }
  w.alice:setDiscoverable(true)
  expect.eq(alice.name.given, "Ally")
  expect.eq(alice.discoverable, true)
end)
