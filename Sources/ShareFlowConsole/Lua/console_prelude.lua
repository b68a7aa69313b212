sf = shareflow
local MAX_DEPTH, MAX_ITEMS, WIDTH = 4, 50, 78
local keywords = { "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
  "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while" }

-- ShareFlow's metatables are protected: getmetatable gives their type's name.
local function typename(v)
  local mt = getmetatable(v)
  if type(mt) == "string" then return mt end
  return type(mt) == "table" and rawget(mt, "__name") or nil
end

local function who(p)
  local l = p.userIdentity and p.userIdentity.lookupInfo
  return l and (l.emailAddress or l.phoneNumber or l.userRecordID) or p.userIdentity.userRecordID or "?"
end

local function showShare(s, indent)
  local lines = { string.format('Share "%s"  %s', s.title or s.recordName, s.url or "(not saved)") }
  lines[#lines + 1] = string.format("%s  owner: %s · publicPermission: %s · %s", indent,
    s.owner and who(s.owner) or "?", s.publicPermission, s.rootRecordID and ("root " .. s.rootRecordID.recordName) or "zone share")
  local ps = s.participants
  lines[#lines + 1] = string.format("%s  participants (%d):", indent, #ps)
  local width = 10
  for _, p in ipairs(ps) do width = math.max(width, #who(p)) end
  for _, p in ipairs(ps) do
    lines[#lines + 1] = string.format("%s    %-" .. width .. "s  %-13s %-9s %s", indent, who(p), p.role, p.permission, p.acceptanceStatus)
  end
  return table.concat(lines, "\n")
end

local show
local function key(k, seen)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") then return k end
  return "[" .. show(k, MAX_DEPTH, seen, "") .. "]"
end

show = function(v, depth, seen, indent)
  local t = type(v)
  if t == "string" then return string.format("%q", v):gsub("\\\n", "\\n") end
  if t ~= "table" and t ~= "userdata" then return tostring(v) end
  if t == "userdata" then
    if typename(v) == "Share" then return showShare(v, indent) end
    return tostring(v)
  end
  local mt = getmetatable(v)
  if type(mt) == "string" or (type(mt) == "table" and rawget(mt, "__tostring")) then return tostring(v) end
  if seen[v] then return "<cycle>" end
  if depth >= MAX_DEPTH then return "{…}" end
  seen[v] = true
  local parts, n = {}, #v
  for i = 1, math.min(n, MAX_ITEMS) do parts[#parts + 1] = show(v[i], depth + 1, seen, indent .. "  ") end
  local keys = {}
  for k in pairs(v) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b)
    if type(a) == type(b) and (type(a) == "string" or type(a) == "number") then return a < b end
    return type(a) < type(b)
  end)
  for _, k in ipairs(keys) do
    if #parts >= MAX_ITEMS then break end
    parts[#parts + 1] = key(k, seen) .. " = " .. show(v[k], depth + 1, seen, indent .. "  ")
  end
  local more = (n + #keys) - #parts
  if more > 0 then parts[#parts + 1] = "… " .. more .. " more" end
  seen[v] = nil
  if #parts == 0 then return "{}" end
  local flat = "{ " .. table.concat(parts, ", ") .. " }"
  if #flat <= WIDTH and not flat:find("\n") then return flat end
  return "{\n" .. indent .. "  " .. table.concat(parts, ",\n" .. indent .. "  ") .. "\n" .. indent .. "}"
end

function __console_show_all(...)
  local out = {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    out[i] = type(v) == "string" and v or show(v, 0, {}, "")
  end
  return table.concat(out, "\t")
end

function __console_complete(text)
  -- The word: names, dots, a colon, and indexes by number or quoted string (ps[1].x).
  local word = text:match("[%w_%.:%[%]\"']*$") or ""
  -- Only what can be read without calling anything: never evaluate a call.
  local function readable(path)
    local rest = path:match("^[%a_][%w_]*(.*)$")
    if not rest then return false end
    while #rest > 0 do
      local nxt = rest:match("^%.[%a_][%w_]*(.*)$") or rest:match("^%[%d+%](.*)$")
        or rest:match('^%["[^"]*"%](.*)$') or rest:match("^%['[^']*'%](.*)$")
      if not nxt then return false end
      rest = nxt
    end
    return true
  end
  local start = #text - #word
  local candidates, seen = {}, {}
  local function add(c) if not seen[c] then seen[c] = true; candidates[#candidates + 1] = c end end
  local base, sep, partial = word:match("^(.-)([%.:])([%w_]*)$")
  if not base then
    for k in pairs(_G) do
      if type(k) == "string" and k:sub(1, #word) == word and not k:match("^__") then add(k) end
    end
    for _, k in ipairs(keywords) do if k:sub(1, #word) == word then add(k) end end
  elseif readable(base) then
    local chunk = load("return " .. base, "=complete", "t")
    local ok, obj = pcall(chunk or error)
    if ok and obj ~= nil then
      if type(obj) == "userdata" then
        local members, methods = __console_members(obj)
        local isMethod = {}
        for _, m in ipairs(methods or {}) do isMethod[m] = true end
        for _, m in ipairs(members or {}) do
          if m:sub(1, #partial) == partial and (sep == "." or isMethod[m]) then
            add(base .. sep .. m .. (sep == ":" and "(" or ""))
          end
        end
        -- A view that iterates (a record's fields): its keys.
        if sep == "." and #(members or {}) == 0 then
          pcall(function()
            for k in pairs(obj) do
              if type(k) == "string" and k:sub(1, #partial) == partial then add(base .. "." .. k) end
            end
          end)
        end
      elseif type(obj) == "table" then
        local function scan(t, depth)
          for k, v in pairs(t) do
            if type(k) == "string" and k:sub(1, #partial) == partial and k:match("^[%a_][%w_]*$") then
              if sep == "." or type(v) == "function" then add(base .. sep .. k .. (sep == ":" and "(" or "")) end
            end
          end
          local mt = getmetatable(t)
          if depth < 3 and type(mt) == "table" and type(rawget(mt, "__index")) == "table" then scan(mt.__index, depth + 1) end
        end
        scan(obj, 0)
      end
    end
  end
  table.sort(candidates)
  return start, candidates
end
