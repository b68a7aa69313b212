-- Own variant (attack review 4): calls the host from inside coroutines. A share.save policy
-- runs, in coroutine.wrap: ctx.decisions{ limit = 1 } 300 times (each result a table the host pushes),
-- reads req.caller.email and req.proposed.recordName, ctx.json.encode, ctx.Record, and a
-- participant fetch as the caller, whose participant.fetched event this plugin observes (so
-- the host delivers an event while the plugin's coroutine is the running thread); then the
-- same two levels of coroutines deep. Results go to results.log as "<what>\t<value>".
-- Before: the host pushed every result on the plugin's main thread, not on the coroutine
-- that called it: 300 results overran the main thread's stack (no check), corrupting memory
-- or crashing; values read in a coroutine came back wrong or from the wrong stack.
-- After: every call returns the right value on the calling coroutine's stack; the save is
-- allowed; the driver compares the values with the ones read outside any coroutine.
return {
  name = "coroutine-host-calls",
  version = "1.0.0",
  description = "Hostile corpus: host calls from inside coroutines.",
  setup = function(ctx)
    local function log(what, value) ctx.appendFile("results.log", what .. "\t" .. tostring(value) .. "\n") end
    ctx.on("participant.fetched", function(ev)
      log("event", ev.lookupInfo.emailAddress)
    end, { name = "fetched" })
    ctx.policy("share.save", function(req)
      log("main caller", req.caller.email)
      -- 300 calls in the first coroutine (what overran the main thread's stack), 20 in each
      -- nested one: the policy's one call stays inside its 50 ms budget under AddressSanitizer
      -- on a loaded machine (900 decision-log reads, about 44 µs each there, went past it).
      local function calls(label, times)
        local n = 0
        for _ = 1, times do
          if type(ctx.decisions{ limit = 1 }) == "table" then n = n + 1 end
        end
        log(label .. " decisions", n)
        log(label .. " caller", req.caller.email)
        log(label .. " share", req.proposed.recordName)
        log(label .. " json", ctx.json.encode({ a = { 1, 2, 3 }, b = "x" }))
        local record = ctx.Record{ recordType = "Probe", recordName = label, zone = req.proposed.zoneID, fields = { n = 7 } }
        log(label .. " record", record.recordName .. " " .. tostring(record.fields.n))
        local c = ctx.as(req.caller):container(req.container)
        local ps, err = c:fetchShareParticipants{ "carol@example.com" }
        log(label .. " fetch", (ps and ps[1] and ps[1].userIdentity.lookupInfo.emailAddress) or tostring(err))
      end
      coroutine.wrap(function() calls("co1", 300) end)()
      coroutine.wrap(function()
        local inner = coroutine.create(function() calls("co2", 20) coroutine.yield("mid") calls("co2b", 20) end)
        local ok, mid = coroutine.resume(inner)
        log("co2 yield", tostring(ok) .. " " .. tostring(mid))
        ok = coroutine.resume(inner)
        log("co2 end", tostring(ok) .. " " .. coroutine.status(inner))
      end)()
      log("main share", req.proposed.recordName)
    end, { name = "hostile" })
  end,
}
