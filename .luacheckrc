-- luacheck configuration: `make lint`
std = "lua54"
max_line_length = 140
globals = { "shareflow", "sf", "test", "expect" }
exclude_files = { "types/shareflow.lua" }
-- Tests spell out every callback argument to show the block's shape, used or not.
files["Tests/lua"] = { unused_args = false, max_line_length = false, ignore = { "211", "213", "311" } }
