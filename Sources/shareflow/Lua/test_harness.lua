-- The harness of `shareflow test`: test(name, fn), test.cases and the expect helpers. Failures
-- name the caller's line (error level 2).
__shareflow_tests = {}

-- lauxlib's name for an argument's type (luaL_typeerror): "no value" past the last argument.
local function typeOf(index, ...)
  if select("#", ...) < index then return "no value" end
  return type((select(index, ...)))
end

local function checkArgument(fname, index, expected, ...)
  local got = typeOf(index, ...)
  if got ~= expected then
    error(string.format("bad argument #%d to '%s' (%s expected, got %s)", index, fname, expected, got), 3)
  end
end

local function add(name, fn)
  table.insert(__shareflow_tests, { name = name, fn = fn })
end

-- `test` is a table that can be called, so it carries its helpers (test.cases, and more to come).
test = setmetatable({}, {
  __call = function(_, name, fn)
    assert(type(name) == "string", "test(name, fn): name must be a string")
    assert(type(fn) == "function", "test(name, fn): fn must be a function")
    add(name, fn)
  end,
})

-- Table-driven tests: fn(row, i) runs once per row of the list, as a test named name[i].
function test.cases(...)
  checkArgument("cases", 1, "string", ...)
  checkArgument("cases", 2, "table", ...)
  checkArgument("cases", 3, "function", ...)
  local name, rows, fn = ...
  for i, row in ipairs(rows) do
    add(name .. "[" .. i .. "]", function() return fn(row, i) end)
  end
end

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end
expect = {}
function expect.eq(actual, expected, what)
  if actual ~= expected then
    error((what and (what .. ": ") or "") .. "expected " .. show(expected) .. ", got " .. show(actual), 2)
  end
end
function expect.truthy(v, what)
  if not v then error((what or "expected a true value") .. ", got " .. show(v), 2) end
end
function expect.falsy(v, what)
  if v then error((what or "expected a false value") .. ", got " .. show(v), 2) end
end
function expect.code(err, code, what)
  if type(err) ~= "table" or err.code ~= code then
    error((what and (what .. ": ") or "") .. "expected error " .. code .. ", got " .. show(err), 2)
  end
  return err
end
function expect.raises(fn, pattern)
  local ok, e = pcall(fn)
  if ok then error("expected an error" .. (pattern and (" matching " .. show(pattern)) or ""), 2) end
  if pattern and not tostring(e):find(pattern) then
    error("error " .. show(tostring(e)) .. " does not match " .. show(pattern), 2)
  end
  return e
end
function expect.contains(s, part, what)
  if type(s) ~= "string" or not s:find(part, 1, true) then
    error((what and (what .. ": ") or "") .. show(s) .. " does not contain " .. show(part), 2)
  end
end

-- Decisions: a decision table from sf.policies.evaluate ({ allow, reason, policy, trace }), or
-- an operation's error (a denial is a permissionFailure whose message names the policy and its
-- reason; a batch's denial is among its partialErrors), or nil (the operation had no error).
local function isDecision(d)
  return type(d) == "table" and type(d.allow) == "boolean"
end

local function errorText(e)
  return tostring(e.message or e.localizedDescription or e.code)
end

-- The permissionFailure errors of an operation's error: itself, or the items of a batch.
local function denials(e)
  if e.code == "permissionFailure" then return { e } end
  local found = {}
  if type(e.partialErrors) == "table" then
    for _, item in pairs(e.partialErrors) do
      if type(item) == "table" and item.code == "permissionFailure" then table.insert(found, item) end
    end
  end
  return found
end

local function describeDecision(d)
  local by = d.policy and (" by " .. tostring(d.policy)) or ""
  local why = d.reason and (": " .. tostring(d.reason)) or ""
  return (d.allow and "allowed" or "denied") .. by .. why
end

function expect.allowed(d, what)
  local prefix = what and (what .. ": ") or ""
  if d == nil then return d end
  if isDecision(d) then
    if not d.allow then error(prefix .. "expected allowed, got " .. describeDecision(d), 2) end
    return d
  end
  if type(d) == "table" and d.code ~= nil then
    error(prefix .. "expected allowed, got error " .. tostring(d.code) .. ": " .. errorText(d), 2)
  end
  error(prefix .. "expected a decision or an operation's error, got " .. show(d), 2)
end

function expect.denied(d, reasonPattern, what)
  if reasonPattern ~= nil and type(reasonPattern) ~= "string" then
    error("bad argument #2 to 'denied' (string expected, got " .. type(reasonPattern) .. ")", 2)
  end
  local prefix = what and (what .. ": ") or ""
  if d == nil then error(prefix .. "expected a denial, got nil (allowed)", 2) end
  local reasons
  if isDecision(d) then
    if d.allow then error(prefix .. "expected a denial, got " .. describeDecision(d), 2) end
    reasons = { tostring(d.reason) }
  elseif type(d) == "table" and d.code ~= nil then
    reasons = {}
    for _, e in ipairs(denials(d)) do table.insert(reasons, errorText(e)) end
    if #reasons == 0 then
      error(prefix .. "expected a denial (permissionFailure), got error " .. tostring(d.code) .. ": " .. errorText(d), 2)
    end
  else
    error(prefix .. "expected a decision or an operation's error, got " .. show(d), 2)
  end
  if reasonPattern == nil then return d end
  for _, reason in ipairs(reasons) do
    if reason:find(reasonPattern) then return d end
  end
  error(prefix .. "denial " .. show(reasons[1]) .. " does not match " .. show(reasonPattern), 2)
end
