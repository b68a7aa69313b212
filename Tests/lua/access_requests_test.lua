-- SPEC §17, share access requests, through the Lua API. Run: shareflow test Tests/lua
local helpers = require("helpers")
local world = helpers.world
local shared = helpers.shared

local accept = helpers.accept

test("R38: only the owner or an administrator changes whether a share takes access requests", function()
  local w = world()
  local share = shared(w, { "bob@example.com" }, "readWrite")
  expect.eq(share.allowsAccessRequests, false, "off by default")
  accept(w.bc, share.url)
  local mine = w.db:fetchRecord(share.recordID)
  mine.allowsAccessRequests = true
  assert(select(2, w.db:modifyRecords{ save = { mine } }) == nil)
  local bobs = w.bc.sharedCloudDatabase:fetchRecord(share.recordID)
  expect.eq(bobs.allowsAccessRequests, true, "every participant sees it")
  expect.raises(function() bobs.allowsAccessRequests = false end, "only the share's owner or an administrator")
  expect.raises(function() mine.allowsAccessRequests = "yes" end, "must be a boolean")
  expect.eq(w.db:fetchRecord(share.recordID).allowsAccessRequests, true)
end)
