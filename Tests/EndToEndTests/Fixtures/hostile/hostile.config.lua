-- The limits every hostile case runs under (drive.lua loads the case's plugin itself, with
-- sf.plugins.load, so that a plugin that fails to load is a result the driver can check).
return {
  limits = { cpuMillis = 50, memoryMiB = 64 },
}
