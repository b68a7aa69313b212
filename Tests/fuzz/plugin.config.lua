-- Turns on the fuzz plugin (Tests/fuzz/plugin/fuzz) for Tests/fuzz/drive_plugin.lua.
return {
  limits = { cpuMillis = 50, memoryMiB = 64 },
  plugins = { fuzz = {} },
}
