-- Own variant (attack review 3): ctx.json.encode of a table whose one key is a table with a
-- __tostring (the encoder names such a key by it) that empties the table being encoded and
-- refills it with 64 new keys, so the key the encoder's walk stood on is gone. Then
-- string.rep("x", 2^30), unprotected.
-- Before: the encoder's next lua_next raised ("invalid key to 'next'") inside Swift, over
-- Swift frames: the host's call depth stayed raised and the 64 MiB memory cap stopped
-- applying, so the 1 GiB string was made.
-- After: the encoder reads the keys before it runs any __tostring: json.encode returns or
-- raises cleanly; the 1 GiB rep fails at once with a memory error; the save is denied within
-- 2x the budget. Each step is written to results.log.
return {
  name = "json-encode-key-tostring",
  version = "1.0.0",
  description = "Hostile corpus: a json.encode key whose __tostring rewrites the table.",
  setup = function(ctx)
    ctx.policy("share.save", function()
      local t = {}
      local k = setmetatable({}, { __tostring = function()
        for kk in next, t do t[kk] = nil end
        for i = 1, 64 do t["n" .. i] = i end
        return "k"
      end })
      t[k] = 1
      local ok, text = pcall(ctx.json.encode, t)
      ctx.appendFile("results.log", "encode\t" .. (ok and "ok" or ("error " .. tostring(text):gsub("\n.*", ""))) .. "\n")
      local big = string.rep("x", 2^30)
      ctx.appendFile("results.log", "rep\tok " .. #big .. "\n")
    end, { name = "hostile" })
  end,
}
