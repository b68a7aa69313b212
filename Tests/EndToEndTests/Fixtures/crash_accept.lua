-- Bob accepts every share in one AcceptSharesOperation, printing each as it commits.
local sf = require("shareflow")
local c = sf.container("iCloud.crash")
local urls = {}
for line in io.lines(arg[1]) do urls[#urls + 1] = line end
local ms, err = c:fetchShareMetadata(urls)
assert(not err, tostring(err))
local list = {}
for i, url in ipairs(urls) do list[i] = ms[url] end
local op = sf.AcceptSharesOperation{ shareMetadatas = list }
local n = 0
op.perShareResultBlock = function(_, _, _)
  n = n + 1
  io.stdout:write("accepted ", n, "\n")
  io.stdout:flush()
end
c:add(op)
op:wait()
print("finished")
