-- The harness of `shareflow test`: test(name, fn) and the expect helpers. Failures name the
-- caller's line (error level 2).
__shareflow_tests = {}
function test(name, fn)
  assert(type(name) == "string", "test(name, fn): name must be a string")
  assert(type(fn) == "function", "test(name, fn): fn must be a function")
  table.insert(__shareflow_tests, { name = name, fn = fn })
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
