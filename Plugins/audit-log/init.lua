-- Writes every event as one JSON line, through the host's path-confined file API.
return {
  name = "audit-log",
  version = "1.0.0",
  description = "Writes every ShareFlow event as a JSON line to a file in the plugin's data folder.",
  config = {
    path = { type = "string", default = "audit.jsonl" },
    events = { type = "list", items = "string" },
  },
  setup = function(ctx)
    local function who(p)
      local l = p and p.userIdentity and p.userIdentity.lookupInfo
      return l and (l.emailAddress or l.phoneNumber or l.userRecordID)
    end

    local function record(ev)
      local line = {
        event = ev.name,
        time = os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(ev.time)),
        caller = ev.caller and (ev.caller.email or ev.caller.userRecordID),
        container = ev.container,
        share = ev.share and { title = ev.share.title, url = ev.share.url, record = ev.share.recordName },
        participant = ev.participant and { who = who(ev.participant), role = ev.participant.role,
          permission = ev.participant.permission, status = ev.participant.acceptanceStatus },
        reason = ev.reason, from = ev.from, to = ev.to, created = ev.created, url = ev.url,
        lookup = ev.lookupInfo and (ev.lookupInfo.emailAddress or ev.lookupInfo.phoneNumber or ev.lookupInfo.userRecordID),
        identity = ev.identity and ev.identity.userRecordID,
        operation = ev.operation, items = ev.items, failed = ev.failed, duration = ev.duration,
      }
      local text = ctx.json.encode(line) .. "\n"
      -- An audit log never goes quiet: past half the plugin's disk quota the log moves to
      -- <path>.1 (the older .1 goes), so the newest lines always fit, and the operator is told.
      -- (Each file and folder also costs 4 KiB of the quota.)
      if ctx.rotateFile(ctx.config.path, (ctx.diskQuota - 4 * 4096) // 2 - #text) then
        ctx.log.warn("audit-log: " .. ctx.config.path .. " reached half the plugin's disk quota; moved it to "
          .. ctx.config.path .. ".1 (the older .1 is gone) and started afresh")
        ctx.appendFile(ctx.config.path, ctx.json.encode({ event = "audit.rotated",
          time = os.date("!%Y-%m-%dT%H:%M:%SZ"), previous = ctx.config.path .. ".1" }) .. "\n")
      end
      ctx.appendFile(ctx.config.path, text)
    end

    for _, name in ipairs(ctx.config.events or ctx.events) do
      ctx.on(name, record, { name = "audit", priority = -1000 })
    end
  end,
}
