-- Own variant (attack review 16): a chain of plugins, each calling the next one nested in its
-- own call. This is the template of every link: the driver copies it into a plugins folder of
-- its own as budget-chain-1 ... budget-chain-12, with `index` set to 1 ... 12 (as it is here,
-- 0, the plugin is "budget-chain-link" and acts on nothing the driver does). A link spins
-- `spinMillis` of CPU (15 ms, well within its own 50 ms budget) when it is its turn, then
-- makes the engine call the next link's plugin (each link's priority is its index, so the
-- next link is asked before the links already under way, which would refuse on their budget):
--   policy    a share.save policy acts on a share titled "chain-<index>", spins, then saves
--             a share titled "chain-<index + 1>" as the caller (denied if that save is)
--   observer  a participant.fetched observer acts on a fetch of chain<index>@example.com,
--             spins, then fetches chain<index + 1>@example.com as the caller
-- Before: each nested call began a budget of its own: the outermost call (link 1's) ran
-- 12 x 15 ms and more, past 2x its budget, and a longer chain without end.
-- After: nested calls share the outermost call's deadline: the chain is cut where that
-- passes; the outermost call ends within 2x its budget (a policy chain: the save is denied
-- naming the budget).
local index = 0
return {
  name = index == 0 and "budget-chain-link" or ("budget-chain-" .. index),
  version = "1.0.0",
  description = "Hostile corpus: a link of a chain of plugins, each calling the next.",
  config = {
    via = { type = "string", default = "policy" },
    spinMillis = { type = "integer", default = 15, min = 0 },
    links = { type = "integer", default = 12, min = 1 },
  },
  setup = function(ctx, config)
    local function spin()
      local t0 = os.clock()
      while os.clock() - t0 < config.spinMillis / 1000 do end
    end
    if config.via == "policy" then
      ctx.policy("share.save", function(req)
        if index == 0 or req.proposed.title ~= "chain-" .. index then return end
        spin()
        if index < config.links then
          local db = ctx.as(req.caller):container(req.container).privateCloudDatabase
          local record = ctx.Record{ recordType = "Link", zone = req.proposed.zoneID }
          local _, err = db:modifyRecords{ save = { record, ctx.Share{ rootRecord = record, title = "chain-" .. (index + 1) } } }
          if err then return ctx.deny("link " .. (index + 1) .. ": " .. tostring(err.message or err)) end
        end
      end, { name = "link", priority = index })
    else
      ctx.on("participant.fetched", function(ev)
        if index == 0 or ev.lookupInfo.emailAddress ~= "chain" .. index .. "@example.com" then return end
        spin()
        if index < config.links then
          ctx.as(ev.caller):container(ev.container):fetchShareParticipants{ "chain" .. (index + 1) .. "@example.com" }
        end
      end, { name = "link", priority = index })
    end
  end,
}
