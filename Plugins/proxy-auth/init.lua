-- Server authentication behind a signing proxy: requests to `shareflow serve` act as the user
-- a trusted reverse proxy (oauth2-proxy, an identity-aware gateway) names in a header, so a
-- deployment signs people in with its own identity provider instead of ckWebAuthToken.
-- The proxy proves itself with a shared secret in another header; without it the named user
-- is refused, so a client that reaches the server directly cannot claim to be anyone.
return {
  name = "proxy-auth",
  version = "1.0.0",
  description = "Server authentication: the user a trusted proxy names in a header (with a shared secret).",
  config = {
    userHeader = { type = "string", default = "x-auth-request-email" },
    secretHeader = { type = "string", default = "x-proxy-secret" },
    -- Required: with the empty default every request naming a user is refused.
    secret = { type = "string", default = "" },
  },
  setup = function(ctx)
    local userHeader = ctx.config.userHeader:lower()
    local secretHeader = ctx.config.secretHeader:lower()
    local secret = ctx.config.secret

    ctx.authenticate(function(req)
      local user = req.headers[userHeader]
      -- Not ours: another authenticator, or ckWebAuthToken, may know the request.
      if user == nil then return nil end
      if secret == "" then
        return nil, "proxy-auth has no secret configured (config.secret)"
      end
      if req.headers[secretHeader] ~= secret then
        return nil, string.format("%s does not carry the proxy's secret", secretHeader)
      end
      -- An email, phone or userRecordName: the host finds the account (or refuses).
      return user
    end, { name = "header" })
  end,
}
