-- ShareFlow demo: Alice shares a trip with Bob and Carol, they look at the invitation,
-- accept it, edit together, and one of them is removed; with the shipped plugins on
-- (Scripts/demo.config.lua), an outsider is turned away and every event is audited.
-- Run: make demo
local sf = require("shareflow")
local C = "iCloud.com.example.trips"

local function say(fmt, ...) print(string.format(fmt, ...)) end
local function section(title) print("\n== " .. title .. " " .. string.rep("=", 60 - #title)) end

section("Accounts")
local alice = sf.accounts.create{ email = "alice@example.com", name = { given = "Alice", family = "Ng" }, discoverable = true }
sf.accounts.create{ email = "bob@example.com", phone = "+1 415 555 0101",
  name = { given = "Bob", family = "Ruiz" }, discoverable = true }
sf.accounts.create{ email = "carol@example.com", name = { given = "Carol" } }
for _, a in ipairs(sf.accounts.list()) do say("  %s", tostring(a)) end

section("Alice writes a trip")
local c = sf.as("alice@example.com"):container(C)
local db = c.privateCloudDatabase
local zone = db:saveZone("Trips")
local trip = sf.Record{ recordType = "Trip", recordName = "lisbon", zone = zone, fields = { title = "Lisbon", days = 5 } }
local day1 = sf.Record{ recordType = "Day", recordName = "day1", zone = zone, parent = trip, fields = { plan = "Alfama, tram 28" } }
say("  %s", tostring(trip))
say("  %s (parent: %s)", tostring(day1), day1.parent.recordName)

section("Alice invites Bob (read-write) and Carol (read-only)")
local share = sf.Share{ rootRecord = trip, title = "Lisbon trip" }
local op = sf.FetchShareParticipantsOperation{ userIdentityLookupInfos = {
  sf.LookupInfo{ emailAddress = "bob@example.com" }, sf.LookupInfo{ emailAddress = "carol@example.com" } } }
op.perShareParticipantResultBlock = function(info, participant, err)
  if participant then
    if info.emailAddress == "bob@example.com" then participant.permission = "readWrite" end
    share:addParticipant(participant)
    say("  fetched %s -> %s", info.emailAddress, participant.permission)
  else
    say("  could not fetch %s: %s", info.emailAddress, tostring(err))
  end
end
op.qualityOfService = "userInitiated"
c:add(op); op:wait()
local _, err = db:modifyRecords{ save = { trip, day1, share } }
assert(not err, tostring(err))
say("  saved %s", tostring(share))
for _, p in ipairs(share.participants) do
  say("    %-20s %-12s %-10s %s", p.userIdentity.lookupInfo.emailAddress, p.role, p.permission, p.acceptanceStatus)
end

section("Bob opens the link")
local bc = sf.as("bob@example.com"):container(C)
local metadatas = bc:fetchShareMetadata({ share.url }, { shouldFetchRootRecord = true, rootRecordDesiredKeys = { "title" } })
local md = metadatas[share.url]
say("  %s", tostring(md))
say("  root record preview: %s", tostring(md.rootRecord))

section("Bob and Carol accept")
local shares = bc:acceptShares{ md }
say("  bob: %s", shares[1].currentUserParticipant.acceptanceStatus)
local cc = sf.as("carol@example.com"):container(C)
local cm = cc:fetchShareMetadata{ share.url }
say("  carol: %s", cc:acceptShares{ cm[share.url] }[1].currentUserParticipant.acceptanceStatus)

section("Editing together")
local bobDay = bc.sharedCloudDatabase:fetchRecord(day1.recordID)
bobDay.fields.plan = "Alfama, tram 28, pasteis de nata"
local _, e1 = bc.sharedCloudDatabase:modifyRecords{ save = { bobDay } }
say("  bob (readWrite) edits day1: %s", e1 and tostring(e1) or "saved")
local carolDay = cc.sharedCloudDatabase:fetchRecord(day1.recordID)
carolDay.fields.plan = "stay home"
local _, e2 = cc.sharedCloudDatabase:modifyRecords{ save = { carolDay } }
say("  carol (readOnly) edits day1: %s", e2 and select(2, next(e2.partialErrors)).code or "saved")
say("  day1 now: %s", db:fetchRecord(day1.recordID).fields.plan)

section("Alice removes Carol")
sf.on("participant.removed", function(ev)
  say("  event participant.removed: %s (%s)", ev.participant.userIdentity.lookupInfo.emailAddress, ev.reason)
end)
local function removeCarol(s)
  for _, p in ipairs(s.participants) do
    if p.userIdentity.lookupInfo.emailAddress == "carol@example.com" then s:removeParticipant(p) end
  end
end
removeCarol(share)
local _, stale = db:modifyRecords{ save = { share } }
-- Their acceptances changed the share since Alice saved it: her copy is stale (R21).
say("  with her old copy: %s", select(2, next(stale.partialErrors)).code)
share = select(2, next(stale.partialErrors)).serverRecord
removeCarol(share)
db:modifyRecords{ save = { share } }
local gone, e3 = cc.sharedCloudDatabase:fetchRecord(trip.recordID)
say("  carol fetches the trip: %s", gone and "visible" or e3.code)
say("  bob still sees: %s", bc.sharedCloudDatabase:fetchRecord(trip.recordID).fields.title)

section("Policy: an outsider tries to join")
if #sf.plugins.loaded() == 0 then
  say("  (no plugins loaded: run with --config Scripts/demo.config.lua to see the domain allow-list)")
else
  say("  plugins on: %s", table.concat(sf.plugins.loaded(), ", "))
end
sf.accounts.create{ email = "mallory@elsewhere.test", name = { given = "Mallory" } }
local invite = c:fetchShareParticipants{ { emailAddress = "mallory@elsewhere.test" } }
share = db:fetchRecord(share.recordID)
share:addParticipant(invite[1])
db:modifyRecords{ save = { share } }
local mc = sf.as("mallory@elsewhere.test"):container(C)
local mm = mc:fetchShareMetadata{ share.url }
local joined, jerr = mc:acceptShares{ mm[share.url] }
if joined[1] then
  say("  mallory accepted (no allow-list policy is on)")
else
  say("  mallory is refused: %s", select(2, next(jerr.partialErrors)).message)
end
for _, d in ipairs(sf.decisions{ limit = 3 }) do
  say("  decision #%d %-13s %-5s by %s in %.2f ms", d.id, d.point, d.allow and "allow" or "deny",
    table.concat(d.policies, ", "), d.duration * 1000)
end

section("Discovery")
alice:addContacts{ "bob@example.com", "carol@example.com", "+1 415 555 0101" }
local found = c:discoverAllUserIdentities()
for _, identity in ipairs(found) do
  say("  %s (contacts: %s)", tostring(identity), table.concat(identity.contactIdentifiers, ", "))
end
say("  carol is not discoverable, so she is not listed")

section("Audit log")
local audit = #sf.plugins.loaded() > 0 and io.open(sf.plugins.dataFolder("audit-log") .. "/audit.jsonl")
if audit then
  local counts, order, total = {}, {}, 0
  for line in audit:lines() do
    local event = line:match('"event":"([^"]+)"')
    if not counts[event] then counts[event] = 0; order[#order + 1] = event end
    counts[event] = counts[event] + 1
    total = total + 1
  end
  audit:close()
  say("  %d events in %s/audit.jsonl:", total, sf.plugins.dataFolder("audit-log"))
  for _, event in ipairs(order) do say("    %-32s %d", event, counts[event]) end
else
  say("  (audit-log plugin not loaded)")
end
print("\nDone: " .. tostring(db:fetchRecord(share.recordID)))
