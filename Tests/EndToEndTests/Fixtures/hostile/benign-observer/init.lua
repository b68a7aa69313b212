-- A well-behaved plugin for the script cases (unload or reload while an event is being
-- delivered; deep settings from a trusted script): each participant.fetched churns some
-- memory in its state and appends "fetched <instance>" to results.log; share.save allows.
return {
  name = "benign-observer",
  version = "1.0.0",
  description = "Hostile corpus helper: an ordinary observer and policy.",
  config = {
    junk = { type = "list" },
  },
  setup = function(ctx)
    local instance = tostring({}):match("0x%x+") or tostring(os.clock())
    local seen = {}
    ctx.on("participant.fetched", function(ev)
      for i = 1, 200 do seen[i] = { ev.lookupInfo.emailAddress, i, string.rep("s", i) } end
      ctx.appendFile("results.log", "fetched " .. instance .. " " .. #seen .. "\n")
    end, { name = "observer", priority = 0 })
    ctx.policy("share.save", function() end, { name = "allow", priority = 0 })
  end,
}
