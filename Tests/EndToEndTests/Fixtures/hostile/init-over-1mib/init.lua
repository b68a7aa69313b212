-- Own variant (attack review 13): an init.lua larger than 1 MiB. The repository keeps only
-- this small plugin; the driver copies it into a plugins folder of its own, padded with a
-- Lua comment to exactly 1 MiB (1,048,576 bytes) and then to 1 MiB + 1 byte, and loads each.
-- Before: init.lua was parsed in C whatever its size, before any budget could apply (load's
-- 1 MiB cap inside the sandbox did not apply to init.lua): 12 MB took seconds.
-- After: at 1 MiB the plugin loads; past it the load is refused with one error naming the
-- file ("... init.lua is larger than 1 MiB"), before anything is parsed.
return {
  name = "init-over-1mib",
  version = "1.0.0",
  description = "Hostile corpus: an init.lua padded past 1 MiB.",
  setup = function(ctx)
    ctx.policy("share.save", function() end, { name = "allow" })
  end,
}
