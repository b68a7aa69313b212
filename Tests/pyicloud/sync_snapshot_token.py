"""SPEC §14 S6 with `getCurrentSyncToken`: an answer's records and its token are one snapshot.
A client that starts its copy from a records/query (or records/lookup) answer and follows the
zone from the token that answer carries must end equal to a fetch from the start, while other
processes write the zone: a token read after the answer's records, with another process's
commit between, would skip that commit for good.

Asks until the file SNAPSHOT_DONE exists (the writers have finished), then follows every copy
to the end. Run by Tests/EndToEndTests/ChangeLogMultiProcessTests.swift."""

import os

import requests

from flow_kit import API, BASE, check

params = {"ckAPIToken": API, "ckWebAuthToken": os.environ["SHAREFLOW_ALICE"], "getCurrentSyncToken": "true"}
session = requests.Session()
zone = {"zoneName": "Mix"}


def post(path, body, with_token=True):
    r = session.post(BASE + "/private" + path, json=body, params=params if with_token else {k: v for k, v in params.items() if k != "getCurrentSyncToken"})
    r.raise_for_status()
    return r.json()


def follow(records, token):
    more = True
    while more:
        z = post("/changes/zone", {"zones": [{"zoneID": zone, "syncToken": token} if token else {"zoneID": zone}], "resultsLimit": 200}, False)["zones"][0]
        for r in z["records"]:
            if r.get("deleted"):
                records.pop(r["recordName"], None)
            else:
                records[r["recordName"]] = r["recordChangeTag"]
        token, more = z["syncToken"], z["moreComing"]
    return token


copies = []
asked = 0
post("/records/query", {"zoneID": zone, "query": {"recordType": "Item"}, "resultsLimit": 1})
print("ready", flush=True)
while not os.path.exists(os.environ["SNAPSHOT_DONE"]) and asked < 2000:
    asked += 1
    if asked % 2:
        answer = post("/records/query", {"zoneID": zone, "query": {"recordType": "Item"}, "resultsLimit": 200})
    else:
        # The names made so far, looked up (a name not made yet is a per-record NOT_FOUND).
        names = [{"recordName": f"u{w}_{n}"} for w in (1, 2) for n in range(1, 101)]
        answer = post("/records/lookup", {"zoneID": zone, "records": names})
    records = {r["recordName"]: r["recordChangeTag"] for r in answer["records"] if "recordChangeTag" in r}
    copies.append((records, answer["syncToken"]))
fresh = {}
end = follow(fresh, None)
lost = 0
for records, token in copies:
    ended = follow(records, token)
    records = {n: t for n, t in records.items() if n.startswith("u")}
    if ended != end or records != {n: t for n, t in fresh.items() if n.startswith("u")}:
        lost += 1
        missing = sorted(set(fresh) - set(records))
        print("a copy from an answer and its token differs from a fetch from the start: missing", missing[:5],
              "stale", sorted(n for n in records if n in fresh and records[n] != fresh[n])[:5])
print(f"asked {asked}, copies differing {lost}")
check(lost == 0, "every copy started from an answer and its getCurrentSyncToken ends equal to a fetch from the start")
print("snapshot token ok")
