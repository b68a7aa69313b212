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
      ctx.appendFile(ctx.config.path, ctx.json.encode(line) .. "\n")
    end

    for _, name in ipairs(ctx.config.events or ctx.events) do
      ctx.on(name, record, { name = "audit", priority = -1000 })
    end
  end,
}
