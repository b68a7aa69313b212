-- Only people with an email address in an allowed domain may accept shares; optionally,
-- only they may be invited.
return {
  name = "domain-allowlist",
  version = "1.0.0",
  description = "Acceptance policy: only users with an email in the allowed domains may accept (or be invited to) shares.",
  config = {
    domains = { type = "list", items = "string", default = { "example.com" } },
    checkInvitations = { type = "boolean", default = false },
  },
  setup = function(ctx)
    local allowed = {}
    for _, domain in ipairs(ctx.config.domains) do allowed[domain:lower()] = true end
    local listed = table.concat(ctx.config.domains, ", ")

    local function inDomain(email)
      local domain = email and email:match("@([^@]+)$")
      return domain ~= nil and allowed[domain:lower()] == true
    end

    ctx.policy("share.accept", function(req)
      -- The primary address decides most requests without building the list of all of them.
      if req.caller and inDomain(req.caller.email) then return true end
      local emails = req.caller and req.caller.emails or {}
      for _, email in ipairs(emails) do
        if inDomain(email) then return true end
      end
      return ctx.deny(string.format("%s has no email in an allowed domain (%s)",
        emails[1] or (req.caller and req.caller.userRecordID) or "the caller", listed))
    end, { name = "accept" })

    if ctx.config.checkInvitations then
      ctx.policy("participant.add", function(req)
        -- A one-time link's participant is nobody yet: whoever claims it meets the accept policy.
        if req.participant.isOneTimeURLParticipant then return end
        local info = req.participant.userIdentity.lookupInfo
        local email = info and info.emailAddress
        if not inDomain(email) then
          return ctx.deny(string.format("%s is not in an allowed domain (%s)", tostring(email or "a phone number"), listed))
        end
      end, { name = "invite" })
    end
  end,
}
