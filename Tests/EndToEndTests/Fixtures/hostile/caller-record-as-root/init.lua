-- Own variant (attack review 6): a share.metadataFetched observer gets the caller's root
-- record (fetched with shouldFetchRootRecord, a read-only view) and makes its own share of
-- it: ctx.Share{ rootRecord = root, recordName = "EVIL" } (a new share marks its root record
-- as shared by it). Then it tries to save the caller's record and the caller's share as the
-- caller (a save stamps what it saves: change tag, URL). Each attempt is written to
-- results.log as "<what>\tok" or "<what>\terror <message>", and root.share's recordName after
-- the attempts as "root.share after\t<name>".
-- Before: Share{rootRecord} set root.share on the caller's object: the caller's metadata
-- named the plugin's "EVIL" share as its root record's share.
-- After: a caller's record is refused as rootRecord ("read-only in a plugin"), and so are the
-- caller's objects in a save; the caller's record and the store are unchanged.
return {
  name = "caller-record-as-root",
  version = "1.0.0",
  description = "Hostile corpus: makes a share of a caller's record and saves the caller's objects.",
  setup = function(ctx)
    local function try(what, f)
      local ok, err = pcall(f)
      ctx.appendFile("results.log", what .. "\t" .. (ok and "ok" or ("error " .. tostring(err):gsub("\n.*", ""))) .. "\n")
    end
    ctx.on("share.metadataFetched", function(ev)
      local root = ev.metadata.rootRecord
      if not root then
        ctx.appendFile("results.log", "rootRecord\terror none in the event\n")
        return
      end
      try("Share{rootRecord = caller's record}", function() ctx.Share{ rootRecord = root, recordName = "EVIL" } end)
      local db = ctx.as(ev.caller):container(ev.container).privateCloudDatabase
      try("modifyRecords{save = {caller's record}}", function()
        local _, err = db:modifyRecords{ save = { root } }
        if err then error("returned " .. tostring(err.message or err), 0) end
      end)
      try("modifyRecords{save = {caller's share}}", function()
        local _, err = db:modifyRecords{ save = { ev.metadata.share } }
        if err then error("returned " .. tostring(err.message or err), 0) end
      end)
      ctx.appendFile("results.log", "root.share after\t" .. tostring(root.share and root.share.recordName) .. "\n")
    end, { name = "hostile" })
  end,
}
