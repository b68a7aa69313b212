-- Class 7 (SPEC §8): ctx.appendFile writes bytes exactly as given, inside the plugin's data
-- folder only, and no symlink leads out. `shareflow test` loads append-probe for each test;
-- a test reloads it with the settings it needs, then makes one participant.fetched event.
local sf = require("shareflow")

local RAW = "\0\1\127\128\191\254\255 abc \xc3\x28 \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80 \xe2\x82 end\n"

local function folder() return sf.plugins.dataFolder("append-probe") end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

local function sh(command)
  local ok = os.execute(command)
  assert(ok, "command failed: " .. command)
end

local function quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Loads the probe with `settings` and delivers one event; returns the probe's last outcome.
local function probe(settings)
  sf.plugins.load("append-probe", settings)
  if not sf.accounts.find{ email = "owner@example.com" } then sf.accounts.create{ email = "owner@example.com" } end
  sf.as("owner@example.com"):container("iCloud.test"):fetchShareParticipants{ "someone@example.com" }
  local log = read(folder() .. "/probe.log") or ""
  return log:match("([^\n]*)\n$") or log
end

-- A private scratch folder outside the data folder (removed by `cleanup`).
local scratch = {}
local function outside()
  local dir = os.tmpname()
  os.remove(dir)
  sh("mkdir -p " .. quote(dir))
  scratch[#scratch + 1] = dir
  return dir
end

local function cleanup()
  for _, dir in ipairs(scratch) do os.execute("rm -rf " .. quote(dir)) end
  scratch = {}
  -- the test runner's data folder for this test (…/shareflow-test-UUID/append-probe)
  local parent = folder():match("^(.*)/append%-probe$")
  if parent and parent:find("shareflow%-test%-") then os.execute("rm -rf " .. quote(parent)) end
end

test("bytes that are not UTF-8 are written exactly as given", function()
  local outcome = probe{ path = "raw.bin", payload = "raw" }
  local written = read(folder() .. "/raw.bin")
  cleanup()
  expect.eq(outcome:sub(1, 3), "ok ", "the append succeeded: " .. outcome)
  expect.eq(written and #written, #RAW, "byte count")
  expect.truthy(written == RAW, "the file holds the bytes given, byte for byte")
end)

test("appends accumulate and text round-trips (control)", function()
  probe{ path = "text.txt", payload = "text" }
  local outcome = probe{ path = "text.txt", payload = "text" }
  local written = read(folder() .. "/text.txt")
  cleanup()
  expect.eq(outcome:sub(1, 3), "ok ", outcome)
  expect.eq(written, "plain text\nplain text\n")
end)

test("a path with .. or an absolute path is refused (control)", function()
  local target = outside()
  local outcomes = {
    probe{ path = "../escape.txt" },
    probe{ path = "a/../../escape.txt" },
    probe{ path = target .. "/escape.txt" },
  }
  local escaped = read(folder() .. "/../escape.txt") or read(target .. "/escape.txt")
  cleanup()
  for _, outcome in ipairs(outcomes) do expect.eq(outcome:sub(1, 6), "error ", outcome) end
  expect.eq(escaped, nil, "nothing was written outside")
end)

test("a symlink to a file outside the data folder is refused", function()
  local target = outside() .. "/victim.txt"
  sh("printf 'untouched' > " .. quote(target))
  sh("mkdir -p " .. quote(folder()))
  sh("ln -s " .. quote(target) .. " " .. quote(folder() .. "/link.txt"))
  local outcome = probe{ path = "link.txt" }
  local victim = read(target)
  cleanup()
  expect.eq(victim, "untouched", "the file outside is unchanged")
  expect.eq(outcome:sub(1, 6), "error ", "the append is refused: " .. outcome)
end)

test("a symlinked folder leading outside is refused", function()
  local target = outside()
  sh("mkdir -p " .. quote(folder()))
  sh("ln -s " .. quote(target) .. " " .. quote(folder() .. "/sub"))
  local outcome = probe{ path = "sub/escape.txt" }
  local escaped = read(target .. "/escape.txt")
  cleanup()
  expect.eq(escaped, nil, "nothing was written in the folder the link points to")
  expect.eq(outcome:sub(1, 6), "error ", "the append is refused: " .. outcome)
end)

-- (refusing the append, or replacing the link with a file inside the folder, are both fine)
test("a dangling symlink is not followed out either", function()
  local target = outside() .. "/created.txt"
  sh("mkdir -p " .. quote(folder()))
  sh("ln -s " .. quote(target) .. " " .. quote(folder() .. "/dangling.txt"))
  local outcome = probe{ path = "dangling.txt" }
  local created = read(target)
  cleanup()
  expect.eq(created, nil, "no file was created through the link (" .. outcome .. ")")
end)
