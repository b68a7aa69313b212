-- Class 7: every participant.fetched appends `chunkKiB` KiB to quota.bin (an append past the
-- quota raises, so the observer fails; that is logged).
-- Today: no quota, and limits.diskMiB is an unknown config key. After: the data folder holds
-- at most limits.diskMiB (default 64) MiB; the write that would pass it fails whole.
return {
  name = "append-quota",
  version = "1.0.0",
  description = "Hostile corpus: appends until past the disk quota.",
  config = {
    chunkKiB = { type = "integer", default = 300, min = 1, max = 4096 },
  },
  setup = function(ctx, config)
    local chunk = string.rep("q", config.chunkKiB * 1024)
    ctx.on("participant.fetched", function()
      ctx.appendFile("quota.bin", chunk)
    end, { name = "fill" })
  end,
}
