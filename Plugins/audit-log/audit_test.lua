local sf = require("shareflow")

local function lines()
  local path = sf.plugins.dataFolder("audit-log") .. "/audit.jsonl"
  local out = {}
  local f = io.open(path)
  if not f then return out end
  for line in f:lines() do out[#out + 1] = line end
  f:close()
  return out
end

test("every event of a sharing story is written as a JSON line", function()
  sf.accounts.create{ email = "owner@example.com" }
  sf.accounts.create{ email = "bob@example.com" }
  local c = sf.as("owner@example.com"):container("iCloud.test")
  local zone = c.privateCloudDatabase:saveZone("Z")
  local r = sf.Record{ recordType = "Doc", zone = zone }
  local s = sf.Share{ rootRecord = r, title = "doc" }
  s:addParticipant(c:fetchShareParticipants{ "bob@example.com" }[1])
  c.privateCloudDatabase:modifyRecords{ save = { r, s } }
  local bc = sf.as("bob@example.com"):container("iCloud.test")
  bc:acceptShares{ bc:fetchShareMetadata{ s.url }[s.url] }
  local all = table.concat(lines(), "\n")
  for _, event in ipairs{ "participant.fetched", "participant.added", "share.saved", "share.metadataFetched",
                          "share.accepted", "operation.finished" } do
    expect.contains(all, '"event":"' .. event .. '"')
  end
  expect.contains(all, '"caller":"bob@example.com"')
  expect.contains(all, '"title":"doc"')
  for _, line in ipairs(lines()) do
    expect.truthy(line:match("^{.*}$"), "one JSON object per line: " .. line)
  end
end)

test("the file path stays inside the plugin's data folder", function()
  sf.plugins.load("audit-log", { path = "../escape.jsonl" })
  sf.accounts.create{ email = "a2@example.com" }
  sf.as("a2@example.com"):container("iCloud.test"):fetchShareParticipants{ "b@example.com" }
  local f = io.open(sf.plugins.dataFolder("audit-log") .. "/../escape.jsonl")
  expect.eq(f, nil, "nothing was written outside")
end)

test("config can narrow the events", function()
  sf.plugins.load("audit-log", { events = { "share.saved" } })
  sf.accounts.create{ email = "owner@example.com" }
  local c = sf.as("owner@example.com"):container("iCloud.test")
  local zone = c.privateCloudDatabase:saveZone("Z")
  local r = sf.Record{ recordType = "Doc", zone = zone }
  c.privateCloudDatabase:modifyRecords{ save = { r, sf.Share{ rootRecord = r } } }
  local l = lines()
  expect.eq(#l, 1)
  expect.contains(l[1], '"event":"share.saved"')
  expect.contains(l[1], '"created":true')
end)

test("past half the disk quota the log moves to <path>.1 and starts afresh", function()
  sf.accounts.create{ email = "a@example.com" }
  local c = sf.as("a@example.com"):container("iCloud.test")
  c:fetchShareParticipants{ "b@example.com" }
  -- Half the default quota (64 MiB) written since: the next event's line does not fit.
  local path = sf.plugins.dataFolder("audit-log") .. "/audit.jsonl"
  local f = assert(io.open(path, "w"))
  f:write(string.rep("x", 32 * 1024 * 1024))
  f:close()
  c:fetchShareParticipants{ "b@example.com" }
  local l = lines()
  expect.contains(l[1], '"event":"audit.rotated"')
  expect.contains(l[1], '"previous":"audit.jsonl.1"')
  expect.contains(l[#l], '"event":"operation.finished"')
  local old = assert(io.open(path .. ".1"))
  expect.eq(old:seek("end"), 32 * 1024 * 1024, "the old log moved whole")
  old:close()
end)
