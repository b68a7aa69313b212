-- Class 2: the plugin fills its state up to the memory cap and keeps it there: it keeps every
-- event table it is given (so a collection frees nothing), and fills the rest with strings
-- until even 16 bytes cannot be had after a full collection (over as many calls as its CPU
-- budget needs; it writes "full" to results.log once there). The host's next push into the
-- state (the next event's table, the next policy request) cannot allocate.
-- Today: the allocation fails outside any protected call: "unprotected Lua error", abort.
-- After: that call fails with a memory error (an observer's is logged; a policy denies) and
-- the host keeps serving.
return {
  name = "memory-cap-hold",
  version = "1.0.0",
  description = "Hostile corpus: holds its Lua state at the memory cap between calls.",
  setup = function(ctx)
    local hoard, count = nil, 0
    local size, full, countAtLastCollect = 1 << 20, false, -1  -- 1 MiB pieces: each fits in a call
    local function keep(v)
      hoard = { v, hoard }
      count = count + 1
    end
    local function grab(n) keep(string.rep("x", n)) end
    ctx.on("participant.fetched", function(ev)
      pcall(keep, ev)
      while not full do
        local ok, err = pcall(grab, size)
        if not ok then
          if not tostring(err):find("not enough memory", 1, true) then error(err, 0) end  -- the budget
          if size > 16 then
            size = size // 2
          else
            collectgarbage()
            if count == countAtLastCollect then
              full = true
              pcall(ctx.appendFile, "results.log", "full\n")
            else
              countAtLastCollect, size = count, 4096
            end
          end
        end
      end
    end, { name = "hoard" })
    ctx.policy("share.save", function() end, { name = "allow" })
  end,
}
