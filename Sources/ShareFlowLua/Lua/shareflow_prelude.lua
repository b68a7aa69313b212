local sf = ...
local new = sf._newOperation
sf._newOperation = nil
for name, make in pairs(new) do
  sf[name] = function(fields)
    local op = make()
    if fields ~= nil then
      if type(fields) ~= "table" then
        error("bad argument #1 to '" .. name .. "' (table expected, got " .. type(fields) .. ")", 2)
      end
      for k, v in pairs(fields) do
        -- A bad field is this constructor's bad argument, at the caller's line.
        local ok, err = pcall(function() op[k] = v end)
        if not ok then
          err = tostring(err):gsub("^%[shareflow prelude%]:%d+: ", "", 1)
          error("bad argument #1 to '" .. name .. "' (" .. err .. ")", 2)
        end
      end
    end
    return op
  end
end
