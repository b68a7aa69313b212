-- Class 1: a record field value nested `depth` deep (40 by default), given to the host's
-- field converter (which recurses per level). `via` picks the entry point: the sf.Record
-- constructor, the fields view (`record.fields.x = v`) or `record:set(key, v)`.
-- Today: the converter pushes per level with no stack check: stack overrun (at 40, silent
-- corruption or a crash depending on the run; at 200, SIGSEGV/abort every time).
-- After: no crash. The value is refused (R23: a list of lists is not a field value; or the
-- depth limit), now or when the record would be saved; the driver accepts either verdict.
return {
  name = "deep-record-field",
  version = "1.0.0",
  description = "Hostile corpus: a deeply nested list as a record field value.",
  config = {
    via = { type = "string", default = "constructor" },
    depth = { type = "integer", default = 40, min = 1 },
  },
  setup = function(ctx, config)
    local function nest(n)
      local v = "leaf"
      for _ = 1, n do v = { v } end
      return v
    end
    ctx.policy("share.save", function(req)
      local deep = nest(config.depth)
      if config.via == "constructor" then
        ctx.Record{ recordType = "Doc", zone = req.proposed.zoneID, fields = { deep = deep } }
      else
        local record = ctx.Record{ recordType = "Doc", zone = req.proposed.zoneID }
        if config.via == "fields" then record.fields.deep = deep else record:set("deep", deep) end
      end
    end, { name = "hostile" })
  end,
}
