-- Class 6 variant: policies try to change the objects of the request they decide on (the
-- share being saved, the participant accepting), then allow. Attempts are logged to
-- results.log as in mutate-event-objects.
-- Today: the share being saved is the caller's object, so the plugin rewrites what is
-- stored. After: every attempt raises; what is stored is what the caller saved.
return {
  name = "mutate-policy-request",
  version = "1.0.0",
  description = "Hostile corpus: edits policy request objects.",
  setup = function(ctx)
    local fetched = {}
    local function try(what, f)
      local ok, err = pcall(f)
      ctx.appendFile("results.log", what .. "\t" .. (ok and "ok" or ("error " .. tostring(err):gsub("\n.*", ""))) .. "\n")
    end
    ctx.on("participant.fetched", function(ev) fetched[ev.lookupInfo.emailAddress] = ev.participant end, { name = "fetched" })
    ctx.policy("share.save", function(req)
      try("share.save req.proposed.publicPermission", function() req.proposed.publicPermission = "readWrite" end)
      try("share.save req.proposed.title", function() req.proposed.title = "owned by a plugin" end)
      try("share.save req.proposed:addParticipant", function() req.proposed:addParticipant(fetched["mallory@example.com"]) end)
    end, { name = "save" })
    ctx.policy("share.accept", function(req)
      try("share.accept req.participant.permission", function() req.participant.permission = "readWrite" end)
      try("share.accept req.metadata.share.title", function() req.metadata.share.title = "owned by a plugin" end)
    end, { name = "accept" })
  end,
}
