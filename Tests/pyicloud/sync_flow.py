"""The change feeds of SPEC §14 driven by pyicloud (PyPI) in strict mode (PYICLOUD_CK_EXTRA=forbid):
its `database_changes`, `changes` and `iter_changes` against `shareflow serve`, through Bob's
accept and his removal, with tombstones, paging, bad tokens and the public database.

Run by Tests/EndToEndTests/PyiCloudTests.swift with SHAREFLOW_BASE, SHAREFLOW_API,
SHAREFLOW_ALICE and SHAREFLOW_BOB, like sharing_flow.py."""

import os

import requests
from pyicloud.common.cloudkit.client import CloudKitApiError
from pyicloud.common.cloudkit.models import (
    CKModifyOperation,
    CKRecord,
    CKTombstoneRecord,
    CKWriteRecord,
    CKZoneChangesZoneReq,
    CKZoneID,
    CKZoneIDReq,
)

from flow_kit import API, BASE, User, check, share_with_bob  # the shared harness


def error_of(fn):
    """The CloudKitApiError `fn` raises, as text (None when it raises none)."""
    try:
        fn()
    except CloudKitApiError as e:
        return str(e) + " " + str(getattr(e, "payload", ""))
    return None


def names(zone_changes):
    return sorted(r.recordName for r in zone_changes.records if isinstance(r, CKRecord))


def tombstones(zone_changes):
    return sorted(r.recordName for r in zone_changes.records if isinstance(r, CKTombstoneRecord))


alice = User(os.environ["SHAREFLOW_ALICE"])
bob = User(os.environ["SHAREFLOW_BOB"])

owner = alice.public.raw_post("/users/caller", {})["users"][0]["userRecordName"]
alice.private.raw_post("/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Notes"}}}]})
notes = CKZoneIDReq(zoneName="Notes")


def write(op, name, title=None, tag=None, parent=None):
    fields = {} if title is None else {"title": {"value": title, "type": "STRING"}}
    record = CKWriteRecord(recordName=name, recordType="Note", fields=fields, recordChangeTag=tag,
                           parent={"recordName": parent} if parent else None)
    return alice.private.modify(operations=[CKModifyOperation(operationType=op, record=record)], zone_id=notes).records[0]


root = write("create", "root", "Root")
for i in range(5):
    write("create", f"n{i}", f"Note {i}", parent="root")
write("create", "secret", "Secret")

# The owner's database feed shows the zone; its zone feed every record, page by page.
db = alice.private.database_changes()
check([z.zoneID.zoneName for z in db.zones] == ["Notes"], "database_changes shows the new zone")
again = alice.private.database_changes(sync_token=db.syncToken)
check(again.zones == [] and again.syncToken == db.syncToken, "database_changes again: nothing, the same token")

pages = list(alice.private.iter_changes(zone_req=CKZoneChangesZoneReq(zoneID=CKZoneID(zoneName="Notes")), results_limit=2))
seen = sorted(n for p in pages for n in names(p))
check(len(pages) == 4 and seen == sorted(["root", "n0", "n1", "n2", "n3", "n4", "secret"]), "iter_changes pages through every record")
token = pages[-1].syncToken
empty = alice.private.changes(zone_req=CKZoneChangesZoneReq(zoneID=CKZoneID(zoneName="Notes"), syncToken=token))
check(empty.zones[0].records == [] and empty.zones[0].syncToken == token, "changes again: nothing, the same token")
current = alice.private.changes(zone_req=CKZoneChangesZoneReq(
    zoneID=CKZoneID(zoneName="Notes", zoneType="REGULAR_CUSTOM_ZONE"), desiredKeys=[], desiredRecordTypes=[], reverse=False))
check(current.zones[0].records == [] and current.zones[0].syncToken == token, "desiredRecordTypes [] gives just the current token")
listed = alice.private.zones_list().zones
check([z.syncToken for z in listed if z.zoneID.zoneName == "Notes"] == [token], "zones_list carries the zone's token")

# An edit and a delete: the record once, a tombstone.
n0 = [r for p in pages for r in p.records if isinstance(r, CKRecord) and r.recordName == "n0"][0]
write("update", "n0", "Note 0, edited", tag=n0.recordChangeTag)
alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": "Notes"}, "operations": [
    {"operationType": "forceDelete", "record": {"recordName": "n1"}}]})
delta = alice.private.changes(zone_req=CKZoneChangesZoneReq(zoneID=CKZoneID(zoneName="Notes"), syncToken=token)).zones[0]
check(names(delta) == ["n0"] and tombstones(delta) == ["n1"], "the delta: the edit once and the delete as a tombstone")
edited = [r for r in delta.records if isinstance(r, CKRecord)][0]
check(edited.fields.get_value("title") == "Note 0, edited", "the edited record in its latest state")

# A share of root with Bob: nothing for him until he accepts; then the zone and the hierarchy only.
share = alice.private.raw_post("/records/modify", {
    "zoneID": {"zoneName": "Notes"}, "atomic": True,
    "operations": [share_with_bob("root", root.recordChangeTag, "Notes")]})["records"][0]
