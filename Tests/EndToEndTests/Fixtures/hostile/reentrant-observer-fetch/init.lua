-- Own variant: a participant.fetched observer that fetches a participant, which delivers
-- participant.fetched to itself again: unbounded re-entry.
-- After: the top-level call ends within 2x its budget, without a crash.
return {
  name = "reentrant-observer-fetch",
  version = "1.0.0",
  description = "Hostile corpus: an observer that triggers its own event.",
  setup = function(ctx)
    ctx.on("participant.fetched", function(ev)
      ctx.as(ev.caller):container(ev.container):fetchShareParticipants{ "echo@example.com" }
    end, { name = "hostile" })
  end,
}
