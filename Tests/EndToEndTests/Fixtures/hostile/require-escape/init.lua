-- Own variant (attack review 7): require's module searcher was Lua code in the plugin's
-- state that called the global `ipairs` and string methods (`name:find`, `name:sub`,
-- `name:gsub`). A policy replaces them so that the search leads out of the plugin's folder,
-- then calls require("anything") under pcall. `poison` picks what is replaced:
--   ipairs  ipairs yields `target` (an absolute path) as the one candidate file
--   string  find/sub find nothing wrong, gsub turns the name into `relative` ("../x")
-- `target` is a Lua file outside the folder (the corpus's hostile.config.lua) or a FIFO with
-- no writer (the driver makes it). The outcome is written to results.log as
-- "require\tok <type of the value>" or "require\terror <message>".
-- Before: require opened and ran the file outside the folder (and read its text); on a FIFO,
-- io.open blocked in C for ever: the process hung, out of the budget's reach.
-- After: the host finds and reads modules itself, calling nothing the plugin can replace:
-- require finds nothing outside the folder ("module 'anything' not found"), at once.
return {
  name = "require-escape",
  version = "1.0.0",
  description = "Hostile corpus: replaces ipairs or string methods to make require read outside its folder.",
  config = {
    poison = { type = "string", default = "ipairs" },
    target = { type = "string", default = "/etc/passwd" },
    relative = { type = "string", default = "../hostile.config" },
  },
  setup = function(ctx, config)
    ctx.policy("share.save", function()
      local saved = { ipairs = ipairs, string = {} }
      local strings = getmetatable("").__index
      if config.poison == "ipairs" then
        rawset(_ENV, "ipairs", function(t)
          local done = false
          return function()
            if done then return nil end
            done = true
            return 1, config.target
          end, t, 0
        end)
      else
        for _, f in ipairs{ "find", "sub", "gsub", "match", "format", "rep" } do saved.string[f] = strings[f] end
        strings.find = function() return nil end
        strings.sub = function() return "x" end
        strings.gsub = function() return config.relative, 1 end
        strings.match = function() return nil end
      end
      package.loaded.anything = nil
      local ok, value = pcall(require, "anything")
      rawset(_ENV, "ipairs", saved.ipairs)
      for f, fn in pairs(saved.string) do strings[f] = fn end
      local outcome = ok and ("ok " .. type(value)) or ("error " .. tostring(value):gsub("\n.*", ""))
      ctx.appendFile("results.log", "require\t" .. outcome .. "\n")
    end, { name = "hostile" })
  end,
}
