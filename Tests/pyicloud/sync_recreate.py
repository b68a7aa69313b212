"""SPEC §14 attacked through pyicloud in strict mode (PYICLOUD_CK_EXTRA=forbid): a record name
deleted and made again in one records/modify request and across requests, paged a record at a
time across the superseded tombstone, the zone's token (zones/list, getCurrentSyncToken) right
after, and the owner's changes/zone against Bob's around his accept and removal. After each
step every follower (the owner's and Bob's, from each token taken) converges to a fetch from the
start, which equals the records the zone holds.

Run by Tests/EndToEndTests/ChangeLogMultiProcessTests.swift with SHAREFLOW_BASE, SHAREFLOW_API,
SHAREFLOW_ALICE and SHAREFLOW_BOB."""

import os

import requests
from pyicloud.common.cloudkit.models import CKRecord, CKTombstoneRecord, CKZoneChangesZoneReq, CKZoneID, CKZoneIDReq

from flow_kit import API, BASE, User, check, share_with_bob

alice = User(os.environ["SHAREFLOW_ALICE"])
bob = User(os.environ["SHAREFLOW_BOB"])
owner = alice.public.raw_post("/users/caller", {})["users"][0]["userRecordName"]
alice.private.raw_post("/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Re"}}}]})
mine = CKZoneID(zoneName="Re")
theirs = CKZoneID(zoneName="Re", ownerRecordName=owner)


def modify(*ops, atomic=True):
    """One records/modify request of `ops` (operationType, name, title or None, parent or None)."""
    operations = []
    for op, name, title, parent in ops:
        record = {"recordName": name, "recordType": "Note", "fields": {"title": {"value": title or name, "type": "STRING"}}}
        if parent:
            record["parent"] = {"recordName": parent}
        operations.append({"operationType": op, "record": record})
    records = alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": "Re"}, "atomic": atomic, "operations": operations})["records"]
    print("   ", [(op[0], op[1]) for op in ops], "->", [r.get("serverErrorCode") or ("deleted" if r.get("deleted") else r.get("fields", {}).get("title", {}).get("value")) for r in records])
    return records


def follow(client, zone, token, limit):
    """Pages of changes/zone from `token`, `limit` records a page: (name → tag, deleted names, token, pages)."""
    live, gone, pages = {}, set(), 0
    for page in client.iter_changes(zone_req=CKZoneChangesZoneReq(zoneID=zone, syncToken=token), results_limit=limit):
        pages += 1
        check_page = page.records
        for r in check_page:
            if isinstance(r, CKTombstoneRecord):
                live.pop(r.recordName, None)
                gone.add(r.recordName)
            elif isinstance(r, CKRecord):
                live[r.recordName] = r.recordChangeTag
                gone.discard(r.recordName)
        token = page.syncToken
    return live, gone, token, pages


class Follower:
    """A replica kept by following one feed from the start, a record a page."""

    def __init__(self, client, zone, limit=1):
        self.client, self.zone, self.limit, self.records, self.token = client, zone, limit, {}, None

    def sync(self):
        live, gone, self.token, _ = follow(self.client, self.zone, self.token, self.limit)
        for name in gone:
            self.records.pop(name, None)
        self.records.update(live)


def stored():
    """The zone's records now, name → tag (a query of each type, the owner's)."""
    out = {}
    q = alice.private.raw_post("/records/query", {"zoneID": {"zoneName": "Re"}, "query": {"recordType": "Note"}, "resultsLimit": 200})
    for r in q["records"]:
        out[r["recordName"]] = r["recordChangeTag"]
    # (a share is no queryable type: looked up by name)
    shares = alice.private.raw_post("/records/lookup", {"zoneID": {"zoneName": "Re"}, "records": [{"recordName": "share-root"}]})["records"]
    for r in shares:
        if "recordChangeTag" in r:
            out[r["recordName"]] = r["recordChangeTag"]
    return out


def current_tokens():
    """The zone's token three ways: zones/list, getCurrentSyncToken on a query, a fetch from the start's end."""
    listed = [z.syncToken for z in alice.private.zones_list().zones if z.zoneID.zoneName == "Re"]
    q = requests.post(BASE + "/private/records/query", json={"zoneID": {"zoneName": "Re"}, "query": {"recordType": "Note"}},
                      params={"ckAPIToken": API, "ckWebAuthToken": os.environ["SHAREFLOW_ALICE"], "getCurrentSyncToken": "True"}).json()
    return listed[0] if listed else None, q.get("syncToken"), follow(alice.private, mine, None, 200)[2]


owner_followers = [Follower(alice.private, mine, 1), Follower(alice.private, mine, 3)]
tokens_taken = []  # every owner token a follower held, to follow again from at the end


def converge(what):
    for f in owner_followers:
        f.sync()
        tokens_taken.append((f.token, dict(f.records)))
    fresh, _, fresh_token, _ = follow(alice.private, mine, None, 200)
    now = stored()
    check(fresh == now, what + ": a fetch from the start is the zone's records")
    check(all(f.records == now for f in owner_followers), what + ": every owner replica (a record a page, three) is the zone's records")
    check(all(f.token == fresh_token for f in owner_followers), what + ": every replica ends at the fetch from the start's token")
    listed, queried, _ = current_tokens()
    check(listed == fresh_token and queried == fresh_token, what + ": zones/list and getCurrentSyncToken give that token")
    again, gone, token, _ = follow(alice.private, mine, fresh_token, 1)
    check(again == {} and gone == set() and token == fresh_token, what + ": nothing after it, the same token")


