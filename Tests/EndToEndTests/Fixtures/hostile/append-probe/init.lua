-- Class 7: on each participant.fetched, appends a payload to `path` under pcall and logs the
-- outcome to probe.log ("ok <returned path>" or "error <message>"). Driven by
-- append_test.lua (bytes, symlinks, paths) and by the driver (a :memory: store's folder).
-- Payloads: "raw" is bytes that are not UTF-8 (NUL, lone continuation bytes, a surrogate,
-- an over-long and an out-of-range sequence); "text" is plain ASCII.
local payloads = {
  raw = "\0\1\127\128\191\254\255 abc \xc3\x28 \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80 \xe2\x82 end\n",
  text = "plain text\n",
}
return {
  name = "append-probe",
  version = "1.0.0",
  description = "Hostile corpus: appends a payload to a configured path and logs the outcome.",
  payloads = payloads,
  config = {
    path = { type = "string", default = "probe.txt" },
    payload = { type = "string", default = "text" },
  },
  setup = function(ctx, config)
    local payload = assert(payloads[config.payload], "unknown payload " .. config.payload)
    ctx.on("participant.fetched", function()
      local ok, result = pcall(ctx.appendFile, config.path, payload)
      ctx.appendFile("probe.log", (ok and "ok " or "error ") .. tostring(result):gsub("\n.*", "") .. "\n")
    end, { name = "probe" })
  end,
}
