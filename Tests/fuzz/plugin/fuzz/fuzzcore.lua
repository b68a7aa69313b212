-- The ShareFlow Lua API fuzzer, shared by the trusted script (Tests/fuzz/fuzz.lua), the plugin
-- (Tests/fuzz/plugin/fuzz/init.lua) and the plugin driver (Tests/fuzz/drive_plugin.lua).
--
-- It throws random values at every function, method, getter, setter and metamethod it can
-- reach: module functions found by walking the `shareflow` table, object members listed in
-- types/shareflow.lua (or the built-in copy below), and every function the host hands back.
-- Every call goes through pcall: errors are fine, the process dying or hanging is not.
-- Before each call a one-line description goes to the breadcrumb callback, so a crash can be
-- pinned to the exact call.
--
-- Pure Lua 5.4; runs inside the plugin sandbox too (no io, no debug, os time functions only).

local M = {}

-- Members of every object class as types/shareflow.lua lists them ("Class.field",
-- "Class:method"; runtime class names, inheritance flattened). types/shareflow.lua is parsed
-- when it can be read (the script mode) and passed to the plugin through its config; this
-- copy is the fallback.
M.builtinMembers = {
  "Account.userRecordID", "Account.email", "Account.emails", "Account.phone", "Account.phones", "Account.name",
  "Account.discoverable", "Account.discoverability", "Account.contacts", "Account:addEmail", "Account:addPhone",
  "Account:setDiscoverable", "Account:setName", "Account:addContacts",
  "Session.account", "Session:container",
  "Container.containerIdentifier", "Container.privateCloudDatabase", "Container.sharedCloudDatabase",
  "Container.publicCloudDatabase", "Container.session", "Container:add", "Container:waitUntilAllOperationsAreFinished",
  "Container:fetchShareParticipants", "Container:fetchShareMetadata", "Container:acceptShares",
  "Container:discoverAllUserIdentities", "Container:discoverUserIdentities",
  "Database.databaseScope", "Database.container", "Database:saveZone", "Database:fetchAllRecordZones",
  "Database:fetchRecord", "Database:fetchRecords", "Database:modifyRecords",
  "Participant.participantID", "Participant.userIdentity", "Participant.role", "Participant.permission",
  "Participant.acceptanceStatus",
  "ShareMetadata.containerIdentifier", "ShareMetadata.share", "ShareMetadata.url", "ShareMetadata.ownerIdentity",
  "ShareMetadata.hierarchicalRootRecordID", "ShareMetadata.rootRecord", "ShareMetadata.participantRole",
  "ShareMetadata.participantStatus", "ShareMetadata.participantPermission",
  "HookHandle.name", "HookHandle:remove",
  "LookupInfo.emailAddress", "LookupInfo.phoneNumber", "LookupInfo.userRecordID",
  "NameComponents.prefix", "NameComponents.given", "NameComponents.middle", "NameComponents.family",
  "NameComponents.suffix", "NameComponents.nickname",
  "RecordZoneID.zoneName", "RecordZoneID.ownerName", "RecordZone.zoneName", "RecordZone.zoneID",
  "RecordID.recordName", "RecordID.zoneID",
  "Error.code", "Error.codeNumber", "Error.message", "Error.partialErrors", "Error.retryAfter",
  "UserIdentity.userRecordID", "UserIdentity.lookupInfo", "UserIdentity.nameComponents",
  "UserIdentity.hasiCloudAccount", "UserIdentity.contactIdentifiers",
  "Event.name", "Event.caller", "Event.container", "Event.time", "Event.share", "Event.participant",
  "Event.lookupInfo", "Event.metadata", "Event.identity", "Event.url", "Event.reason", "Event.from", "Event.to",
  "Event.created", "Event.operation", "Event.items", "Event.failed", "Event.duration",
  "PolicyRequest.point", "PolicyRequest.caller", "PolicyRequest.container", "PolicyRequest.share",
  "PolicyRequest.participant", "PolicyRequest.metadata", "PolicyRequest.from", "PolicyRequest.to",
}
do
  local record = { "recordID", "recordName", "zoneID", "recordType", "recordChangeTag", "modificationDate", "fields",
    "parent", "share", ":get", ":set" }
  local share = { "url", "title", "publicPermission", "participants", "owner", "currentUserParticipant", "rootRecordID",
    "isZoneShare", ":addParticipant", ":removeParticipant" }
  local operation = { "operationID", "qualityOfService", "isExecuting", "isFinished", "isCancelled", "error",
    "database", "completionBlock", ":cancel", ":wait" }
  local ops = {
    FetchShareParticipantsOperation = { "userIdentityLookupInfos", "perShareParticipantResultBlock",
      "shareParticipantFetchedBlock", "fetchShareParticipantsResultBlock", "fetchShareParticipantsCompletionBlock" },
    FetchShareMetadataOperation = { "shareURLs", "shouldFetchRootRecord", "rootRecordDesiredKeys",
      "perShareMetadataResultBlock", "perShareMetadataBlock", "fetchShareMetadataResultBlock",
      "fetchShareMetadataCompletionBlock" },
    AcceptSharesOperation = { "shareMetadatas", "perShareResultBlock", "perShareCompletionBlock",
      "acceptSharesResultBlock", "acceptSharesCompletionBlock" },
    DiscoverAllUserIdentitiesOperation = { "userIdentityDiscoveredBlock", "progressBlock",
      "discoverAllUserIdentitiesResultBlock", "discoverAllUserIdentitiesCompletionBlock" },
    DiscoverUserIdentitiesOperation = { "userIdentityLookupInfos", "userIdentityDiscoveredBlock",
      "discoverUserIdentitiesResultBlock", "discoverUserIdentitiesCompletionBlock" },
    ModifyRecordsOperation = { "recordsToSave", "recordIDsToDelete", "perRecordSaveBlock", "perRecordDeleteBlock",
      "modifyRecordsResultBlock", "modifyRecordsCompletionBlock" },
    ModifyRecordZonesOperation = { "recordZonesToSave", "recordZoneIDsToDelete", "perRecordZoneSaveBlock",
      "perRecordZoneDeleteBlock", "modifyRecordZonesResultBlock", "modifyRecordZonesCompletionBlock" },
    FetchRecordsOperation = { "recordIDs", "desiredKeys", "perRecordResultBlock", "fetchRecordsResultBlock",
      "fetchRecordsCompletionBlock" },
  }
  local list = M.builtinMembers
  local function add(class, names)
    for _, n in ipairs(names) do
      list[#list + 1] = n:sub(1, 1) == ":" and class .. n or class .. "." .. n
    end
  end
  add("Record", record)
  add("Share", record)
  add("Share", share)
  local opNames = {}
  for name in pairs(ops) do opNames[#opNames + 1] = name end
  table.sort(opNames)
  for _, name in ipairs(opNames) do
    add(name, operation)
    add(name, ops[name])
  end
end

-- types/shareflow.lua class names → the runtime `__name` of their objects.
local ALIAS = { Metadata = "ShareMetadata", Hook = "HookHandle", ZoneID = "RecordZoneID", Zone = "RecordZone",
  Identity = "UserIdentity" }

--- Parses the LuaLS definitions into the member list format of `M.builtinMembers`.
function M.parseTypes(text)
  local classes, order, varClass = {}, {}, {}
  local current
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local cls, rest = line:match("^%-%-%-@class%s+shareflow%.([%w_]+)(.*)$")
    if cls then
      current = { name = cls, parent = rest:match("shareflow%.([%w_]+)"), fields = {}, methods = {} }
      classes[cls] = current
      order[#order + 1] = cls
    elseif line:match("^%-%-%-@class%s+shareflow%s*$") then
      current = nil
    else
      local field = line:match("^%-%-%-@field%s+([%w_]+)")
      if field and current then current.fields[#current.fields + 1] = field end
      local var = line:match("^local%s+([%w_]+)%s*=%s*{}")
      if var and current then varClass[var] = current end
      local owner, method = line:match("^function%s+([%w_]+):([%w_]+)%(")
      if owner and varClass[owner] then
        local c = varClass[owner]
        c.methods[#c.methods + 1] = method
      end
    end
  end
  local members = {}
  local function collect(c, into, seen)
    if seen[c] then return end
    seen[c] = true
    if c.parent and classes[c.parent] then collect(classes[c.parent], into, seen) end
    for _, f in ipairs(c.fields) do into[#into + 1] = "." .. f end
    for _, m in ipairs(c.methods) do into[#into + 1] = ":" .. m end
  end
  for _, name in ipairs(order) do
    local items = {}
    collect(classes[name], items, {})
    for _, item in ipairs(items) do members[#members + 1] = (ALIAS[name] or name) .. item end
  end
  return members
end

-- ===================================================================================== state

local api, mode, skip, crumbFn, log
local plugin = false
local rngState = 1
local calls, internalErrors = 0, 0
local depth, heartbeat = 0, 0
local clock = os.clock
local names = setmetatable({}, { __mode = "kv" })  -- value → its name in the breadcrumbs
local ours = setmetatable({}, { __mode = "kv" })   -- tables and functions the fuzzer made
local flags = setmetatable({}, { __mode = "kv" })  -- fuzz table → "deep" / "cyclic" / "meta"
local shapeName = setmetatable({}, { __mode = "kv" }) -- fuzz table → the shape it was made as
local pools, poolKeys = {}, {}                     -- class → harvested values
local inPool = setmetatable({}, { __mode = "kv" })
local strPool, strSeen = {}, {}
local classes = {}                                 -- runtime class → { fields = {}, methods = {} }
local targets = {}                                 -- module functions { name, fn }
local world = { emails = {}, urls = {}, shares = {}, zones = {}, n = 0 }
local hooks = {}
local EVENTS, POINTS = {}, { "share.accept", "participant.add", "share.publicPermission", "share.save" }
local CID = "iCloud.com.example.fuzz"
local OPS = { "FetchShareParticipantsOperation", "FetchShareMetadataOperation", "AcceptSharesOperation",
  "DiscoverAllUserIdentitiesOperation", "DiscoverUserIdentitiesOperation", "ModifyRecordsOperation",
  "ModifyRecordZonesOperation", "FetchRecordsOperation" }
local OBJECT_CLASSES = { "Account", "Session", "Container", "Database", "Record", "Share", "RecordFields",
  "Participant", "ShareMetadata", "HookHandle", "LookupInfo", "RecordZoneID", "RecordID", "RecordZone",
  "NameComponents", "UserIdentity", "Error", "Event", "PolicyRequest", "Decision", "Invitation", "PluginInfo",
  "userdata", "table",
  "FetchShareParticipantsOperation", "FetchShareMetadataOperation", "AcceptSharesOperation",
  "DiscoverAllUserIdentitiesOperation", "DiscoverUserIdentitiesOperation", "ModifyRecordsOperation",
  "ModifyRecordZonesOperation", "FetchRecordsOperation" }

local function skipping(class) return skip[class] == true end

-- A loop the plugin's CPU budget must stop. When a call's budget ran out and its error was
-- caught, every further instruction of the call should raise, but a later loop runs on
-- forever (class budget-escape): skipping that class, loops give up by themselves after
-- 0.08 s, so a budget that works (50 ms) still stops them first.
local gaveUpAt = -1
local function spinForever()
  if skipping("budget-escape") then
    -- once a loop had to give up, the budget is known to be spent and escaped: the loops
    -- that follow within the same call give up at once
    if clock() - gaveUpAt < 0.2 then error("fuzz: not looping, the CPU budget was escaped") end
    local t0 = clock()
    while clock() - t0 < 0.08 do end
    gaveUpAt = clock()
    error("fuzz: loop gave up after 0.08 s (the CPU budget did not stop it)")
  end
  while true do end
end

-- =================================================================================== random

local function rand(n)
  local s = rngState
  s = s ~ (s << 13)
  s = s ~ (s >> 7)
  s = s ~ (s << 17)
  rngState = s
  if n <= 1 then return 1 end
  return ((s >> 1) % n) + 1
end
local function chance(p) return rand(10000) <= p * 10000 end
local function pick(list) return list[rand(#list)] end

-- ============================================================================== descriptions

local function esc(s, max)
  max = max or 24
  local shown = (s:sub(1, max):gsub("[^%w%p ]", function(c) return ("\\x%02x"):format(c:byte()) end))
  if #s > max then return ('"%s"..(%d bytes)'):format(shown, #s) end
  return '"' .. shown .. '"'
end

local function className(v)
  local t = type(v)
  if t ~= "table" and t ~= "userdata" then return nil end
  local mt = getmetatable(v)
  -- ShareFlow's metatables are protected: getmetatable answers their type's name.
  if type(mt) == "string" then return mt end
  if type(mt) == "table" then
    local n = rawget(mt, "__name")
    if type(n) == "string" then return n end
  end
  return nil
end

local function describe(v)
  local t = type(v)
  if t == "nil" or t == "boolean" then return tostring(v) end
  if t == "number" then
    if v ~= v then return "nan" end
    if math.type(v) == "integer" then
      if v == math.maxinteger then return "maxinteger" end
      if v == math.mininteger then return "mininteger" end
      return ("%d"):format(v)
    end
    if v == 1 / 0 then return "inf" end
    if v == -1 / 0 then return "-inf" end
    return ("%.17g"):format(v)
  end
  if t == "string" then return esc(v) end
  local n = names[v]
  if n then return n end
  local c = className(v)
  if t == "table" and not c then
    -- a short look inside plain tables (raw: no metamethod runs)
    local parts, count = {}, 0
    local mt = getmetatable(v)
    for k, x in next, v do
      count = count + 1
      if count > 4 then parts[#parts + 1] = "..."; break end
      local kd = type(k) == "string" and k or "[" .. (type(k) == "number" and describe(k) or type(k)) .. "]"
      local xd
      if type(x) == "table" and not names[x] and not className(x) and count <= 2 and not flags[x] then
        local inner = {}
        for ik, iv in next, x do
          if #inner >= 3 then inner[#inner + 1] = "..."; break end
          local ivd = (type(iv) == "table" or type(iv) == "userdata") and (names[iv] or className(iv) or type(iv))
            or describe(iv)
          inner[#inner + 1] = (type(ik) == "string" and ik or "[" .. type(ik) .. "]") .. "=" .. ivd
        end
        xd = (shapeName[x] or "") .. "{" .. table.concat(inner, ",") .. "}"
      else
        xd = (type(x) == "table" or type(x) == "userdata") and (names[x] or className(x) or type(x)) or describe(x)
      end
      parts[#parts + 1] = kd .. "=" .. xd
    end
    return (shapeName[v] or "") .. "{" .. table.concat(parts, ",") .. "}" .. (mt ~= nil and "+metatable" or "")
  end
  return c and (t .. ":" .. c) or t
end

local function describeArgs(args)
  local parts = {}
  for i = 1, args.n do parts[i] = describe(args[i]) end
  return table.concat(parts, ", ")
end

local function named(name, v)
  names[v] = name
  if type(v) == "table" or type(v) == "function" then ours[v] = true end
  return v
end

-- ================================================================================== harvest

local MAXPOOL = 40

local function addTo(key, v)
  local p = pools[key]
  if not p then
    p = {}
    pools[key] = p
    poolKeys[#poolKeys + 1] = key
  end
  if inPool[v] == key then return end
  inPool[v] = key
  if #p < MAXPOOL then p[#p + 1] = v else p[rand(MAXPOOL)] = v end
end

local function addString(s)
  if #s > 300 or strSeen[s] then return end
  strSeen[s] = true
  if #strPool < 200 then strPool[#strPool + 1] = s else strPool[rand(200)] = s end
  if s:match("^https?://") or s:match("^shareflow:") then
    world.urls[#world.urls + 1] = s
    if #world.urls > 60 then table.remove(world.urls, 1) end
  end
end

local reqMeta -- the metatable of policy requests, once seen

local function sortedKeys(t, max)
  local keys = {}
  for k in next, t do
    keys[#keys + 1] = k
    if #keys >= max then break end
  end
  table.sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == "string" then return a < b end
    if ta == "number" then return a < b end
    return false
  end)
  return keys
end

local fnInfo = setmetatable({}, { __mode = "kv" }) -- host function → { class =, key = } for metatable functions
local methodInfo = setmetatable({}, { __mode = "kv" }) -- method function → { class =, name = }
local moduleName = setmetatable({}, { __mode = "kv" }) -- module function → "shareflow.x.y"

local function harvest(v, tag, d, origin)
  d = d or 0
  local t = type(v)
  if t == "userdata" then
    addTo(className(v) or "userdata", v)
  elseif t == "table" then
    if ours[v] then return end
    local c = tag or className(v)
    if not c and reqMeta and getmetatable(v) == reqMeta then c = "PolicyRequest" end
    addTo(c or "table", v)
    if d < 2 then
      for _, k in ipairs(sortedKeys(v, 24)) do
        if type(k) == "userdata" then harvest(k, nil, d + 1, origin) end
        harvest(rawget(v, k), nil, d + 1, origin)
      end
    end
  elseif t == "function" then
    if not ours[v] then
      if not names[v] then names[v] = "hostfn<" .. (origin or "?") .. ">" end
      addTo("function", v)
    end
  elseif t == "string" then
    addString(v)
  elseif t == "thread" then
    addTo("thread", v)
  end
end

local function some(class)
  local p = pools[class]
  if p and #p > 0 then return p[rand(#p)] end
  return nil
end

-- ================================================================================== calling

local recent, RECENT = {}, 64 -- the last calls, for reports

local function crumb(desc)
  calls = calls + 1
  recent[calls % RECENT + 1] = calls .. " " .. desc
  if crumbFn then crumbFn(calls, desc) end
end

local function pack(...) return { n = select("#", ...), ... } end

local KNOWN -- known crash classes (below): { name, predicate(f, args) }

local function knownCrash(f, args)
  if next(skip) == nil then return nil end
  for _, k in ipairs(KNOWN) do
    if skip[k[1]] and k[2](f, args) then return k[1] end
  end
  return nil
end

local afterCall -- debugging: runs after every call (SHAREFLOW_FUZZ_GCCHECK)
local stats, statKey = {}, nil -- what was called how often, and how often it did not raise

--- Calls f(args) under pcall, in a coroutine now and then; harvests what comes back.
local function attempt(desc, f, args)
  args = args or { n = 0 }
  local known = knownCrash(f, args)
  if known then
    if crumbFn then crumbFn(calls, "(skipped, known crash class " .. known .. ") " .. desc) end
    return { n = 1, false }
  end
  local co = mode ~= "driver" and not skipping("coroutine") and chance(0.03)
  crumb((co and "[in coroutine] " or "") .. desc)
  local res
  if co then
    local thread = coroutine.create(function() return f(table.unpack(args, 1, args.n)) end)
    res = pack(pcall(coroutine.resume, thread))
  else
    res = pack(pcall(f, table.unpack(args, 1, args.n)))
  end
  if afterCall then afterCall() end
  local key = statKey or desc:match("^[%w_.:]+") or "?"
  key = key:gsub("[^%w%p ]", "?")
  statKey = nil
  local st = stats[key]
  if not st then st = { 0, 0 }; stats[key] = st end
  st[1] = st[1] + 1
  if res[1] then st[2] = st[2] + 1 end
  if args.noHarvest then return res end
  local info = fnInfo[f]
  if info and res[1] then
    for i = 2, math.min(res.n, 4) do
      if type(res[i]) == "function" and not fnInfo[res[i]] and not ours[res[i]] then
        fnInfo[res[i]] = { class = info.class, key = info.key .. "→function" }
        names[res[i]] = ("function from metatable(%s).%s"):format(info.class, info.key)
      end
    end
  end
  local origin
  for i = 2, math.min(res.n, 8) do
    if type(res[i]) == "function" or type(res[i]) == "table" then origin = origin or desc:sub(1, 60) end
    harvest(res[i], nil, 0, origin)
  end
  return res
end

local function index(o, k) return o[k] end
local function prepend(args, v)
  for i = args.n, 1, -1 do args[i + 1] = args[i] end
  args[1] = v
  args.n = args.n + 1
end
local function assign(o, k, v) o[k] = v end

--- Reads o[k] for the generators (crumbed too: a crash there must be pinned as well).
local function peek(o, k)
  if o == nil then return nil end
  crumb("peek " .. describe(o) .. "." .. tostring(k))
  local ok, v = pcall(index, o, k)
  if ok then return v end
  return nil
end

-- ============================================================================ value pools

local NUMS = { 0, -0.0, 1, -1, 2, 3, 7, 20, 63, 64, 65, 100, 255, 256, 400, 401, 1000, 65535, 65536, 2 ^ 31, 2 ^ 32,
  1 << 53, 2 ^ 53, 2 ^ 63, -2 ^ 63, math.maxinteger, math.mininteger, math.maxinteger - 1, math.mininteger + 1,
  0 / 0, -(0 / 0), 1 / 0, -1 / 0, 1e300, -1e300, 5e-324, -5e-324, 1e-310, 0.5, -0.5, 1.5, 3.9999, 1e15, 1e16,
  -1e16, 9.2233720368547758e18, -9.2233720368547758e18, 1e19 }

local STRS = { "", " ", "\0", "a\0b", "\xff\xfe", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "%", "%s%s%n", "%d",
  "..", "../x", "/", "/etc/passwd", "a/../../b", "a/b", "\n", "\r\n", "\t",
  "alice@example.com", "ALICE@Example.COM  ", "bob@example.com", "nobody@nowhere.invalid", "@", "a@", "@b",
  "a@b@c", "a\0@example.com", "+14155550100", "+1 (415) 555-0101", "+", "+1234567890123456", "14155550100",
  "+1\0", "_", "_00000000000000000000000000000000", "_" .. ("f"):rep(32), CID, "iCloud.com.example.other",
  "FuzzZone", "_defaultZone", "cloudkit.zoneshare", "cloudkit.share", "cloudkit.title", "Doc", "title", "1abc",
  "a b", "é", "x" .. ("y"):rep(254), ("n"):rep(256), "https://", "https://share.example/x",
  "none", "readOnly", "readWrite", "unknown", "owner", "administrator", "privateUser", "publicUser", "pending",
  "accepted", "removed", "userInteractive", "userInitiated", "default", "utility", "background", "removedByOwner",
  "left", "publicPermissionChanged", "shareDeleted", "expired", "initialState", "granted", "denied",
  "couldNotComplete", "private", "shared", "public", "share.accept", "participant.add", "share.publicPermission",
  "share.save", "audit-log", "domain-allowlist", "expiring-invitations", "fuzz", "__index", "__gc", "recordName",
  "zoneID", "emailAddress", "fields", "parent", "allow", "reason" }

local big = {}
local function bigString()
  if not big[1] then
    big = { named("str(1 MiB 'x')", ("x"):rep(1 << 20)), named("str(64 KiB NUL)", ("\0"):rep(65536)),
      named("str(200 KB 'é')", ("é"):rep(100000)), named("str(100 KB \\xff)", ("\xff"):rep(100000)),
      named("str(1 MiB email)", ("a"):rep(1 << 20) .. "@example.com") }
  end
  return pick(big)
end

local function pickString()
  local r = rand(100)
  if r <= 2 then return bigString() end
  if r <= 55 or #strPool == 0 then return pick(STRS) end
  return pick(strPool)
end

local FNS, THREADS, WEIRD = {}, {}, {}
local doCalls -- forward: a few random calls (re-entrancy from callbacks)

local function buildWeird()
  local function deep(n, key)
    local root = {}
    local c = root
    for _ = 1, n do
      local x = {}
      c[key] = x
      c = x
    end
    return root
  end
  local function add(name, v)
    WEIRD[#WEIRD + 1] = named(name, v)
    if name:match("^deep") or name:match("=deep") then flags[v] = "deep"
    elseif name:match("^cyclic") then flags[v] = "cyclic"
    elseif getmetatable(v) ~= nil then flags[v] = "meta" end
  end
  add("deep10k[1]", deep(10000, 1))
  add("deep10k.a", deep(10000, "a"))
  add("deep300[1]", deep(300, 1))
  add("deep70.a", deep(70, "a"))
  local leaf = deep(10000, 1)
  add("{title=deep10k}", { title = leaf })
  local self1 = {}
  self1.self = self1
  add("cyclic t.self=t", self1)
  local self2 = {}
  self2[1] = self2
  add("cyclic t[1]=t", self2)
  local a, b = {}, {}
  a[1], b[1] = b, a
  add("cyclic a[1]=b,b[1]=a", a)
  local c, d = {}, {}
  c.x, d.y = d, c
  add("cyclic a.x=b,b.y=a", c)
  local idc = { recordName = "r" }
  idc.zoneID = idc
  add("cyclic recordID.zoneID=self", idc)
  local listc = { "a", "b" }
  listc[3] = listc
  add("cyclic {'a','b',self}", listc)
  add("sparse {[1]=1,[3]=3}", { [1] = 1, [3] = 3 })
  add("mixed {1,'a',true}", { 1, "a", true })
  add("{[1.5]=1}", { [1.5] = 1 })
  add("{[true]=1}", { [true] = 1 })
  add("{[{}]=1}", { [{}] = 1 })
  add("{[maxinteger]=1}", { [math.maxinteger] = 1 })
  add("{nan list}", { 0 / 0, 1 / 0, -1 / 0 })
  add("{}", {})
  add("{1,2,3}", { 1, 2, 3 })
  local wide = {}
  for i = 1, 5000 do wide[i] = i end
  add("list(5000 ints)", wide)
  local wideS = {}
  for i = 1, 500 do wideS[i] = "fz" .. i .. "@example.com" end
  add("list(500 emails)", wideS)

  local function boom(what) return function() error("fuzz: " .. what .. " raised", 2) end end
  for _, mm in ipairs({ "__index", "__newindex", "__len", "__pairs", "__tostring", "__eq", "__lt", "__le", "__concat",
    "__call", "__close", "__unm" }) do
    add("raising " .. mm, setmetatable({}, { [mm] = boom(mm) }))
  end
  local all = {}
  for _, mm in ipairs({ "__index", "__newindex", "__len", "__pairs", "__tostring", "__eq", "__lt", "__le", "__concat",
    "__call" }) do all[mm] = boom(mm) end
  add("raising all", setmetatable({}, all))
  add("raising all {emailAddress=}", setmetatable({ emailAddress = "bob@example.com" }, all))
  add("raising all {recordName=,zoneID=}", setmetatable({ recordName = "r", zoneID = setmetatable({}, all) }, all))
  add("raising __index {allow=false}", setmetatable({ allow = false }, all))
  add("raising error object", setmetatable({}, { __index = function()
    error(setmetatable({}, { __tostring = function() error("fuzz: nested tostring raised") end }))
  end, __tostring = function() error({}) end }))
  add("__tostring→number", setmetatable({}, { __tostring = function() return 42 end }))
  add("__tostring→nil", setmetatable({}, { __tostring = function() return nil end }))
  add("__tostring→1MiB", setmetatable({}, { __tostring = function() return bigString() end }))
  add("__name=42", setmetatable({}, { __name = 42 }))
  add("__name='Account'", setmetatable({}, { __name = "Account" }))
  add("__metatable='locked'", setmetatable({}, { __metatable = "locked", __index = boom("__index") }))
  add("__len→nan", setmetatable({ 1, 2 }, { __len = function() return 0 / 0 end }))
  add("__len→2^62", setmetatable({ 1, 2 }, { __len = function() return 1 << 62 end }))
  add("__len→-1", setmetatable({ 1, 2 }, { __len = function() return -1 end }))
  add("__index→nan", setmetatable({}, { __index = function() return 0 / 0 end }))
  add("__pairs→junk", setmetatable({}, { __pairs = function() return 42 end }))
  local loopy = {}
  setmetatable(loopy, loopy)
  loopy.__index = loopy
  add("__index=self (chain loop)", loopy)
  if plugin then
    -- the sandbox refuses finalizers (Lua runs them with no hook): setmetatable raises
    if pcall(setmetatable, {}, { __gc = boom("__gc") }) then error("a plugin could set a __gc finalizer") end
  else
    add("__gc raising", setmetatable({}, { __gc = boom("__gc") }))
  end
  if plugin then
    -- loops forever: the plugin's CPU budget must stop them
    local spin = spinForever
    for _, mm in ipairs({ "__index", "__newindex", "__len", "__pairs", "__tostring", "__eq", "__concat", "__call" }) do
      add("looping " .. mm, setmetatable({}, { [mm] = spin }))
    end
    if pcall(setmetatable, {}, { __gc = spin }) then error("a plugin could set a looping __gc finalizer") end
  end

  -- functions (callbacks)
  local function fn(name, f) FNS[#FNS + 1] = named(name, f) end
  fn("fn:noop", function() end)
  fn("fn:raise", function() error("fuzz: callback raised") end)
  fn("fn:raise(table)", function() error(setmetatable({}, { __tostring = boom("__tostring") })) end)
  fn("fn:raise(nil)", function() error(nil) end)
  -- (a policy's return value is read by the host: a table with raising or looping metamethods
  -- there is the policy-verdict class)
  local function junk()
    local v = WEIRD[rand(#WEIRD)]
    if skipping("policy-verdict") and getmetatable(v) ~= nil then return nil end
    return v
  end
  fn("fn:returns junk", function() return junk(), NUMS[rand(#NUMS)] end)
  fn("fn:returns false,junk", function() return false, WEIRD[rand(#WEIRD)] end)
  fn("fn:returns 5000 values", function() return table.unpack(wide) end)
  fn("fn:yield", function(...) return coroutine.yield(...) end)
  fn("fn:re-enter", function(...)
    for i = 1, math.min(select("#", ...), 4) do harvest((select(i, ...))) end
    if doCalls then doCalls(rand(3)) end
    return junk()
  end)
  fn("fn:collect", function() collectgarbage() end)
  fn("fn:error", error)
  fn("fn:select", select)
  fn("fn:coroutine.yield", coroutine.yield)
  fn("fn:setmetatable", setmetatable)
  if plugin then
    fn("fn:loop forever", spinForever)
  end

  local function th(name, t) THREADS[#THREADS + 1] = named(name, t) end
  th("thread:fresh", coroutine.create(function() end))
  local dead = coroutine.create(function() end)
  coroutine.resume(dead)
  th("thread:dead", dead)
  local suspended = coroutine.create(function() coroutine.yield() end)
  coroutine.resume(suspended)
  th("thread:suspended", suspended)
  th("thread:running", (coroutine.running()))
end

-- Built on first use, not in M.new: a plugin's setup must leave nothing behind that its
-- unloading would run (a looping __gc), since the driver reloads the plugin before fuzzing.
local function ensureWeird()
  if #WEIRD == 0 then buildWeird() end
end

--- A harvested value, and the pool (class) it came from.
local function pickObject()
  for _ = 1, 4 do
    local key = pick(OBJECT_CLASSES)
    local p = pools[key]
    if p and #p > 0 then return p[rand(#p)], key end
  end
  local key = pick(poolKeys)
  local p = pools[key]
  if p and #p > 0 then return p[rand(#p)], key end
  return nil
end

-- ============================================================================== generators

local GOOD, any = {}, nil
local HINTS -- names of GOOD generators

local function uniq(prefix)
  world.n = world.n + 1
  return ("%s%d-%d"):format(prefix, world.n, rand(1000000))
end

local function copyTable(t)
  local c = {}
  for k, v in next, t do c[k] = v end
  return c
end

local function tbl(name, t)
  ours[t] = true
  shapeName[t] = name
  return t
end

--- A value for a parameter of kind `hint`: mostly plausible, sometimes corrupted, sometimes anything.
local function gen(hint)
  local g = hint and GOOD[hint]
  local r = rand(100)
  if not g or r <= 22 then return any(1) end
  local v = g()
  if r <= 40 and type(v) == "table" and ours[v] ~= nil then
    -- corrupt one field of a plausible table
    local keys = sortedKeys(v, 16)
    local copy = copyTable(v)
    if #keys > 0 and chance(0.7) then copy[pick(keys)] = any(1) else copy[pickString()] = any(1) end
    local mt = chance(0.1) and getmetatable(pick(WEIRD))
    if type(mt) == "table" then setmetatable(copy, mt) end
    return tbl("corrupted " .. (shapeName[v] or "table"), copy)
  end
  return v
end


local function genList(hint, max)
  local t = {}
  local r = rand(100)
  if r <= 3 then
    -- past the limits (400 items per modify call, …): the same few items over and over
    local few = { gen(hint), gen(hint) }
    for i = 1, 400 + rand(600) do t[i] = few[i % 2 + 1] end
    return tbl("list<" .. hint .. "> x" .. #t, t)
  end
  for i = 1, rand((max or 4) + 1) - 1 do t[i] = gen(hint) end
  if r <= 25 and #t > 0 then
    -- the same item twice
    table.insert(t, rand(#t + 1), t[rand(#t)])
    return tbl("list<" .. hint .. "> with a duplicate", t)
  end
  return tbl("list<" .. hint .. ">", t)
end

GOOD.any = function() return any(1) end
GOOD.string = function() return pickString() end
GOOD.boolean = function() return chance(0.5) end
GOOD.number = function() return pick(NUMS) end
GOOD.email = function()
  if #world.emails > 0 and chance(0.7) then return pick(world.emails) end
  return chance(0.5) and uniq("fz") .. "@example.com" or pickString()
end
GOOD.phone = function() return ("+1415555%04d"):format(rand(9999)) end
GOOD.userRecordID = function() return peek(some("Account"), "userRecordID") or "_" .. ("0"):rep(32) end
GOOD.who = function()
  local r = rand(4)
  if r == 1 then return GOOD.email() elseif r == 2 then return GOOD.phone()
  elseif r == 3 then return GOOD.userRecordID() end
  return some("Account") or GOOD.email()
end
GOOD.lookup = function()
  local r = rand(6)
  if r == 1 then return some("LookupInfo") or tbl("lookup", { emailAddress = GOOD.email() }) end
  if r == 2 then return tbl("lookup", { phoneNumber = GOOD.phone() }) end
  if r == 3 then return tbl("lookup", { userRecordID = GOOD.userRecordID() }) end
  if r == 4 then return GOOD.email() end
  if r == 5 then return tbl("lookup", { email = GOOD.email() }) end
  return tbl("lookup", { emailAddress = GOOD.email() })
end
GOOD.lookupList = function() return genList("lookup", 5) end
GOOD.containerId = function() return chance(0.85) and CID or pickString() end
GOOD.event = function() return pick(EVENTS) end
GOOD.point = function() return pick(POINTS) end
GOOD.fn = function() return pick(FNS) end
GOOD.hookOpts = function()
  return tbl("hookOpts", { priority = chance(0.5) and rand(21) - 11 or pick(NUMS), name = pickString() })
end
GOOD.decisionsOpts = function() return tbl("decisionsOpts", { limit = chance(0.5) and rand(50) or pick(NUMS) }) end
GOOD.invitationsOpts = function() return tbl("invitationsOpts", { olderThan = chance(0.5) and 0 or pick(NUMS) }) end
GOOD.participantID = function()
  return peek(some("Participant"), "participantID") or pickString()
end
GOOD.reason = function()
  return pick({ "removedByOwner", "left", "publicPermissionChanged", "shareDeleted", "expired", "bogus" })
end
GOOD.pluginName = function() return pick({ "audit-log", "domain-allowlist", "expiring-invitations", "fuzz", "nope" }) end
GOOD.pluginConfig = function()
  local keys = { "domains", "checkInvitations", "path", "events", "maxAgeSeconds", "enabled", "bogus" }
  local t = {}
  for _ = 1, rand(3) do t[pick(keys)] = any(1) end
  return tbl("pluginConfig", t)
end
GOOD.path = function() return pick({ "fuzz-out.txt", "sub/dir/x.txt", "", ".", "..", "../escape.txt", "/tmp/x", "a\0b" }) end
GOOD.accountCtor = function()
  local t = { email = uniq("fz") .. "@example.com" }
  if chance(0.3) then t.phone = GOOD.phone() end
  if chance(0.3) then t.name = GOOD.name() end
  if chance(0.3) then t.discoverable = chance(0.5) end
  if chance(0.2) then t.emails = genList("email", 3) end
  if chance(0.2) then t.phones = genList("phone", 3) end
  return tbl("accountCtor", t)
end
GOOD.name = function() return tbl("name", { given = "Fuzz", family = pickString() }) end
GOOD.zone = function() return some("RecordZone") or tbl("zone", { zoneName = "FuzzZone" }) end
GOOD.zoneName = function() return chance(0.6) and ("FuzzZone" .. rand(4)) or pickString() end
GOOD.zoneID = function()
  return some("RecordZoneID") or tbl("zoneID", { zoneName = GOOD.zoneName(), ownerName = GOOD.userRecordID() })
end
GOOD.recordID = function()
  return some("RecordID") or tbl("recordID", { recordName = pickString(), zoneID = GOOD.zoneID() })
end
GOOD.record = function() return some("Record") or some("Share") end
GOOD.recordRef = function()
  local r = rand(3)
  if r == 1 then return GOOD.record() elseif r == 2 then return some("Share") end
  return GOOD.recordID()
end
GOOD.recordRefList = function() return genList("recordRef", 4) end
GOOD.recordList = function() return genList("record", 4) end
GOOD.fieldKey = function() return pick({ "title", "n", "ref", "tags", "when", pickString() }) end
GOOD.fieldValue = function()
  local r = rand(9)
  if r == 1 then return pickString() elseif r == 2 then return rand(1000) elseif r == 3 then return pick(NUMS)
  elseif r == 4 then return chance(0.5) elseif r == 5 then return GOOD.recordRef()
  elseif r == 6 then return tbl("list<str>", { "a", "b" })
  elseif r == 7 then return pick(WEIRD) end
  return genList("fieldValue", 3)
end
GOOD.fields = function()
  local t = {}
  for _ = 1, rand(4) do t[GOOD.fieldKey()] = GOOD.fieldValue() end
  return tbl("fields", t)
end
GOOD.recordCtor = function()
  local t = { recordType = chance(0.8) and "Doc" or pickString() }
  if chance(0.5) then t.recordName = uniq("r") end
  if chance(0.5) then t.zone = GOOD.zone() else t.zoneID = GOOD.zoneID() end
  if chance(0.6) then t.fields = GOOD.fields() end
  if chance(0.3) then t.parent = GOOD.recordRef() end
  return tbl("recordCtor", t)
end
GOOD.shareCtor = function()
  local t = {}
  if chance(0.6) then t.rootRecord = GOOD.record() else t.zone = GOOD.zone() end
  if chance(0.4) then t.title = pickString() end
  if chance(0.3) then t.publicPermission = GOOD.permission() end
  if chance(0.2) then t.recordName = pickString() end
  return tbl("shareCtor", t)
end
GOOD.permission = function() return pick({ "none", "readOnly", "readWrite", "unknown", "bogus" }) end
GOOD.qos = function() return pick({ "userInteractive", "userInitiated", "default", "utility", "background", "x" }) end
GOOD.participant = function() return some("Participant") end
GOOD.metadata = function() return some("ShareMetadata") end
GOOD.metadataList = function() return genList("metadata", 3) end
GOOD.url = function() return #world.urls > 0 and pick(world.urls) or pickString() end
GOOD.urlList = function() return genList("url", 4) end
GOOD.metadataOpts = function()
  return tbl("metadataOpts", { shouldFetchRootRecord = chance(0.5), rootRecordDesiredKeys = genList("fieldKey", 3) })
end
GOOD.discoverOpts = function() return tbl("discoverOpts", { progress = pick(FNS) }) end
GOOD.modify = function()
  local t = {}
  if chance(0.7) then t.save = GOOD.recordList() end
  if chance(0.4) then t.delete = GOOD.recordRefList() end
  return tbl("modify", t)
end
GOOD.contacts = function()
  local t = {}
  for i = 1, rand(4) do
    t[i] = chance(0.5) and GOOD.email() or tbl("contact", { email = GOOD.email(), contactIdentifier = pickString() })
  end
  return tbl("contacts", t)
end
GOOD.database = function() return some("Database") end
GOOD.operation = function() return some(pick(OPS)) end
GOOD.stringList = function() return genList("string", 3) end
GOOD.zoneNameList = function() return genList("zoneName", 3) end
GOOD.zoneIDList = function() return genList("zoneID", 3) end
GOOD.text = function() return chance(0.9) and "fuzz line\n" or pickString() end
GOOD.opFields = function()
  local t = {}
  local members = classes[pick(OPS)]
  if members then
    for _ = 1, rand(4) do
      local f = pick(members.fields)
      t[f] = GOOD.forField and GOOD.forField(f) or any(1)
    end
  end
  return tbl("opFields", t)
end

-- setter values by field name
local FIELD_HINT = { title = "string", publicPermission = "permission", permission = "permission",
  fields = "fields", parent = "recordRef", qualityOfService = "qos", database = "database",
  userIdentityLookupInfos = "lookupList", shareURLs = "urlList", shouldFetchRootRecord = "boolean",
  rootRecordDesiredKeys = "stringList", shareMetadatas = "metadataList", recordsToSave = "recordList",
  recordIDsToDelete = "recordRefList", recordZonesToSave = "zoneNameList", recordZoneIDsToDelete = "zoneIDList",
  recordIDs = "recordRefList", desiredKeys = "stringList" }
GOOD.forField = function(f)
  if f:match("Block$") then return pick(FNS) end
  return gen(FIELD_HINT[f])
end

-- argument hints by function name (the last component of a module path or a method name)
local ARG_HINTS = {
  create = { "accountCtor" }, find = { "lookup" }, get = { "fieldKey" }, as = { "who" }, container = { "containerId" },
  LookupInfo = { "lookup" }, Record = { "recordCtor" }, Share = { "shareCtor" }, RecordID = { "recordID" },
  on = { "event", "fn", "hookOpts" }, policy = { "point", "fn", "hookOpts" }, deny = { "string" },
  decisions = { "decisionsOpts" }, encode = { "any" }, pendingInvitations = { "invitationsOpts" },
  removeParticipant = { "participant" }, load = { "pluginName", "pluginConfig" }, unload = { "pluginName" },
  reload = { "pluginName" }, dataFolder = { "pluginName" }, appendFile = { "path", "text" },
  addEmail = { "email" }, addPhone = { "phone" }, setDiscoverable = { "boolean" }, setName = { "name" },
  addContacts = { "contacts" }, add = { "operation" }, fetchShareParticipants = { "lookupList" },
  fetchShareMetadata = { "urlList", "metadataOpts" }, acceptShares = { "metadataList" },
  discoverAllUserIdentities = { "discoverOpts" }, discoverUserIdentities = { "lookupList" }, saveZone = { "zoneName" },
  fetchRecord = { "recordRef" }, fetchRecords = { "recordRefList" }, modifyRecords = { "modify" },
  set = { "fieldKey", "fieldValue" }, addParticipant = { "participant" },
}
for _, op in ipairs(OPS) do ARG_HINTS[op] = { "opFields" } end
local MODULE_HINTS = { ["admin.removeParticipant"] = { "participantID", "reason" }, ["accounts.get"] = { "userRecordID" },
  ["accounts.find"] = { "lookup" } }

local function genArgs(hints)
  local n = pick({ 0, 1, 1, 1, 2, 2, 2, 3, 3, 4 })
  if hints and chance(0.7) and n < #hints then n = #hints end
  local args = { n = n }
  for i = 1, n do
    local h = hints and hints[i]
    args[i] = h and gen(h) or any(1)
  end
  return args
end

any = function(d)
  d = d or 0
  local r = rand(100)
  if r <= 16 then return pick(NUMS)
  elseif r <= 30 then return pickString()
  elseif r <= 34 then local c = rand(3); if c == 1 then return nil end; return c == 2
  elseif r <= 48 then return pick(WEIRD)
  elseif r <= 72 then return pickObject()
  elseif r <= 78 then return pick(FNS)
  elseif r <= 80 then return pick(THREADS)
  elseif r <= 88 and d < 2 then
    local t = {}
    for i = 1, rand(5) - 1 do t[i] = any(d + 1) end
    return tbl("", t)
  end
  return gen(pick(HINTS))
end

-- ================================================================================= targets

local function walk(t, prefix, out, seen, d)
  seen[t] = true
  for _, k in ipairs(sortedKeys(t, 200)) do
    local v = rawget(t, k)
    if type(k) == "string" then
      if type(v) == "function" then
        out[#out + 1] = { name = prefix .. k, short = k, fn = v }
        moduleName[v] = prefix .. k
      elseif type(v) == "table" and d < 2 and not seen[v] then
        walk(v, prefix .. k .. ".", out, seen, d + 1)
      end
    end
  end
end

local function loadMembers(list)
  classes = {}
  for _, item in ipairs(list) do
    local c, sep, m = item:match("^([%w_]+)([.:])([%w_]+)$")
    if c then
      local entry = classes[c]
      if not entry then
        entry = { fields = {}, methods = {}, has = {} }
        classes[c] = entry
      end
      if not entry.has[sep .. m] then
        entry.has[sep .. m] = true
        if sep == "." then entry.fields[#entry.fields + 1] = m else entry.methods[#entry.methods + 1] = m end
      end
    end
  end
end

-- ================================================================================== actions

local function classOfPick()
  local o, key = pickObject()
  return o, className(o) or (reqMeta and type(o) == "table" and getmetatable(o) == reqMeta and "PolicyRequest")
    or (key ~= "table" and key) or (type(o) == "table" and (names[o] or "table")) or type(o)
end

local function withRetries(f)
  for _ = 1, 4 do
    local o, c = classOfPick()
    if o ~= nil and classes[c] then return f(o, c, classes[c]) end
  end
end

local function callMethod()
  return withRetries(function(o, c, members)
    if #members.methods == 0 then return end
    local m = pick(members.methods)
    local ok, fn = pcall(index, o, m)
    if not ok or type(fn) ~= "function" then
      crumb("get " .. c .. ":" .. m .. " (method lookup failed)")
      return
    end
    methodInfo[fn] = methodInfo[fn] or { class = c, name = m }
    local args = genArgs(ARG_HINTS[m])
    local self = o
    if chance(0.15) then self = any(1) end
    prepend(args, self)
    statKey = c .. ":" .. m
    attempt(("%s:%s(%s)"):format(c, m, describeArgs(args)), fn, args)
  end)
end

local function readField()
  return withRetries(function(o, c, members)
    local k
    if #members.fields == 0 or chance(0.05) then k = any(1) else k = pick(members.fields) end
    statKey = "get " .. c .. "." .. (type(k) == "string" and k or "[" .. type(k) .. "]")
    attempt(("get %s(%s).%s"):format(c, describe(o), type(k) == "string" and k or "[" .. describe(k) .. "]"), index,
      pack(o, k))
  end)
end

local function writeField()
  return withRetries(function(o, c, members)
    if c == "table" then return end
    local k
    if #members.fields == 0 or chance(0.05) then k = any(1) else k = pick(members.fields) end
    local v = type(k) == "string" and GOOD.forField(k) or any(1)
    statKey = "set " .. c .. "." .. (type(k) == "string" and k or "[" .. type(k) .. "]")
    attempt(("set %s.%s = %s"):format(describe(o), type(k) == "string" and k or "[" .. describe(k) .. "]",
      describe(v)), assign, pack(o, k, v))
  end)
end

local function callModule()
  local t = pick(targets)
  if not t then return end
  local args = genArgs(MODULE_HINTS[t.name] or ARG_HINTS[t.short])
  statKey = t.name
  local res = attempt(("%s(%s)"):format(t.name, describeArgs(args)), t.fn, args)
  -- the plain tables some functions return, by the class types/shareflow.lua gives them
  local tag = ({ ["shareflow.decisions"] = "Decision", ["shareflow.admin.pendingInvitations"] = "Invitation",
    ["shareflow.plugins.list"] = "PluginInfo" })[t.name]
  if tag and res[1] and type(res[2]) == "table" then
    for _, item in ipairs(res[2]) do if type(item) == "table" then addTo(tag, item) end end
  end
end

local OPERATORS = {
  { "tostring", function(o) return tostring(o) end },
  { "==", function(o, x) return o == x end },
  { "#", function(o) return #o end },
  { "pairs", function(o)
    local n = 0
    for k, v in pairs(o) do
      harvest(k); harvest(v)
      n = n + 1
      if n > 50 then break end
    end
    return n
  end },
  { "..", function(o) return o .. "x" end },
  { "<", function(o, x) return o < x end },
  { "call", function(o, x) return o(x) end },
  { "unary -", function(o) return -o end },
}

local function metaOp()
  local o, c = classOfPick()
  if o == nil then return end
  local mt = getmetatable(o)
  if type(mt) == "table" and chance(0.6) then
    local fnKeys = {}
    for _, k in ipairs(sortedKeys(mt, 64)) do
      if type(rawget(mt, k)) == "function" then fnKeys[#fnKeys + 1] = k end
    end
    if #fnKeys == 0 then return end
    local k = pick(fnKeys)
    local fn = rawget(mt, k)
    if not names[fn] then names[fn] = ("metatable(%s).%s"):format(c, k) end
    fnInfo[fn] = fnInfo[fn] or { class = c, key = k }
    harvest(fn)
    if k == "__gc" and not chance(0.2) then return end -- rarely: it ends the object
    local args = genArgs()
    if chance(0.6) then prepend(args, o) end
    if (k == "__index" or k == "__newindex") and args.n < 2 then
      args[2] = chance(0.7) and pickString() or any(1)
      args.n = math.max(args.n, 2)
    end
    statKey = ("metatable(%s).%s"):format(c, k)
    attempt(("metatable(%s).%s(%s)"):format(c, k, describeArgs(args)), fn, args)
  else
    local op = pick(OPERATORS)
    local x = chance(0.5) and o or any(1)
    if op[1] == "call" then
      attempt(("call %s(%s)"):format(describe(o), describe(x)), o, pack(x))
    else
      attempt(("%s %s %s"):format(op[1], describe(o), describe(x)), op[2], pack(o, x))
    end
  end
end

local function callHarvested()
  local f = some("function")
  if not f then return end
  local args = genArgs()
  attempt(("harvested %s(%s)"):format(describe(f), describeArgs(args)), f, args)
end

--- A copy of a host table with its metatable, one field changed: forged IDs, errors,
--- lookup infos and policy requests.
local function forge()
  local candidates = { "LookupInfo", "RecordZoneID", "RecordID", "RecordZone", "NameComponents", "UserIdentity",
    "Error", "PolicyRequest" }
  local c = pick(candidates)
  local o = some(c)
  if type(o) ~= "table" then return end
  local copy = copyTable(o)
  local keys = sortedKeys(o, 16)
  if #keys > 0 then
    local k = pick(keys)
    if type(k) == "userdata" then
      copy[k] = pick({ -1, 0, -64, 63, 64, math.mininteger, math.maxinteger, 1 << 40, 0.5, 0 / 0, "x" })
    else
      copy[k] = any(1)
    end
  end
  local mt = getmetatable(o)
  if type(mt) == "table" then setmetatable(copy, mt) end
  harvest(copy, c)
  local k = pick({ "share", "participant", "metadata", "zoneID", "recordName", "code" })
  if chance(0.5) then
    attempt(("tostring(forged %s %s)"):format(c, describe(copy)), tostring, pack(copy))
  else
    attempt(("get forged %s %s.%s"):format(c, describe(copy), k), index, pack(copy, k))
  end
end

--- Tampers with the metatable of a class of objects (plugins may read and write it), makes a
--- few calls, then puts it back.
local function tamper()
  local candidates = {}
  for _, c in ipairs(OBJECT_CLASSES) do
    if pools[c] and #pools[c] > 0 and type(pools[c][1]) == "userdata" then candidates[#candidates + 1] = c end
  end
  if #candidates == 0 then return end
  local c = pick(candidates)
  local o = some(c)
  local mt = getmetatable(o)
  if type(mt) ~= "table" then return end
  local saved = {}
  for _, k in ipairs(sortedKeys(mt, 64)) do saved[k] = rawget(mt, k) end
  local savedMeta = getmetatable(mt)
  local boom = function() error("fuzz: tampered metamethod raised") end
  local r = rand(6)
  local what
  if r == 1 then
    rawset(mt, "__shareflow_object", nil)
    what = "no __shareflow_object"
  elseif r == 2 then
    rawset(mt, "__shareflow_object", nil)
    setmetatable(mt, { __index = boom })
    what = "no __shareflow_object, metatable with raising __index"
  elseif r == 3 then
    rawset(mt, "__index", boom)
    what = "__index raising"
  elseif r == 4 then
    rawset(mt, "__name", pick({ 42, "Share", "" }))
    what = "__name changed"
  elseif r == 5 then
    rawset(mt, "__gc", boom)
    what = "__gc raising"
  else
    rawset(mt, "__tostring", nil)
    rawset(mt, "__eq", boom)
    what = "__tostring removed, __eq raising"
  end
  crumb(("tamper metatable(%s): %s"):format(c, what))
  for _ = 1, rand(3) do
    local r2 = rand(3)
    if r2 == 1 then callMethod() elseif r2 == 2 then readField() else
      attempt("tostring(tampered " .. c .. ")", tostring, pack(o))
    end
  end
  for k in next, mt do if saved[k] == nil then rawset(mt, k, nil) end end
  for k, v in pairs(saved) do rawset(mt, k, v) end
  setmetatable(mt, savedMeta)
  crumb(("tamper metatable(%s): restored"):format(c))
end

local function hookStep()
  if #hooks > 12 or (#hooks > 0 and chance(0.25)) then
    local h = table.remove(hooks, rand(#hooks))
    attempt("HookHandle:remove() " .. describe(h), function() return h:remove() end)
    return
  end
  local isPolicy = chance(0.4)
  local where = isPolicy and pick(POINTS) or pick(EVENTS)
  local cb = named("fn:fuzz " .. (isPolicy and "policy" or "observer"), function(v)
    harvest(v, isPolicy and "PolicyRequest" or "Event")
    if isPolicy and type(v) == "table" and not reqMeta then reqMeta = getmetatable(v) end
    if doCalls and chance(0.5) then doCalls(rand(3)) end
    if isPolicy then
      local r = rand(100)
      if r <= 60 then return nil elseif r <= 70 then return true elseif r <= 75 then return api.deny("fuzz says no") end
      if r <= 80 then return false, any(1) end
      local verdict = any(1)
      if skipping("policy-verdict") and type(verdict) == "table" and getmetatable(verdict) ~= nil then return nil end
      return verdict
    end
  end)
  local opts = gen("hookOpts")
  local fnName = isPolicy and "policy" or "on"
  local res = attempt(("shareflow.%s(%s, fuzz callback, %s)"):format(fnName, describe(where), describe(opts)),
    api[fnName], pack(where, cb, opts))
  if res[1] and className(res[2]) == "HookHandle" then hooks[#hooks + 1] = res[2] end
end

-- =========================================================================== world, activity

local function container(email)
  local s = attempt("shareflow.as(" .. describe(email) .. ")", api.as, pack(email))
  if not s[1] or className(s[2]) ~= "Session" then return nil end
  local sess = s[2]
  local c = attempt(("%s:container(%q)"):format(describe(sess), CID), function() return sess:container(CID) end)
  if c[1] and className(c[2]) == "Container" then return c[2] end
  return nil
end

local function account(email)
  local found = attempt("shareflow.accounts.find(" .. describe(email) .. ")", api.accounts.find, pack(email))
  if found[1] and found[2] then return found[2] end
  local res = attempt("shareflow.accounts.create{email=" .. describe(email) .. "}", api.accounts.create,
    pack({ email = email, discoverable = chance(0.7), name = { given = "F", family = email:sub(1, 3) } }))
  if res[1] then return res[2] end
  return nil
end

local ACTIVITY = {}

ACTIVITY.newAccount = function()
  local email = uniq("user") .. "@example.com"
  local t = { email = email, discoverable = chance(0.7) }
  if chance(0.3) then t.phone = ("+1650555%04d"):format(rand(9999)) end
  local res = attempt("shareflow.accounts.create{" .. email .. "}", api.accounts.create, pack(t))
  if res[1] then world.emails[#world.emails + 1] = email end
end

ACTIVITY.newShare = function()
  if #world.emails < 2 then return ACTIVITY.newAccount() end
  local owner = pick(world.emails)
  local c = container(owner)
  if not c then return end
  local db = peek(c, "privateCloudDatabase")
  if not db then return end
  local zr = attempt("Database:saveZone", function() return db:saveZone("FuzzZone" .. rand(4)) end)
  local zone = zr[1] and zr[2]
  if not zone then return end
  local root = attempt("shareflow.Record{...}", api.Record,
    pack({ recordType = "Doc", recordName = uniq("doc"), zone = zone, fields = { title = "t", n = rand(100) } }))
  if not root[1] then return end
  root = root[2]
  local child = attempt("shareflow.Record{parent=...}", api.Record,
    pack({ recordType = "Doc", zone = zone, parent = root, fields = { title = "child" } }))
  child = child[1] and child[2]
  local share
  if chance(0.8) then
    share = attempt("shareflow.Share{rootRecord=...}", api.Share, pack({ rootRecord = root, title = uniq("share") }))
  else
    share = attempt("shareflow.Share{zone=...}", api.Share, pack({ zone = zone, title = uniq("zoneshare") }))
  end
  if not share[1] then return end
  share = share[2]
  local infos = {}
  for i = 1, rand(4) do
    infos[i] = chance(0.85) and { emailAddress = pick(world.emails) } or { emailAddress = uniq("ghost") .. "@example.com" }
  end
  local fetched = attempt("Container:fetchShareParticipants", function() return c:fetchShareParticipants(infos) end)
  if fetched[1] and type(fetched[2]) == "table" then
    for _, p in ipairs(fetched[2]) do
      if chance(0.5) then attempt("set Participant.permission", assign, pack(p, "permission", "readWrite")) end
      attempt("Share:addParticipant", function() return share:addParticipant(p) end)
    end
  end
  if chance(0.2) then attempt("set Share.publicPermission", assign, pack(share, "publicPermission", "readOnly")) end
  local save = { root, share }
  if child then table.insert(save, 2, child) end
  local res = attempt("Database:modifyRecords{save=...}", function() return db:modifyRecords({ save = save }) end)
  if res[1] and type(res[2]) == "table" then
    for _, saved in ipairs(res[2]) do
      if className(saved) == "Share" then share = saved end
    end
    local url = peek(share, "url")
    if type(url) == "string" then
      world.shares[#world.shares + 1] = { url = url, owner = owner, share = share, root = root, db = db }
      if #world.shares > 40 then table.remove(world.shares, 1) end
    end
  end
end

ACTIVITY.accept = function()
  if #world.shares == 0 then return ACTIVITY.newShare() end
  local s = pick(world.shares)
  local who = pick(world.emails)
  local c = container(who)
  if not c then return end
  local res = attempt("Container:fetchShareMetadata", function()
    return c:fetchShareMetadata({ s.url }, { shouldFetchRootRecord = chance(0.5) })
  end)
  if res[1] and type(res[2]) == "table" then
    local m = res[2][s.url]
    if m then attempt("Container:acceptShares", function() return c:acceptShares({ m }) end) end
  end
end

ACTIVITY.changeShare = function()
  if #world.shares == 0 then return ACTIVITY.newShare() end
  local s = pick(world.shares)
  local fetched = attempt("Database:fetchRecord(share)", function() return s.db:fetchRecord(s.share) end)
  local share = fetched[1] and fetched[2]
  if className(share) ~= "Share" then return end
  local r = rand(5)
  if r == 1 then
    attempt("set Share.publicPermission", assign, pack(share, "publicPermission", pick({ "none", "readOnly", "readWrite" })))
  elseif r == 2 then
    local ps = peek(share, "participants")
    if type(ps) == "table" and #ps > 1 then
      attempt("Share:removeParticipant", function() return share:removeParticipant(ps[rand(#ps)]) end)
    end
  elseif r == 3 then
    local ps = peek(share, "participants")
    if type(ps) == "table" and #ps > 0 then
      attempt("set Participant.permission", assign, pack(ps[rand(#ps)], "permission", pick({ "readOnly", "readWrite" })))
    end
  else
    attempt("set Share.title", assign, pack(share, "title", uniq("title")))
  end
  attempt("Database:modifyRecords{save={share}}", function() return s.db:modifyRecords({ save = { share } }) end)
end

ACTIVITY.deleteShare = function()
  if #world.shares == 0 then return end
  local i = rand(#world.shares)
  local s = world.shares[i]
  local target = chance(0.5) and s.share or s.root
  attempt("Database:modifyRecords{delete=...}", function() return s.db:modifyRecords({ delete = { target } }) end)
  table.remove(world.shares, i)
end

ACTIVITY.discover = function()
  if #world.emails == 0 then return ACTIVITY.newAccount() end
  local who = pick(world.emails)
  local a = account(who)
  if a then
    attempt("Account:addContacts", function() return a:addContacts({ pick(world.emails), pick(world.emails) }) end)
  end
  local c = container(who)
  if not c then return end
  attempt("Container:discoverAllUserIdentities", function() return c:discoverAllUserIdentities() end)
  attempt("Container:discoverUserIdentities", function()
    return c:discoverUserIdentities({ pick(world.emails), { emailAddress = pick(world.emails) } })
  end)
end

ACTIVITY.admin = function()
  local res = attempt("shareflow.admin.pendingInvitations{olderThan=0}", api.admin.pendingInvitations,
    pack({ olderThan = 0 }))
  if res[1] and type(res[2]) == "table" and #res[2] > 0 and chance(0.5) then
    local inv = res[2][rand(#res[2])]
    attempt("shareflow.admin.removeParticipant", api.admin.removeParticipant,
      pack(inv.participantID, pick({ "removedByOwner", "expired" })))
  end
end

ACTIVITY.verify = function()
  -- R17: an account gains the address of a pending (ghost) participant
  if #world.emails == 0 then return end
  local a = account(pick(world.emails))
  if a then
    attempt("Account:addEmail", function() return a:addEmail(uniq("ghost") .. "@example.com") end)
  end
end

ACTIVITY.operations = function()
  if #world.emails == 0 then return ACTIVITY.newAccount() end
  local c = container(pick(world.emails))
  if not c then return end
  local name = pick(OPS)
  local fields = {}
  if name == "FetchShareParticipantsOperation" or name == "DiscoverUserIdentitiesOperation" then
    fields.userIdentityLookupInfos = { pick(world.emails), { emailAddress = pick(world.emails) } }
  elseif name == "FetchShareMetadataOperation" then
    fields.shareURLs = { GOOD.url() }
  elseif name == "AcceptSharesOperation" then
    fields.shareMetadatas = { some("ShareMetadata") }
  elseif name == "ModifyRecordZonesOperation" then
    fields.recordZonesToSave = { "FuzzZone" .. rand(4) }
  elseif name == "FetchRecordsOperation" then
    fields.recordIDs = { GOOD.recordID() }
  elseif name == "ModifyRecordsOperation" then
    fields.recordsToSave = { some("Record") }
  end
  local res = attempt("shareflow." .. name .. "{...}", api[name], pack(fields))
  local op = res[1] and res[2]
  if type(op) ~= "userdata" then return end
  local members = classes[name]
  if members then
    for _ = 1, rand(3) do
      local f = pick(members.fields)
      if f:match("Block$") then attempt("set " .. name .. "." .. f, assign, pack(op, f, pick(FNS))) end
    end
  end
  attempt("Container:add(op)", function() return c:add(op) end)
  if chance(0.2) then attempt("op:cancel()", function() return op:cancel() end) end
  if chance(0.5) then
    attempt("op:wait()", function() return op:wait() end)
  else
    attempt("Container:waitUntilAllOperationsAreFinished()", function() return c:waitUntilAllOperationsAreFinished() end)
  end
end

local ACTIVITY_NAMES = {}
for k in pairs(ACTIVITY) do ACTIVITY_NAMES[#ACTIVITY_NAMES + 1] = k end
table.sort(ACTIVITY_NAMES)
local ACTIVITY_WEIGHTS = { newAccount = 2, newShare = 4, accept = 4, changeShare = 3, deleteShare = 1, discover = 1,
  admin = 1, verify = 1, operations = 2 }
local ACTIVITY_BAG = {}
for _, k in ipairs(ACTIVITY_NAMES) do
  for _ = 1, ACTIVITY_WEIGHTS[k] or 1 do ACTIVITY_BAG[#ACTIVITY_BAG + 1] = k end
end

local function activity()
  local name = pick(ACTIVITY_BAG)
  ACTIVITY[name]()
end

--- The objects every class needs: accounts, sessions, containers, databases, zones, records,
--- shares, participants, metadata, operations, a hook handle and an error value.
local worldSteps = {
  function()
    for _, e in ipairs({ "owner@example.com", "bob@example.com", "carol@example.com", "dave@example.com" }) do
      if account(e) then
        local seen = false
        for _, x in ipairs(world.emails) do if x == e then seen = true end end
        if not seen then world.emails[#world.emails + 1] = e end
      end
    end
    attempt("shareflow.accounts.list()", api.accounts.list)
  end,
  function() ACTIVITY.newShare() end,
  function() ACTIVITY.accept() end,
  function()
    local c = container(pick(world.emails) or "owner@example.com")
    if c then
      for _, k in ipairs({ "privateCloudDatabase", "sharedCloudDatabase", "publicCloudDatabase", "session" }) do peek(c, k) end
    end
  end,
  function()
    for _, name in ipairs(OPS) do attempt("shareflow." .. name .. "()", api[name]) end
  end,
  function()
    local res = attempt("shareflow.on(share.saved, noop)", api.on, pack("share.saved", FNS[1]))
    if res[1] then hooks[#hooks + 1] = res[2] end
    attempt("shareflow.LookupInfo", api.LookupInfo, pack({ emailAddress = "bob@example.com" }))
    attempt("shareflow.RecordID", api.RecordID,
      pack({ recordName = "r", zoneID = { zoneName = "FuzzZone1", ownerName = "_x" } }))
    local c = container("owner@example.com")
    if c then
      local db = peek(c, "privateCloudDatabase")
      if db then
        attempt("Database:fetchRecord(missing)", function()
          return db:fetchRecord({ recordName = "missing", zoneID = { zoneName = "FuzzZone1", ownerName = "_nobody" } })
        end)
        attempt("Database:fetchAllRecordZones", function() return db:fetchAllRecordZones() end)
      end
    end
    attempt("shareflow.decisions{limit=5}", api.decisions, pack({ limit = 5 }))
  end,
  function() ACTIVITY.discover() end,
  function() ACTIVITY.operations() end,
}
local worldNext = 1

local function worldStep()
  if worldNext > #worldSteps then worldNext = 1 end
  local f = worldSteps[worldNext]
  worldNext = worldNext + 1
  f()
end

-- ==================================================================================== sandbox

local function sandboxStep()
  local r = rand(7)
  if r == 7 then
    -- garbage with a finalizer, collected whenever the collector gets to it: inside a plugin
    -- call (under its budget) or not (SPEC §8: plugins cannot install __gc finalizers)
    local loops = plugin and not skipping("gc-finalizer")
    crumb("garbage with a " .. (loops and "looping" or "raising") .. " __gc")
    setmetatable({}, { __gc = loops and spinForever or function() error("fuzz: __gc raised") end })
    return
  end
  if r == 1 then
    local s = pickString()
    attempt("load(" .. describe(s) .. ")", load, pack(s))
  elseif r == 2 then
    -- (what require returns is not kept: require("\0") gives back the plugin's own init.lua)
    local s = pick({ "x", "..", "a.b", "/etc/passwd", "fuzz", "\0", "a\0b", "x\0/../../etc/passwd", pickString() })
    local args = pack(s)
    args.noHarvest = true
    attempt("require(" .. describe(s) .. ")", require, args)
  elseif r == 3 then
    local opt = pick(plugin and { "collect", "step", "count", "isrunning", "stop", "restart", "generational", "incremental" }
      or { "collect", "step", "count", "isrunning", "generational", "incremental" })
    attempt("collectgarbage(" .. opt .. ")", collectgarbage, pack(opt))
  elseif r == 4 and plugin then
    local n = pick({ 1 << 20, 1 << 26, 1 << 31, math.maxinteger })
    attempt("string.rep('x', " .. n .. ")", string.rep, pack("x", n))
  elseif r == 5 and plugin then
    -- the budget must bound time inside C functions too (SPEC §8)
    if skipping("pattern-hang") then return end
    local subject = pick({ ("a"):rep(40), bigString() })
    attempt("string.find(" .. describe(subject) .. ", ('a*'):rep(20) .. 'b')", string.find,
      pack(subject, ("a*"):rep(20) .. "b"))
  else
    local co
    co = coroutine.wrap(function(n) if n > 0 then return co(n - 1) end return 0 end)
    attempt("nested coroutine.wrap", function() return co(300) end)
  end
end

-- ===================================================================================== steps

local function step()
  local r = rand(100)
  if r <= 24 then callMethod()
  elseif r <= 38 then callModule()
  elseif r <= 48 then readField()
  elseif r <= 57 then writeField()
  elseif r <= 65 then metaOp()
  elseif r <= 70 then callHarvested()
  elseif r <= 74 then forge()
  elseif r <= 79 then hookStep()
  elseif r <= 86 then activity()
  elseif r <= 89 then ACTIVITY.operations()
  elseif r <= 93 then worldStep()
  elseif r <= 94 and not plugin then
    attempt("collectgarbage()", collectgarbage)
  elseif r <= 95 then
    tamper()
  else
    sandboxStep()
  end
end

-- A Lua error that unwinds through Swift frames (instead of being returned or raised through
-- the trampoline) leaves the engine mid-transaction: it no longer delivers events. The probe
-- checks, now and then, that an event still reaches an observer.
local wedged
local function probe()
  local c = container(world.emails[1] or "owner@example.com")
  if not c or wedged then return end
  local seen = false
  local okOn, handle = pcall(api.on, "participant.fetched", function() seen = true end, { name = "fuzz probe" })
  if not okOn then return end
  crumb("probe: Container:fetchShareParticipants{owner@example.com} reaches an observer")
  local ok, list = pcall(c.fetchShareParticipants, c, { "owner@example.com" })
  pcall(handle.remove, handle)
  if ok and type(list) == "table" and rawlen(list) > 0 and not seen then
    local lines = {}
    for i = calls - RECENT + 1, calls do
      local line = recent[i % RECENT + 1]
      if i > 0 and line then lines[#lines + 1] = "  " .. line end
    end
    wedged = "the engine no longer delivers events (a Lua error unwound through Swift frames and left a"
      .. " transaction open?), after one of these calls:\n" .. table.concat(lines, "\n")
  end
end

local function guarded(f)
  local ok, err = pcall(f)
  if not ok then
    internalErrors = internalErrors + 1
    if log and internalErrors <= 5 then log("fuzz: step error: " .. tostring(err)) end
  end
end

-- Calls made from callbacks (observers, policies, blocks) per top-level step: a step that
-- fires a thousand events must not turn into a thousand more steps.
local nestedLeft = 60

doCalls = function(n)
  if depth >= 2 or nestedLeft <= 0 then return end
  nestedLeft = nestedLeft - n
  depth = depth + 1
  for _ = 1, n do
    heartbeat = clock()
    guarded(step)
  end
  depth = depth - 1
end

-- ========================================================================= known crashes

-- Classes of crashes found against the code of the day, each with a predicate that spots a
-- call of that class, so that SHAREFLOW_FUZZ_SKIP=class can step around it while exploring.
-- (The CI run skips nothing.) Reproducers: Tests/fuzz/README.md. Five classes are stepped
-- around where the values are made instead: coroutine (attempt), policy-verdict (the
-- verdicts of hookStep, M.slice and the junk-returning functions), budget-escape
-- (spinForever), gc-finalizer (looping __gc) and pattern-hang (sandboxStep).
local SF_USERDATA = { Account = true, Session = true, Container = true, Database = true, Record = true, Share = true,
  RecordFields = true, Participant = true, ShareMetadata = true, HookHandle = true }
for _, op in ipairs(OPS) do SF_USERDATA[op] = true end
local VALUE_CLASSES = { LookupInfo = true, RecordZoneID = true, RecordID = true, RecordZone = true,
  NameComponents = true, UserIdentity = true, Error = true }

local function badInt(x)
  if type(x) ~= "number" then return false end
  local d = x + 0.0
  return d ~= d or d >= 2 ^ 63 or d < -2 ^ 63
end

local function optionIn(args, i, key)
  local t = args[i]
  if type(t) ~= "table" then return nil end
  return rawget(t, key)
end

--- True when some table within `args` (4 levels, raw) has a cyclic or very long `zoneID` chain.
local function badZoneChain(args)
  local seen = {}
  local function chainBad(t)
    local visited, n = {}, 0
    while type(t) == "table" do
      if visited[t] then return true end
      visited[t] = true
      n = n + 1
      if n > 150 then return true end
      t = rawget(t, "zoneID")
    end
    return false
  end
  local function scan(v, d)
    if type(v) ~= "table" or seen[v] or d > 4 then return false end
    seen[v] = true
    if chainBad(v) then return true end
    local count = 0
    for _, x in next, v do
      count = count + 1
      if count > 50 then break end
      if scan(x, d + 1) then return true end
    end
    return false
  end
  for i = 1, args.n do if scan(args[i], 0) then return true end end
  return false
end

--- How deep the tables within `args` nest (raw), up to `limit`; a cycle counts as `limit`.
local function nesting(args, limit)
  local best = 0
  local onPath = {}
  local function scan(v, d)
    if type(v) ~= "table" or best >= limit then return end
    if onPath[v] or d >= limit then best = limit; return end
    if d > best then best = d end
    onPath[v] = true
    local count = 0
    for k, x in next, v do
      count = count + 1
      if count > 64 then break end
      scan(k, d + 1)
      scan(x, d + 1)
    end
    onPath[v] = nil
  end
  for i = 1, args.n do scan(args[i], 1) end
  return best
end

KNOWN = {
  -- metatable(sf.LookupInfo{...}).__tostring(false): the value tables' __tostring reads
  -- argument 1 as a table without checking it (lua_rawget on a non-table).
  { "value-tostring", function(f, args)
    local i = fnInfo[f]
    return i ~= nil and i.key == "__tostring" and VALUE_CLASSES[i.class] == true and type(args[1]) ~= "table"
  end },
  -- shareflow.on("share.saved", f, { priority = 0/0 }) (or ±inf, 1e300, math.maxinteger):
  -- Int(Double) traps in Hooks.options.
  { "hook-priority", function(f, args)
    local n = moduleName[f]
    return (n == "shareflow.on" or n == "shareflow.policy") and badInt(optionIn(args, 3, "priority"))
  end },
  -- shareflow.decisions{ limit = -1 } (or NaN, ±inf, 1e300): Int(Double) traps, and a
  -- negative limit traps in Array.suffix.
  { "decisions-limit", function(f, args)
    if moduleName[f] ~= "shareflow.decisions" then return false end
    local l = optionIn(args, 1, "limit")
    return badInt(l) or (type(l) == "number" and l <= -1)
  end },
  -- local z = {}; z.zoneID = z; shareflow.RecordID{ recordName = "r", zoneID = z }: the zone ID
  -- reader follows `zoneID` recursively with no cycle or depth check (stack overflow, SIGSEGV).
  -- Every function that reads a zone, zone ID or record ID is affected.
  { "zoneid-cycle", function(_, args) return badZoneChain(args) end },
  -- getmetatable(req).__pairs(1) / .__index(1, "share") / the `next` __pairs returns, called
  -- with a non-table: lua_rawget / lua_next on a non-table (SIGSEGV).
  { "request-metamethods", function(f, args)
    local i = fnInfo[f]
    return i ~= nil and i.class == "PolicyRequest" and type(args[1]) ~= "table"
  end },
  -- shareflow.plugins.load("audit-log", <table nested 300 deep>): LuaState.value copies up to
  -- 200 levels, pushing without lua_checkstack: the Lua stack overflows into the heap.
  { "plugin-config-deep", function(f, args)
    return moduleName[f] == "shareflow.plugins.load" and nesting(args, 20) >= 20
  end },
  -- shareflow.Record{ ..., fields = { a = <list nested 300 deep> } } (or a cyclic list, via
  -- r.fields = …, r:set(k, …), r.fields.k = …): fieldValue recurses with no depth limit or
  -- cycle check, pushing without lua_checkstack (SIGSEGV, heap corruption).
  { "deep-fields", function(f, args)
    local m = methodInfo[f]
    local i = fnInfo[f]
    local target = moduleName[f] == "shareflow.Record" or (m ~= nil and m.name == "set")
      or (f == assign and (args[2] == "fields" or className(args[1]) == "RecordFields"))
      or (i ~= nil and i.class == "RecordFields" and i.key == "__newindex")
    return target and nesting(args, 20) >= 20
  end },
  -- shareflow.json.encode(t) with t nested 64 deep or cyclic (t.self = t): encodeJSON stops at
  -- depth 64 but pushes two values a level without lua_checkstack: the Lua stack overflows
  -- into the heap (abort "corrupted size vs. prev_size", SIGSEGV, later).
  { "json-deep", function(f, args)
    return moduleName[f] == "shareflow.json.encode" and nesting(args, 20) >= 20
  end },
  -- A copy of a policy request with its hidden serial set to -1 (setmetatable({ [key] = -1 },
  -- getmetatable(req)).share): RequestTable.materialize indexes recent[-1 % 64] (Swift
  -- "Index out of range").
  { "request-serial", function(_, args)
    for a = 1, math.min(args.n, 4) do
      local t = args[a]
      if type(t) == "table" and reqMeta and getmetatable(t) == reqMeta then
        for k, v in next, t do
          if type(k) == "userdata" then
            local n = math.tointeger(v) or (type(v) == "string" and math.tointeger(tonumber(v)))
            if n and n < 0 then return true end
          end
        end
      end
    end
    return false
  end },
  -- getmetatable(record).__gc(x) with x a userdata that is no ShareFlow object (a light
  -- userdata, io.stdout): sf_box_gc releases whatever pointer it finds there.
  -- An observer (or policy, or operation block) of the script that unloads or reloads a plugin
  -- while an event is being delivered: the delivery still calls the old plugin's observers,
  -- on its closed lua_State (SIGSEGV). shareflow.on("participant.fetched", function()
  -- shareflow.plugins.unload("audit-log") end, { priority = 10 }) with audit-log loaded.
  { "plugin-unload-in-callback", function(f)
    local n = moduleName[f]
    return depth > 0 and (n == "shareflow.plugins.load" or n == "shareflow.plugins.unload"
      or n == "shareflow.plugins.reload")
  end },
  { "gc-wrong-self", function(f, args)
    local i = fnInfo[f]
    if not (i and i.key == "__gc") then return false end
    local c = className(args[1])
    return type(args[1]) == "userdata" and not (c and SF_USERDATA[c])
  end },
}

-- ====================================================================================== API

--- opts: api (the shareflow table or a plugin's ctx), mode ("script", "plugin" or "driver"),
--- seed, skip (list of class names), members (list; default: built-in), crumb(n, desc), log(s)
function M.new(opts)
  ours[M] = true
  for _, f in pairs(M) do if type(f) == "function" then ours[f] = true end end
  api = opts.api
  mode = opts.mode or "script"
  plugin = mode == "plugin"
  skip = {}
  for _, s in ipairs(opts.skip or {}) do skip[s] = true end
  crumbFn = opts.crumb
  log = opts.log
  afterCall = opts.afterCall
  rngState = (opts.seed or 12345) ~ 0x5DEECE66D
  if rngState == 0 then rngState = 1 end
  for _ = 1, 10 do rand(2) end
  loadMembers(opts.members and #opts.members > 0 and opts.members or M.builtinMembers)
  EVENTS = {}
  local ok, evs = pcall(index, api, "events")
  if ok and type(evs) == "table" then for i, e in ipairs(evs) do EVENTS[i] = e end end
  if #EVENTS == 0 then EVENTS = { "share.saved" } end
  WEIRD, FNS, THREADS = {}, {}, {}
  HINTS = {}
  for k in pairs(GOOD) do if k ~= "forField" then HINTS[#HINTS + 1] = k end end
  table.sort(HINTS)
  targets = {}
  local mt = getmetatable(api)
  local seen = {}
  walk(api, "shareflow.", targets, seen, 0)
  if type(mt) == "table" and type(rawget(mt, "__index")) == "table" then
    walk(rawget(mt, "__index"), "shareflow.", targets, seen, 0)
  end
  return M
end

M.targets = function() return targets end
M.calls = function() return calls end
M.internalErrors = function() return internalErrors end
M.describe = describe
M.wedged = function() return wedged end
--- "key calls ok" lines, sorted.
M.stats = function()
  local keys = {}
  for k in pairs(stats) do keys[#keys + 1] = k end
  table.sort(keys)
  local lines = {}
  for _, k in ipairs(keys) do lines[#lines + 1] = ("%-70s %7d %7d"):format(k, stats[k][1], stats[k][2]) end
  return lines
end
M.activity = function() ensureWeird(); guarded(activity) end
M.worldStep = function() ensureWeird(); guarded(worldStep) end

--- Builds the world (every class of object) and then fuzzes until `done()` says stop.
function M.run(done, progress)
  ensureWeird()
  for _ = 1, #worldSteps do guarded(worldStep) end
  local last = clock()
  local n = 0
  while not done() and not wedged do
    nestedLeft = 60
    guarded(step)
    n = n + 1
    if n % 100 == 0 then guarded(probe) end
    if progress and clock() - last >= 5 then
      last = clock()
      progress(calls)
    end
  end
  return calls
end

--- One slice of fuzzing inside a plugin call (an observer or a policy): a few steps, well
--- inside the CPU budget. Returns a random verdict for policies.
local windowStart, windowSteps = 0, 0

function M.slice(value, tag, isPolicy, maxSteps, maxSeconds)
  local now = clock()
  -- A slice ended by the CPU budget left depth up. A live outer slice started its current
  -- step moments ago (its heartbeat); a dead one stopped beating.
  if depth > 0 and now - heartbeat > 0.25 then depth = 0 end
  -- events made by a slice run slices of their own: at most 150 steps per 0.1 s in all
  if now - windowStart > 0.1 then windowStart, windowSteps = now, 0 end
  if depth < 2 and windowSteps < 150 then
    if depth == 0 then nestedLeft = 60 end
    depth = depth + 1
    ensureWeird()
    harvest(value, tag)
    if isPolicy and type(value) == "table" and not reqMeta then reqMeta = getmetatable(value) end
    if chance(0.15) then guarded(worldStep) end
    local steps = rand(maxSteps or 8)
    if depth > 1 then steps = math.min(steps, 2) end
    windowSteps = windowSteps + steps
    for _ = 1, steps do
      heartbeat = clock()
      if heartbeat - now > (maxSeconds or 0.02) then break end
      guarded(step)
    end
    depth = depth - 1
  end
  if isPolicy then
    local r = rand(100)
    if r <= 85 then return nil end
    if r <= 90 then return true end
    if r <= 93 then return false, "fuzz" end
    local v = any(1)
    if skipping("policy-verdict") and type(v) == "table" and getmetatable(v) ~= nil then return nil end
    return v
  end
end

return M
