-- luacheck configuration: `make lint`
std = "lua54"
max_line_length = 140
globals = { "shareflow", "sf", "test", "expect" }
exclude_files = { "types/shareflow.lua" }
-- Tests spell out every callback argument to show the block's shape, used or not.
files["Tests/lua"] = { unused_args = false, max_line_length = false, ignore = { "211", "213", "311" } }
-- The host's own Lua, embedded in the binary at build time (BuildTools/EmbedLua). The preludes
-- replace standard functions on purpose; the console's talks to Swift through __console_ globals.
files["Sources/ShareFlowLua/Lua/sandbox_prelude.lua"] = { globals = { "print", "xpcall", "require" } }
files["Sources/ShareFlowLua/Lua/coroutine_wrap.lua"] = { read_globals = { coroutine = { fields = { wrap = { read_only = false } } } } }
files["Sources/ShareFlowConsole/Lua/console_prelude.lua"] = {
  globals = { "__console_show_all", "__console_complete" },
  read_globals = { "__console_members" },
}
-- The test harness keeps the registered tests in a global the runner reads back.
files["Sources/shareflow/Lua/test_harness.lua"] = { globals = { "__shareflow_tests" } }