modify(("create", "a", None, None), ("create", "b", None, None), ("create", "c", None, None))
converge("three records")

# In one request: a deleted and made again; d made and deleted.
# (a request's saves go before its deletes: a create of a name it deletes meets the record still there)
check([r.get("serverErrorCode") for r in modify(("forceDelete", "a", None, None), ("create", "a", "a again", None))] == ["ATOMIC_ERROR", "EXISTS"],
      "a deleted and made again in one atomic request: refused whole (EXISTS)")
converge("a deleted and made again in one request (refused)")
modify(("forceDelete", "a", None, None), ("forceReplace", "a", "a replaced", None), atomic=False)
converge("a replaced and deleted in one request")
modify(("forceUpdate", "a", "a back", None))
converge("a made again")
modify(("create", "d", None, None), ("forceDelete", "d", None, None))
converge("d made and deleted in one request")
modify(("forceDelete", "b", None, None), ("forceReplace", "b", "b replaced", None), ("forceDelete", "b", None, None),
       ("forceUpdate", "b", "b last", None), atomic=False)
converge("b deleted, replaced, deleted and made again in one request")

# Across requests, a follower reading between: the tombstone, then the record at its later place.
middle = Follower(alice.private, mine, 1)
middle.sync()
modify(("forceDelete", "c", None, None))
middle.sync()
check("c" not in middle.records, "c's deletion reached a follower between the requests")
before = middle.token
modify(("create", "c", "c again", None))
modify(("forceDelete", "a", None, None))
modify(("forceUpdate", "a", "a third", None))
live, gone, _, pages = follow(alice.private, mine, before, 1)
check(set(live) == {"a", "c"} and gone == set() and pages == 2, "paged a record at a time across the superseded tombstones: c and a once each")
owner_followers.append(middle)
converge("c and a deleted and made again across requests")

# Bob: a share of root (with children made, deleted and made again) accepted.
modify(("create", "root", None, None), ("create", "k1", None, "root"), ("create", "k2", None, "root"))
root = alice.private.lookup(["root"], zone_id=CKZoneIDReq(zoneName="Re")).records[0]
share = alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": "Re"}, "atomic": True, "operations": [share_with_bob("root", root.recordChangeTag, "Re")]})["records"][0]
converge("root shared")
check(bob.invites.accept([share["shortGUID"]])["results"][0]["participantStatus"] == "ACCEPTED", "Bob accepted")
converge("Bob accepted")
bobs = [Follower(bob.shared, theirs, 1), Follower(bob.shared, theirs, 2)]


def bob_converges(what, expected):
    for f in bobs:
        f.sync()
    fresh, _, token, _ = follow(bob.shared, theirs, None, 200)
    check(set(fresh) == expected, what + ": Bob's fetch from the start is the hierarchy and its share " + str(sorted(fresh)))
    now = stored()
    check(all(fresh[n] == now[n] for n in fresh), what + ": Bob's tags are the owner's")
    check(all(f.records == fresh and f.token == token for f in bobs), what + ": every replica of Bob's is his fetch from the start")


bob_converges("accepted", {"root", "k1", "k2", "share-root"})
modify(("forceDelete", "k1", None, None), ("forceReplace", "k1", "k1 replaced", "root"), atomic=False)
converge("k1 replaced and deleted in one request")
bob_converges("k1 replaced and deleted in one request", {"root", "k2", "share-root"})
modify(("create", "k1", "k1 again", "root"))
converge("k1 made again under root")
bob_converges("k1 made again under root", {"root", "k1", "k2", "share-root"})
modify(("forceDelete", "k2", None, None))
bobs[0].sync()
modify(("create", "k2", "k2 outside", None))
converge("k2 deleted, then made again outside the hierarchy")
bob_converges("k2 deleted, then made again outside the hierarchy", {"root", "k1", "share-root"})
modify(("forceDelete", "k2", None, None))
modify(("create", "k2", "k2 inside", "root"))
bob_converges("k2 made again inside", {"root", "k1", "k2", "share-root"})
converge("k2 made again inside")

# Alice removes Bob; the owner's feed goes on, his zone is gone.
share_now = alice.private.lookup(["share-root"], zone_id=CKZoneIDReq(zoneName="Re")).records[0]
alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": "Re"}, "operations": [{"operationType": "update", "record": {
    "recordName": "share-root", "recordType": "cloudkit.share", "recordChangeTag": share_now.recordChangeTag,
    "participants": [p.model_dump(mode="json", exclude_none=True) for p in share_now.participants if p.type == "OWNER"]}}]})
converge("Bob removed")
after = bob.shared.raw_post("/changes/zone", {"zones": [{"zoneID": {"zoneName": "Re", "ownerRecordName": owner}, "syncToken": bobs[0].token}]})["zones"][0]
check("serverErrorCode" in after, "removed, Bob's token of the zone reads no more: " + str(after)[:200])
modify(("forceDelete", "k1", None, None))
modify(("create", "k1", "k1 after Bob", "root"))
converge("k1 made again after Bob left")

# Every owner token a follower held still reads, to the same end.
_, _, end, _ = follow(alice.private, mine, None, 200)
for token, _ in tokens_taken:
    check(follow(alice.private, mine, token, 5)[2] == end, "an owner token taken earlier reads to the end")

print("sync recreate ok")
