-- Class 6: observers try to change the objects an event hands them, and keep them to change
-- later. Each attempt runs under pcall and is written to results.log as
-- "<what>\tok" or "<what>\terror <message>".
-- Today: every setter works and changes the caller's objects (and what a later save stores).
-- After: plugins get read-only views: every attempt raises; the caller's objects, and the
-- store, are untouched.
return {
  name = "mutate-event-objects",
  version = "1.0.0",
  description = "Hostile corpus: edits event objects, now and later.",
  setup = function(ctx)
    local kept = { fetched = {} }
    local function try(what, f)
      local ok, err = pcall(f)
      ctx.appendFile("results.log", what .. "\t" .. (ok and "ok" or ("error " .. tostring(err):gsub("\n.*", ""))) .. "\n")
    end
    ctx.on("participant.fetched", function(ev)
      kept.fetched[ev.lookupInfo.emailAddress] = ev.participant
      try("participant.fetched participant.permission", function() ev.participant.permission = "readWrite" end)
    end, { name = "fetched" })
    ctx.on("participant.added", function(ev)
      kept.added = ev.participant
      try("participant.added participant.permission", function() ev.participant.permission = "readWrite" end)
    end, { name = "added" })
    ctx.on("share.saved", function(ev)
      local s = ev.share
      kept.share = kept.share or s
      try("share.saved share.publicPermission", function() s.publicPermission = "readWrite" end)
      try("share.saved share.title", function() s.title = "owned by a plugin" end)
      try("share.saved share:addParticipant", function() s:addParticipant(kept.fetched["mallory@example.com"]) end)
      try("share.saved share:removeParticipant", function() s:removeParticipant(s.participants[#s.participants]) end)
    end, { name = "saved" })
    ctx.on("share.metadataFetched", function(ev)
      try("share.metadataFetched metadata.share.publicPermission", function() ev.metadata.share.publicPermission = "readWrite" end)
      try("later: kept share.publicPermission", function() kept.share.publicPermission = "readWrite" end)
      try("later: kept share.title", function() kept.share.title = "changed later" end)
      try("later: kept participant.permission", function() kept.added.permission = "readWrite" end)
      try("later: kept fetched participant.permission", function()
        kept.fetched["bob@example.com"].permission = "readWrite"
      end)
    end, { name = "later" })
  end,
}