bob_db = bob.shared.database_changes()
check(bob_db.zones == [], "Bob's shared database is empty while invited")
guid = share["shortGUID"]
check(bob.invites.accept([guid])["results"][0]["participantStatus"] == "ACCEPTED", "Bob accepted")
joined = bob.shared.database_changes(sync_token=bob_db.syncToken)
check([(z.zoneID.zoneName, z.zoneID.ownerRecordName) for z in joined.zones] == [("Notes", owner)], "the shared zone appears in Bob's feed")
theirs = CKZoneID(zoneName="Notes", ownerRecordName=owner)
first = [z for p in bob.shared.iter_changes(zone_req=CKZoneChangesZoneReq(zoneID=theirs), results_limit=3) for z in [p]]
bob_names = sorted(n for p in first for n in names(p))
check(bob_names == sorted(["root", "n0", "n2", "n3", "n4", "share-root"]), "Bob's first sync: the hierarchy and its share, not the secret")
bob_token = first[-1].syncToken

# Alice moves the secret under root: it enters Bob's view; then out again: a tombstone for him.
secret = alice.private.lookup(["secret"], zone_id=notes).records[0]
moved = alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": "Notes"}, "operations": [{"operationType": "update", "record": {
    "recordName": "secret", "recordType": "Note", "recordChangeTag": secret.recordChangeTag, "parent": {"recordName": "root"},
    "fields": {"title": {"value": "Secret", "type": "STRING"}}}}]})["records"][0]
came = bob.shared.changes(zone_req=CKZoneChangesZoneReq(zoneID=theirs, syncToken=bob_token)).zones[0]
check(names(came) == ["secret"], "a record moved into the hierarchy comes into Bob's view")
# (an update keeps what it does not name; a replace is the whole record, parent and all)
alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": "Notes"}, "operations": [{"operationType": "replace", "record": {
    "recordName": "secret", "recordType": "Note", "recordChangeTag": moved["recordChangeTag"],
    "fields": {"title": {"value": "Secret", "type": "STRING"}}}}]})
left = bob.shared.changes(zone_req=CKZoneChangesZoneReq(zoneID=theirs, syncToken=came.syncToken)).zones[0]
check(names(left) == [] and tombstones(left) == ["secret"], "moved out again, it leaves Bob's view as a tombstone")

# Bad tokens and places: per-zone errors, request errors, never a 5xx.
other = alice.private.raw_post("/changes/zone", {"zones": [{"zoneID": {"zoneName": "Notes"}, "syncToken": left.syncToken}]})["zones"][0]
check(other.get("serverErrorCode") == "BAD_REQUEST" and "token is of another" in other.get("reason", ""), "another user's token (of his shared database) is a per-zone BAD_REQUEST")
forged = bob.shared.raw_post("/changes/zone", {"zones": [{"zoneID": {"zoneName": "Notes", "ownerRecordName": owner},
                                                           "syncToken": left.syncToken[:-4] + "AAAA"}]})["zones"][0]
check(forged.get("serverErrorCode") == "BAD_REQUEST", "a forged token is a per-zone BAD_REQUEST")
err = error_of(lambda: bob.shared.changes(zone_req=CKZoneChangesZoneReq(zoneID=theirs, syncToken="forged")))
check(err is not None and "BAD_REQUEST" in err, "pyicloud's changes raises on the zone error")
err = error_of(lambda: bob.shared.database_changes(sync_token="forged"))
check(err is not None, "a forged database token is a request error")
err = error_of(lambda: alice.public.database_changes())
check(err is not None and "badDatabase" in err, "the public database has no feeds (badDatabase)")
default = alice.private.raw_post("/changes/zone", {"zones": [{"zoneID": {"zoneName": "_defaultZone"}}]})["zones"][0]
check(default.get("serverErrorCode") == "BAD_REQUEST", "the default zone has no feed")
err = error_of(lambda: alice.private.raw_post("/changes/zone", {"zones": [{"zoneID": {"zoneName": "Notes"}}], "resultsLimit": -1}))
check(err is not None and "resultsLimit" in err, "a negative resultsLimit is a request error naming it")

# getCurrentSyncToken on a query answer.
# (pyicloud has no parameter for it: the same request with the query parameter added)
q = requests.post(BASE + "/private/records/query", json={"zoneID": {"zoneName": "Notes"}, "query": {"recordType": "Note"}},
                  params={"ckAPIToken": API, "ckWebAuthToken": os.environ["SHAREFLOW_ALICE"], "getCurrentSyncToken": "True"}).json()
check(isinstance(q.get("syncToken"), str), "getCurrentSyncToken=True adds the zone's token to a query")

# Alice removes Bob: the zone leaves his database feed.
share_now = alice.private.lookup(["share-root"], zone_id=notes).records[0]
alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": "Notes"}, "operations": [{"operationType": "update", "record": {
    "recordName": "share-root", "recordType": "cloudkit.share", "recordChangeTag": share_now.recordChangeTag,
    "participants": [p.model_dump(mode="json", exclude_none=True) for p in share_now.participants if p.type == "OWNER"]}}]})
gone = bob.shared.database_changes(sync_token=joined.syncToken)
check([(z.zoneID.zoneName, z.deleted) for z in gone.zones] == [("Notes", True)], "removed, the zone is reported deleted in Bob's feed")

print("pyicloud sync flow ok")
