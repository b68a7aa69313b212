-- Own variant: a share.save policy that saves another share as the caller, which asks the
-- same policy again: unbounded re-entry through Swift frames (engine, bindings, lua_pcall).
-- Today: unknown (the C-stack limit of Lua, the shared budget, or the native stack, whichever
-- comes first). After: the top-level call ends within 2x its budget, without a crash; what
-- was denied or saved on the way is not asserted.
return {
  name = "reentrant-policy-save",
  version = "1.0.0",
  description = "Hostile corpus: a policy that re-enters the engine and asks itself again.",
  setup = function(ctx)
    ctx.policy("share.save", function(req)
      local db = ctx.as(req.caller):container(req.container).privateCloudDatabase
      local record = ctx.Record{ recordType = "Echo", zone = req.proposed.zoneID }
      db:modifyRecords{ save = { record, ctx.Share{ rootRecord = record } } }
    end, { name = "hostile" })
  end,
}
