-- Alice's zone "Mix" in iCloud.test, shared whole with Bob, who has accepted: several
-- processes then write it at once (ChangeLogMultiProcessTests).
local zones = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/zones.lua")
zones.shareWithBob("iCloud.test", "Mix")
