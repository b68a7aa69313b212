-- Own variant (attack review 17): utf8.len walks its string in one C call. The plugin grows
-- one ASCII string to 24 MiB (1 MiB made at load, doubled by each participant.fetched event
-- until it is there, writing "size <bytes>" to results.log each time); then a share.save
-- policy checks utf8.len's answers on small strings (it is the host's own now) and calls
-- utf8.len on the 24 MiB string once.
-- Before: the characters were counted in C with no budget check: one call ran as long as the
-- string made it (a plugin with a larger memory cap: seconds).
-- After: utf8.len checks the budget as it walks: the call ends with the budget error; the
-- save is denied naming the budget, within 2x the budget. A wrong small answer denies with
-- a reason naming it.
-- (Under the corpus's 64 MiB cap the string cannot be much longer, so before the fix the
-- call ended near the 2x limit, not far past it: about 160 ms of CPU against 150 in a debug
-- build. The case checks the budgeted utf8.len's answers and its budget error as much as it
-- shows the old overrun.)
local text = string.rep("a", 1024 * 1024)
local FULL = 24 * 1024 * 1024
return {
  name = "budget-utf8-len",
  version = "1.0.0",
  description = "Hostile corpus: utf8.len over a 24 MiB string.",
  setup = function(ctx)
    ctx.on("participant.fetched", function()
      if #text < FULL then text = text .. text end
      ctx.appendFile("results.log", "size " .. #text .. "\n")
    end, { name = "grow" })
    ctx.policy("share.save", function()
      local wrong = {}
      local function expect(label, want, ...)
        local got = table.pack(pcall(...))
        local answer = table.concat({ tostring(got[1]), tostring(got[2]), tostring(got[3]) }, " ")
        if answer:sub(1, #want) ~= want then wrong[#wrong + 1] = label .. " gave " .. answer end
      end
      expect("utf8.len('héllo')", "true 5 nil", utf8.len, "héllo")
      expect("utf8.len('abc', 2)", "true 2 nil", utf8.len, "abc", 2)
      expect("utf8.len('abc', -1)", "true 1 nil", utf8.len, "abc", -1)
      expect("utf8.len('abc', 1, -2)", "true 2 nil", utf8.len, "abc", 1, -2)
      expect("utf8.len('abc', 4)", "true 0 nil", utf8.len, "abc", 4)
      expect("utf8.len('')", "true 0 nil", utf8.len, "")
      expect("utf8.len('a\\xffb')", "true nil 2", utf8.len, "a\xffb")
      expect("utf8.len(surrogate)", "true nil 1", utf8.len, "\xed\xa0\x80")
      expect("utf8.len(surrogate, lax)", "true 1 nil", utf8.len, "\xed\xa0\x80", 1, -1, true)
      expect("utf8.len(4-byte)", "true 2 nil", utf8.len, "\u{10348}\u{10348}")
      expect("utf8.len('abc', 5)", "false", utf8.len, "abc", 5)
      expect("utf8.len('abc', 1, 4)", "false", utf8.len, "abc", 1, 4)
      if #wrong > 0 then return ctx.deny("utf8.len: " .. table.concat(wrong, "; ")) end
      utf8.len(text)
      return ctx.deny("utf8.len over " .. #text .. " bytes returned inside the budget")
    end, { name = "hostile" })
  end,
}
