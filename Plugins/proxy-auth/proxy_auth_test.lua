local sf = require("shareflow")

-- A request as `shareflow serve` hands it to the authenticators, asked through the test harness.
local function ask(headers)
  return test.authenticate{ headers = headers }
end

test("a request naming no user is left to the other authenticators", function()
  local who, err = ask{ ["x-proxy-secret"] = "anything" }
  expect.eq(who, nil)
  expect.eq(err, nil)
end)

test("with no secret configured, a request naming a user is refused", function()
  sf.accounts.create{ email = "alice@example.com" }
  local who, err = ask{ ["X-Auth-Request-Email"] = "alice@example.com" }
  expect.eq(who, nil)
  expect.denied(err, "proxy%-auth has no secret configured %(config%.secret%)")
end)

test("the proxy's secret lets the named user in; without it the user is refused", function()
  sf.plugins.load("proxy-auth", { secret = "s3cret" })
  sf.accounts.create{ email = "alice@example.com" }
  local who = ask{ ["x-auth-request-email"] = "alice@example.com", ["x-proxy-secret"] = "s3cret" }
  expect.eq(who.email, "alice@example.com")
  expect.eq(who.authenticator, "proxy-auth/header")
  local _, err = ask{ ["x-auth-request-email"] = "alice@example.com", ["x-proxy-secret"] = "guess" }
  expect.denied(err, "x%-proxy%-secret does not carry the proxy's secret")
  _, err = ask{ ["x-auth-request-email"] = "alice@example.com" }
  expect.denied(err, "authenticator 'proxy%-auth/header' refused")
end)

test("the headers are configurable, and matched whatever their case", function()
  sf.plugins.load("proxy-auth", { secret = "s3cret", userHeader = "X-User", secretHeader = "X-Gateway-Key" })
  sf.accounts.create{ email = "bob@example.com" }
  local who = ask{ ["X-User"] = "bob@example.com", ["x-gateway-key"] = "s3cret" }
  expect.eq(who.email, "bob@example.com")
  expect.eq(ask{ ["x-auth-request-email"] = "bob@example.com", ["x-proxy-secret"] = "s3cret" }, nil)
end)
