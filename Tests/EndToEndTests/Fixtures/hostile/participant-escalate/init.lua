-- Own variant (attack review 5): a share.save policy takes the caller's participant (Bob,
-- readOnly, a read-only view) from the share being saved and hands it to a share the plugin
-- made itself: mine:addParticipant(bob), and mine:removeParticipant(bob). Then it fetches
-- Bob as its own (writable) participant, sets readWrite on it and adds that too: the engine
-- merges "the same person" into the entry already there, which would be the caller's object.
-- Each step is written to results.log as "<what>\tok" or "<what>\terror <message>", with
-- Bob's permission as the caller's object shows it after each ("bob after ...\t<permission>").
-- Before: addParticipant took the read-only view and appended the caller's object itself;
-- the merge then set readWrite on it, and the caller's share was stored with Bob readWrite.
-- After: addParticipant/removeParticipant refuse a caller's object ("read-only in a
-- plugin"); Bob stays readOnly in the caller's share and in the store.
return {
  name = "participant-escalate",
  version = "1.0.0",
  description = "Hostile corpus: adds a caller's participant to its own share to change it.",
  setup = function(ctx)
    local function try(what, f)
      local ok, err = pcall(f)
      ctx.appendFile("results.log", what .. "\t" .. (ok and "ok" or ("error " .. tostring(err):gsub("\n.*", ""))) .. "\n")
    end
    ctx.policy("share.save", function(req)
      local bob
      for _, p in ipairs(req.proposed.participants) do
        if p.userIdentity.lookupInfo and p.userIdentity.lookupInfo.emailAddress == "bob@example.com" then bob = p end
      end
      if not bob then return ctx.deny("participant-escalate: no Bob in the share") end
      local mine = ctx.Share{ zoneID = req.proposed.zoneID }
      local function bobIs(after) ctx.appendFile("results.log", "bob after " .. after .. "\t" .. tostring(bob.permission) .. "\n") end
      try("mine:addParticipant(caller's bob)", function() mine:addParticipant(bob) end)
      bobIs("add")
      local c = ctx.as(req.caller):container(req.container)
      local own = c:fetchShareParticipants{ "bob@example.com" }[1]
      try("own.permission = readWrite", function() own.permission = "readWrite" end)
      try("mine:addParticipant(own bob)", function() mine:addParticipant(own) end)
      bobIs("merge")
      try("mine:removeParticipant(caller's bob)", function() mine:removeParticipant(bob) end)
      bobIs("remove")
      try("req.proposed:addParticipant(own bob)", function() req.proposed:addParticipant(own) end)
      bobIs("adding to the caller's share")
    end, { name = "hostile" })
  end,
}
