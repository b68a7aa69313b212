-- Lua-facing errors worded as lauxlib words them (SPEC §9): argument numbers as Lua counts
-- them (a method's self is not counted), type names from __name, a file:line: prefix, and the
-- key for a bad property value. Run: shareflow test Tests/lua
local sf = require("shareflow")

local function raises(fn, text)
  local ok, e = pcall(fn)
  assert(not ok, "expected an error containing " .. text)
  e = tostring(e)
  if not e:find(text, 1, true) then error(("error %q does not contain %q"):format(e, text), 2) end
  return e
end

local function world()
  sf.accounts.create{ email = "a@example.com" }
  local c = sf.as("a@example.com"):container("iCloud.errors")
  return c, sf.Share{ zone = { zoneName = "Z", ownerName = "_a" } }
end

test("a method's arguments are counted without self, as lauxlib counts them", function()
  local c = world()
  local e = raises(function() c:acceptShares(5) end, "bad argument #1 to 'acceptShares' (table expected, got number)")
  expect.truthy(e:find("errors_test%.lua:%d+: bad argument"), e)
  raises(function() c:acceptShares() end, "bad argument #1 to 'acceptShares' (table expected, got no value)")
  raises(function() c.privateCloudDatabase:fetchRecord(5) end, "bad argument #1 to 'fetchRecord'")
end)

test("types are named by __name, not 'userdata'", function()
  local c, share = world()
  raises(function() c.privateCloudDatabase:fetchRecord(c) end, "got Container)")
  raises(function() share:addParticipant(share) end, "bad argument #1 to 'addParticipant' (Participant expected, got Share)")
  raises(function() c:acceptShares{ 5 } end, "bad argument #1 to 'acceptShares' (item 1: ShareMetadata expected, got number)")
end)

test("a bad property value names the key and the caller's line", function()
  local _, share = world()
  raises(function() share.publicPermission = "x" end, "errors_test.lua:")
  raises(function() share.publicPermission = "x" end,
         "bad value for 'publicPermission' (invalid publicPermission 'x'; expected one of: none, readOnly, readWrite, unknown)")
  raises(function() local r = sf.Record{ recordType = "T" }; r.parent = 5 end,
         "bad value for 'parent' (record or recordID expected, got number)")
end)

test("module functions keep their numbering", function()
  raises(function() sf.on(5) end, "bad argument #1 to 'on' (string expected, got number)")
  raises(function() sf.LookupInfo("x") end, "bad argument #1 to 'LookupInfo' (table expected, got string)")
end)

test("methods are found in a method table, as liolib's, without a call into the host", function()
  local c = world()
  local index = debug.getmetatable(c).__index
  local _, methods = debug.getupvalue(index, 1)
  expect.eq(type(methods), "table", "__index keeps the method table as its first upvalue")
  expect.eq(rawget(methods, "acceptShares"), c.acceptShares)
  expect.eq(rawget(methods, "containerIdentifier"), nil, "properties are not methods")
  expect.eq(c.containerIdentifier, "iCloud.errors")
end)

test("a constructor's bad field is its bad argument at the caller's line, not the prelude's", function()
  local e = raises(function() sf.ModifyRecordsOperation{ bad = 1 } end,
                   "bad argument #1 to 'ModifyRecordsOperation' (ModifyRecordsOperation has no field 'bad')")
  expect.truthy(e:find("errors_test%.lua:%d+: bad argument"), e)
  expect.falsy(e:find("prelude", 1, true), e)
  raises(function() sf.QueryOperation{ resultsLimit = -1 } end, "bad value for 'resultsLimit'")
end)
