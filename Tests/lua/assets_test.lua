-- SPEC §19 A2: assets through the Lua API — sf.Asset{ data = } and { path = }, saved with their
-- record, read back with asset:read(), bounded. Run: shareflow test Tests/lua
local sf = require("shareflow")
local helpers = require("helpers")
local world = helpers.world

test("An asset's bytes are saved with its record and read back exactly", function()
  local w = world()
  local raw = string.rep("\0\255\195\40", 50000)
  w.trip.fields.photo = sf.Asset{ data = raw }
  w.trip.fields.pages = { sf.Asset{ data = "one" }, sf.Asset{ data = "" } }
  assert(select(2, w.db:modifyRecords{ save = { w.trip } }) == nil)
  local f = w.db:fetchRecord(w.trip.recordID).fields
  expect.eq(f.photo.size, #raw)
  expect.eq(#f.photo.checksum, 64)
  expect.eq(f.photo:read(), raw)
  expect.eq(f.pages[1]:read(), "one")
  expect.eq(f.pages[2]:read(), "")
  expect.contains(tostring(f.photo), "Asset(")
  -- A saved asset copied to another record names the same bytes.
  local copy = sf.Record{ recordType = "Note", zone = w.zone, fields = { photo = f.photo } }
  assert(select(2, w.db:modifyRecords{ save = { copy } }) == nil)
  expect.eq(w.db:fetchRecord(copy.recordID).fields.photo, f.photo)
end)

test("A path's bytes are read at the save (trusted scripts)", function()
  local w = world()
  local name = os.tmpname()
  local file = assert(io.open(name, "wb"))
  file:write("from a file\n")
  file:close()
  w.trip.fields.doc = sf.Asset{ path = name }
  assert(select(2, w.db:modifyRecords{ save = { w.trip } }) == nil)
  os.remove(name)
  local doc = w.db:fetchRecord(w.trip.recordID).fields.doc
  expect.eq(doc:read(), "from a file\n")
  expect.eq(type(doc.path), "string", "a trusted script is told where the store's copy is")
end)

test("sf.Asset takes exactly one of data and path, each checked", function()
  expect.raises(function() sf.Asset{} end, "exactly one")
  expect.raises(function() sf.Asset{ data = "x", path = "/x" } end, "exactly one")
  expect.raises(function() sf.Asset{ data = 5 } end, "must be a string")
  expect.raises(function() sf.Asset{ bytes = "x" } end, "unknown field 'bytes'")
  expect.raises(function() sf.Asset{ path = "/no/such/file" } end, "cannot open")
  expect.raises(function() sf.Asset{ path = "/" } end, "not a regular file")
  expect.raises(function() sf.Asset("x") end, "table expected")
end)

test("A hand-changed asset table names only a checksum's bytes, which must be in the store", function()
  local w = world()
  local a = sf.Asset{ data = "x" }
  a.data = nil
  a.checksum = string.rep("ab", 32)
  w.trip.fields.ghost = a
  local _, err = w.db:modifyRecords{ save = { w.trip } }
  expect.contains(tostring(err), "bytes this store does not hold")
  a.checksum = "not hex"
  expect.raises(function() w.trip.fields.ghost = a end, "SHA%-256")
end)

test("An asset is no query's match and no share's field", function()
  local w = world()
  w.trip.fields.photo = sf.Asset{ data = "sun" }
  assert(select(2, w.db:modifyRecords{ save = { w.trip } }) == nil)
  local found = w.db:query{ recordType = "Trip", zone = w.zone, predicate = "photo == %@", arguments = { w.trip.fields.photo } }
  expect.eq(#found, 0)
  expect.eq(#w.db:query{ recordType = "Trip", zone = w.zone }, 1)
  local share = sf.Share{ rootRecord = w.trip }
  share.fields.thumb = sf.Asset{ data = "x" }
  local _, err = w.db:modifyRecords{ save = { w.trip, share } }
  expect.contains(tostring(err), "a share's fields hold none")
end)

test("A forged size past Int64 is an error, not a crash", function()
  local w = world()
  local a = sf.Asset{ data = "x" }
  a.data = nil
  a.checksum = string.rep("e", 64)
  for _, size in ipairs{ 2^63, 2^64, -1, 0/0, 1/0 } do
    a.size = size
    expect.raises(function() w.trip.fields.f = a end, "size")
    expect.raises(function() return a:read() end, "size")
  end
end)
