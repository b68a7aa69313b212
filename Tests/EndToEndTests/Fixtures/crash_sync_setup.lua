-- Alice's zone "Log", shared whole with Bob, who has accepted: both feeds (hers, his) follow it.
local sf = require("shareflow")
local zones = dofile((arg[0]:match("^(.*)/[^/]*$") or ".") .. "/zones.lua")
sf.accounts.create{ email = "alice@example.com" }
sf.accounts.create{ email = "bob@example.com" }
zones.shareWithBob("iCloud.crash", "Log")
