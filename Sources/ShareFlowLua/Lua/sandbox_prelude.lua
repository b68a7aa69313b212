local readModule_, print_, loadModule_ = ...
local type_, error_, select_, pcall_ = type, error, select, pcall
local pack, unpack = table.pack, table.unpack
local loaded, preload = package.loaded, package.preload
if print_ ~= nil then print = print_ end
-- xpcall's handler would run where the error is raised; a budget's error is raised from
-- a hook, where Lua runs no hooks, so a looping handler could never be stopped. Here the
-- handler runs after the failed call has unwound (plugins have no debug library to
-- look at the stack anyway), under the budget like any other code.
xpcall = function(f, handler, ...)
  local r = pack(pcall_(f, ...))
  if r[1] then return unpack(r, 1, r.n) end
  return false, select_(2, pcall_(handler, r[2]))
end
-- require: Lua files inside the plugin's folder, loaded as text. The host finds and
-- reads the file (no symbolic link, regular files of at most 1 MiB); nothing here calls
-- a global or a string method the plugin could have replaced.
require = function(name)
  if type_(name) ~= "string" then
    error_("bad argument #1 to 'require' (string expected, got " .. type_(name) .. ")", 2)
  end
  local module = loaded[name]
  if module then return module end
  local loader, extra = preload[name], ":preload:"
  if loader == nil then
    local text, path = readModule_(name)
    if not text then error_("module '" .. name .. "' not found:\n\t" .. path, 2) end
    local chunk, err = loadModule_(text, "@" .. path, "t")
    if not chunk then
      error_("error loading module '" .. name .. "' from file '" .. path .. "':\n\t" .. err, 2)
    end
    loader, extra = chunk, path
  end
  local result = loader(name, extra)
  if result ~= nil then loaded[name] = result end
  if loaded[name] == nil then loaded[name] = true end
  return loaded[name], extra
end
