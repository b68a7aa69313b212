-- Each share is either accepted with its record visible, or pending with nothing visible.
local sf = require("shareflow")
local c = sf.container("iCloud.crash")
local accepted, pending, broken = 0, 0, 0
for url in io.lines(arg[1]) do
  local ms = c:fetchShareMetadata{ url }
  local m = ms[url]
  local record = c.sharedCloudDatabase:fetchRecord(m.hierarchicalRootRecordID)
  if m.participantStatus == "accepted" and record then accepted = accepted + 1
  elseif m.participantStatus == "pending" and not record then pending = pending + 1
  else broken = broken + 1 end
end
print(string.format("accepted=%d pending=%d broken=%d", accepted, pending, broken))
