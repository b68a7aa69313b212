-- Invitations that stay pending longer than maxAgeSeconds are removed (reason "expired"), and
-- an expired invitation cannot be accepted even before the sweep has run.
return {
  name = "expiring-invitations",
  version = "1.0.0",
  description = "Workflow: pending invitations older than maxAgeSeconds are removed, and cannot be accepted.",
  config = {
    maxAgeSeconds = { type = "number", default = 7 * 24 * 3600, min = 0 },
  },
  setup = function(ctx)
    local maxAge = ctx.config.maxAgeSeconds

    local function sweep()
      for _, invitation in ipairs(ctx.admin.pendingInvitations{ olderThan = maxAge }) do
        ctx.admin.removeParticipant(invitation.participantID, "expired")
        ctx.log.info("invitation of " .. tostring(invitation.lookupInfo.emailAddress or invitation.lookupInfo.phoneNumber)
          .. " to '" .. tostring(invitation.title) .. "' expired")
      end
    end
    ctx.on("operation.finished", sweep, { name = "sweep" })

    ctx.policy("share.accept", function(req)
      local mine = req.participant
      if not mine or mine.acceptanceStatus ~= "pending" then return end
      for _, invitation in ipairs(ctx.admin.pendingInvitations{ olderThan = maxAge }) do
        if invitation.participantID == mine.participantID then
          return ctx.deny(string.format("the invitation expired (older than %d seconds)", maxAge))
        end
      end
    end, { name = "accept" })
  end,
}
