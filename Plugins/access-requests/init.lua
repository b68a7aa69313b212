-- Access requests (SPEC §17), automated: approve colleagues at once, refuse throwaway domains,
-- leave everyone else for the owner. Approved requesters join as pending participants with
-- `permission`; those the owner approves by hand may be held to it too.
return {
  name = "access-requests",
  version = "1.0.0",
  description = "Access-request policy: auto-approve requesters in some domains, deny others, leave the rest to the share's owner.",
  config = {
    autoApproveDomains = { type = "list", items = "string", default = {} },
    denyDomains = { type = "list", items = "string", default = {} },
    permission = { type = "string", default = "readOnly" },
    limitApprovedRequesters = { type = "boolean", default = false },
  },
  setup = function(ctx)
    local permission = ctx.config.permission
    if permission ~= "readOnly" and permission ~= "readWrite" then
      error("access-requests: permission must be 'readOnly' or 'readWrite', got '" .. tostring(permission) .. "'")
    end
    local approve, deny = {}, {}
    for _, d in ipairs(ctx.config.autoApproveDomains) do approve[d:lower()] = true end
    for _, d in ipairs(ctx.config.denyDomains) do deny[d:lower()] = true end

    local function domainOf(lookup)
      local email = lookup and lookup.emailAddress
      local domain = type(email) == "string" and email:match("@([^@]+)$")
      return domain and domain:lower()
    end

    ctx.policy("share.requestAccess", function(req)
      local domain = domainOf(req.requester and req.requester.participantLookupInfo)
      if domain and deny[domain] then
        return ctx.deny(string.format("requests from %s are not accepted", domain))
      end
      if domain and approve[domain] then
        return ctx.approve{ permission = permission }
      end
      -- Anyone else: recorded for the owner to approve or deny.
    end, { name = "request" })

    if ctx.config.limitApprovedRequesters then
      -- An approved requester gets `permission` at most, whoever adds them.
      ctx.policy("participant.add", function(req)
        local p = req.participant
        if p.isApprovedRequester and permission == "readOnly" and p.permission == "readWrite" then
          return ctx.deny("approved requesters are added read-only")
        end
      end, { name = "permission" })
    end
  end,
}
