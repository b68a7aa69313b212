-- Own variant (attack review 1): a policy finds the request table's hidden serial key with
-- the raw `next` and rawsets it to values the host never wrote (-1, 0, the integer extremes,
-- a float, a string, a table, a serial far ahead), clears `share` and reads `req.proposed`
-- again, which makes the host look the request up by that serial. Each read runs under pcall
-- and is written to results.log as "<value>\tok <recordName>" or "<value>\terror <message>";
-- then the true serial is put back and `share` read once more ("restored").
-- Before: the serial indexed the host's ring of kept requests as given: -1 % 64 is negative,
-- an out-of-range index, a Swift trap (SIGILL/SIGTRAP) that ends the process.
-- After: every read errors (or works); the host survives; with the serial restored the read
-- gives the share being saved.
return {
  name = "request-serial-overwrite",
  version = "1.0.0",
  description = "Hostile corpus: overwrites a policy request's hidden serial.",
  setup = function(ctx)
    ctx.policy("share.save", function(req)
      local key
      for k in next, req do
        if type(k) == "userdata" then key = k end
      end
      if key == nil then
        ctx.appendFile("results.log", "no hidden key\terror not found\n")
        return
      end
      local serial = rawget(req, key)
      local values = {
        { "-1", -1 }, { "0", 0 }, { "-64", -64 }, { "mininteger", math.mininteger }, { "maxinteger", math.maxinteger },
        { "serial+1", serial + 1 }, { "serial+64", serial + 64 }, { "serial-64", serial - 64 }, { "1e300", 1e300 }, { "0.5", 0.5 },
        { "string -1", "-1" }, { "table", {} }, { "false", false },
      }
      for _, v in ipairs(values) do
        rawset(req, "proposed", nil)
        rawset(req, key, v[2])
        local ok, share = pcall(function() return req.proposed end)
        local outcome = ok and ("ok " .. tostring(share and share.recordName)) or ("error " .. tostring(share):gsub("\n.*", ""))
        ctx.appendFile("results.log", v[1] .. "\t" .. outcome .. "\n")
      end
      rawset(req, "proposed", nil)
      rawset(req, key, serial)
      local ok, share = pcall(function() return req.proposed end)
      ctx.appendFile("results.log", "restored\t" .. (ok and ("ok " .. tostring(share and share.recordName))
        or ("error " .. tostring(share):gsub("\n.*", ""))) .. "\n")
    end, { name = "hostile" })
  end,
}
