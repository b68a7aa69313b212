"""SPEC §14 S6 over HTTP with concurrent writers: while four threads create, edit, delete and
move records in and out of a shared hierarchy (as Alice, and as Bob where he may write), Bob and
Alice follow their zone feeds (changes/zone) from their tokens, a few records a page. When the
writers stop, each reader's copy — record name to change tag — must equal a full fetch of what
they may read: nothing lost, nothing duplicated, no stale version. Raw HTTP (requests), so the
wire itself is what is checked.

Run by Tests/EndToEndTests/PyiCloudTests.swift with SHAREFLOW_BASE, SHAREFLOW_API,
SHAREFLOW_ALICE and SHAREFLOW_BOB."""

import os
import random
import threading

import requests

from flow_kit import API, BASE, check, share_with_bob

ALICE = {"ckAPIToken": API, "ckWebAuthToken": os.environ["SHAREFLOW_ALICE"]}
BOB = {"ckAPIToken": API, "ckWebAuthToken": os.environ["SHAREFLOW_BOB"]}
SEED = int(os.environ.get("SYNC_SEED", "20261124"))


def post(who, path, body):
    r = requests.post(BASE + path, json=body, params=who, timeout=60)
    assert r.status_code < 500, f"{path}: {r.status_code} {r.text[:300]}"
    return r.status_code, r.json()


def modify(who, database, zone, operations):
    status, answer = post(who, f"/{database}/records/modify", {"zoneID": zone, "operations": operations})
    assert status == 200, f"records/modify: {status} {answer}"
    return answer["records"]


owner = post(ALICE, "/public/users/caller", {})[1]["users"][0]["userRecordName"]
mine = {"zoneName": "Live"}
theirs = {"zoneName": "Live", "ownerRecordName": owner}
post(ALICE, "/private/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": mine}}]})
root = modify(ALICE, "private", mine, [{"operationType": "create", "record": {
    "recordName": "root", "recordType": "Note", "fields": {"title": {"value": "Root", "type": "STRING"}}}}])[0]
share = modify(ALICE, "private", mine, [share_with_bob("root", root["recordChangeTag"], "Live")])[0]
status, accepted = post(BOB, "/public/records/accept", {"shortGUIDs": [{"value": share["shortGUID"]}]})
check(status == 200, "Bob accepted the share of root")


class Reader:
    """One person's copy of the zone, kept by following its feed."""

    def __init__(self, who, database, zone):
        self.who, self.database, self.zone = who, database, zone
        self.token = None
        self.copy = {}
        self.problems = []

    def follow(self):
        while True:
            request = {"zoneID": self.zone, "resultsLimit": 7}
            if self.token:
                request["syncToken"] = self.token
            status, answer = post(self.who, f"/{self.database}/changes/zone", {"zones": [request]})
            zone = answer["zones"][0] if status == 200 else answer
            if "serverErrorCode" in zone:
                self.problems.append(f"changes/zone: {zone}")
                return
            names = [r["recordName"] for r in zone["records"]]
            if len(names) != len(set(names)):
                self.problems.append(f"a page names a record twice: {names}")
            for r in zone["records"]:
                if r.get("deleted"):
                    self.copy.pop(r["recordName"], None)
                elif "serverErrorCode" in r:
                    self.problems.append(f"a record of the feed is an error: {r}")
                else:
                    self.copy[r["recordName"]] = r["recordChangeTag"]
            self.token = zone["syncToken"]
            if not zone["moreComing"]:
                return

    def truth(self):
        """What a full fetch gives: every record the query reads, and the share record."""
        records, marker = {}, None
        while True:
            body = {"zoneID": self.zone, "query": {"recordType": "Note"}, "resultsLimit": 200}
            if marker:
                body["continuationMarker"] = marker
            status, answer = post(self.who, f"/{self.database}/records/query", body)
            assert status == 200, answer
            for r in answer["records"]:
                records[r["recordName"]] = r["recordChangeTag"]
            marker = answer.get("continuationMarker")
            if not marker:
                break
        status, answer = post(self.who, f"/{self.database}/records/lookup", {"zoneID": self.zone, "records": [{"recordName": "share-root"}]})
        for r in answer.get("records", []):
            if "recordChangeTag" in r:
                records[r["recordName"]] = r["recordChangeTag"]
        return records


readers = [Reader(ALICE, "private", mine), Reader(BOB, "shared", theirs)]
for reader in readers:
    reader.follow()

done = threading.Event()
failures = []


def writer(n):
    rng = random.Random(SEED + n)
    who, database, zone = (BOB, "shared", theirs) if n == 3 else (ALICE, "private", mine)
    for step in range(30):
        name = f"w{n}-{rng.randrange(12)}"
        kind = rng.randrange(5)
        try:
            if kind <= 1:
                # A new record (or a replace of one there), inside the hierarchy or, for Alice, outside it.
                parent = {"recordName": "root"} if database == "shared" or rng.random() < 0.6 else None
                record = {"recordName": name, "recordType": "Note", "fields": {"title": {"value": f"{name} at {step}", "type": "STRING"}}}
                if parent:
                    record["parent"] = parent
                modify(who, database, zone, [{"operationType": "forceReplace", "record": record}])
            elif kind == 2:
                # An edit of what is there.
                modify(who, database, zone, [{"operationType": "forceUpdate", "record": {
                    "recordName": name, "recordType": "Note", "fields": {"title": {"value": f"edit {step}", "type": "STRING"}}}}])
            elif kind == 3 and database == "private":
                # Moved into or out of Bob's view.
                record = {"recordName": name, "recordType": "Note", "fields": {"title": {"value": f"moved {step}", "type": "STRING"}}}
                if rng.random() < 0.5:
                    record["parent"] = {"recordName": "root"}
                modify(who, database, zone, [{"operationType": "forceReplace", "record": record}])
            else:
                modify(who, database, zone, [{"operationType": "forceDelete", "record": {"recordName": name}}])
        except AssertionError as e:
            failures.append(str(e))


def follower(reader):
    while not done.is_set():
        reader.follow()


threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
followers = [threading.Thread(target=follower, args=(r,)) for r in readers]
for t in threads + followers:
    t.start()
for t in threads:
    t.join()
done.set()
for t in followers:
    t.join()

check(failures == [], "every write was answered (no 5xx, no request-level error): " + "; ".join(failures[:3]))
for reader in readers:
    reader.follow()
    check(reader.problems == [], f"{reader.database}: the feed read cleanly: " + "; ".join(reader.problems[:3]))
    truth = reader.truth()
    lost = sorted(set(truth) - set(reader.copy))
    extra = sorted(set(reader.copy) - set(truth))
    stale = sorted(n for n in truth if n in reader.copy and reader.copy[n] != truth[n])
    check(not lost and not extra and not stale,
          f"{reader.database}: the copy is a full fetch ({len(truth)} records): lost {lost[:5]}, extra {extra[:5]}, stale {stale[:5]}")
print("sync under concurrent writers ok")
