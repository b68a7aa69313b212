local create, resume, pack, unpack, error_ = coroutine.create, coroutine.resume, table.pack, table.unpack, error
coroutine.wrap = function(f)
  local co = create(f)
  return function(...)
    local r = pack(resume(co, ...))
    if r[1] then return unpack(r, 2, r.n) end
    error_(r[2], 2)
  end
end
