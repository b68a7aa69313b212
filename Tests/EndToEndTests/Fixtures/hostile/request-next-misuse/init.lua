-- Own variant (attack review 2 and 3): takes the `next` that `pairs(req)` returns for a
-- policy request (the host's own, which steps over the hidden serial) and calls it with
-- arguments `pairs` never gives it. `kind` picks the misuse:
--   non-table    nxt(12345, nil), unprotected
--   missing-key  pcall(nxt, {}, "no-such-key"), then string.rep("x", 2^30) unprotected
-- Before: non-table: lua_next on a number, in Swift: a crash. missing-key: lua_next raised
-- ("invalid key to 'next'") through Swift frames, leaving the host's call depth raised, so
-- the 64 MiB memory cap no longer applied and the 1 GiB string was made.
-- After: non-table: "bad argument #1 ... (table expected, got number)", the save denied.
-- missing-key: pcall returns false with the error; the 1 GiB rep fails at once with a
-- memory error, the save denied; both within 2x the budget.
return {
  name = "request-next-misuse",
  version = "1.0.0",
  description = "Hostile corpus: calls a policy request's pairs iterator with bad arguments.",
  config = {
    kind = { type = "string", default = "non-table" },
  },
  setup = function(ctx, config)
    ctx.policy("share.save", function(req)
      local nxt = pairs(req)
      if config.kind == "non-table" then
        nxt(12345, nil)
      else
        local ok, err = pcall(nxt, {}, "no-such-key")
        ctx.appendFile("results.log", "missing key\t" .. (ok and "ok" or ("error " .. tostring(err):gsub("\n.*", ""))) .. "\n")
        local big = string.rep("x", 2^30)
        ctx.appendFile("results.log", "rep\tok " .. #big .. "\n")
      end
    end, { name = "hostile" })
  end,
}
