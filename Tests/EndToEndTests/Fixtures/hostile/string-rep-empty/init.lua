-- Own variant (attack review 9): string.rep("", 1e10) allocates nothing, so no memory cap
-- stops it, and Lua's string.rep loops once per copy in C. The policy makes it, a few more
-- reps of empty strings and separators, and checks string.rep's answers on small cases
-- (string.rep is the host's own now).
-- Before: 1e10 empty copies in one C call: about ten seconds out of the budget's reach.
-- After: "" at once; a huge result made of separators fails at once with a memory error;
-- small results as Lua's. The policy allows when every answer is right and denies naming
-- the wrong ones; the driver expects the save allowed within 2x the budget.
return {
  name = "string-rep-empty",
  version = "1.0.0",
  description = "Hostile corpus: string.rep of the empty string 1e10 times.",
  setup = function(ctx)
    ctx.policy("share.save", function()
      local wrong = {}
      local function same(label, want, ...)
        local ok, got = pcall(...)
        if not ok or got ~= want then wrong[#wrong + 1] = label .. " gave " .. (tostring(ok) .. " " .. tostring(got)):sub(1, 200) end
      end
      local function naive(text, n, sep)
        local parts = {}
        for i = 1, n do parts[i] = text end
        return table.concat(parts, sep)
      end
      local function fails(label, ...)
        local ok, got = pcall(...)
        if ok then wrong[#wrong + 1] = label .. " returned " .. #tostring(got) .. " bytes" end
      end
      same('string.rep("", 1e10)', "", string.rep, "", 1e10)
      same('string.rep("", math.maxinteger)', "", string.rep, "", math.maxinteger)
      same('string.rep("", 1e10, "")', "", string.rep, "", 1e10, "")
      same('("x"):rep(0)', "", string.rep, "x", 0)
      same('("x"):rep(-5)', "", string.rep, "x", -5)
      same('("x"):rep(1)', "x", string.rep, "x", 1)
      same('("x"):rep(1, ",")', "x", string.rep, "x", 1, ",")
      same('("ab"):rep(3)', "ababab", string.rep, "ab", 3)
      same('("ab"):rep(3, ",")', "ab,ab,ab", string.rep, "ab", 3, ",")
      same('(""):rep(3, "-")', "--", string.rep, "", 3, "-")
      same('("abc"):rep(1000)', naive("abc", 1000, ""), string.rep, "abc", 1000)
      same('("ab"):rep(1000, "-")', naive("ab", 1000, "-"), string.rep, "ab", 1000, "-")
      fails('("a"):rep(1e10, ",")', string.rep, "a", 1e10, ",")
      fails('(""):rep(1e10, "x")', string.rep, "", 1e10, "x")
      fails('("x"):rep(2^62)', string.rep, "x", 2^62)
      fails('("x"):rep("many")', string.rep, "x", "many")
      if #wrong > 0 then return ctx.deny("string.rep: " .. table.concat(wrong, "; ")) end
    end, { name = "hostile" })
  end,
}
