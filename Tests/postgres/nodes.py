"""Races across several `shareflow serve` nodes on one PostgreSQL store (SPEC §16, M4;
SeveralNodesTests.swift). Requests go to the nodes in turn; every answer is checked, and a 5xx
fails the run.

  nodes.py accepts BASES STATE     150 users accept one public share at once: exactly 100
                                   participants are left (R8), the rest are refused as full
  nodes.py parents BASES STATE N   N times, a parent and its child shared at once from two
                                   nodes: exactly one of the two shares is made (R5)

BASES: the nodes' URLs, comma-separated. STATE/users.json: {"api", "users": [{"email",
"token"}]}, Alice first."""

import json
import os
import sys
import threading

import requests

CONTAINER = "iCloud.test"


class Nodes:
    def __init__(self, bases):
        self.bases = bases.split(",")
        self.turn = 0
        self.lock = threading.Lock()

    def db(self, scope):
        with self.lock:
            self.turn += 1
            base = self.bases[self.turn % len(self.bases)]
        return f"{base}/database/1/{CONTAINER}/development/{scope}"


def post(session, url, state, user, body):
    r = session.post(url, params={"ckAPIToken": state["api"], "ckWebAuthToken": user["token"]}, json=body, timeout=60)
    if r.status_code >= 500:
        raise SystemExit(f"FAIL: {r.status_code} from {url}: {r.text[:300]}")
    return r.status_code, r.json()


def together(work):
    """Runs each function of `work` on its own thread, released at once; their results."""
    start = threading.Barrier(len(work))
    results = [None] * len(work)
    errors = []

    def run(i):
        start.wait()
        try:
            results[i] = work[i]()
        except BaseException as e:  # SystemExit from post included
            errors.append(str(e))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(work))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print("\n".join(errors[:5]))
        sys.exit(1)
    return results


def accepts(nodes, state):
    alice, guests = state["users"][0], state["users"][1:]
    s = requests.Session()
    post(s, nodes.db("private") + "/zones/modify", state, alice,
         {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Party"}}}]})
    status, body = post(s, nodes.db("private") + "/records/modify", state, alice, {
        "zoneID": {"zoneName": "Party"}, "atomic": True, "operations": [
            {"operationType": "create", "record": {"recordName": "party", "recordType": "Event", "createShortGUID": True,
                                                   "fields": {"title": {"value": "Party", "type": "STRING"}}}},
            {"operationType": "create", "record": {"recordName": "party-share", "recordType": "cloudkit.share",
                                                   "forRecord": {"recordName": "party"}, "publicPermission": "READ_ONLY"}}]})
    assert status == 200 and "serverErrorCode" not in body["records"][1], body
    guid = body["records"][1]["shortGUID"]

    def accept(user):
        def go():
            session = requests.Session()
            return post(session, nodes.db("public") + "/records/accept", state, user, {"shortGUIDs": [{"value": guid}]})
        return go

    answers = together([accept(g) for g in guests])
    accepted = sum(1 for status, body in answers if status == 200 and body["results"][0].get("participantStatus") == "ACCEPTED")
    refused = [body["results"][0].get("serverErrorCode") if status == 200 else body.get("serverErrorCode") for status, body in answers
               if not (status == 200 and body["results"][0].get("participantStatus") == "ACCEPTED")]
    status, body = post(s, nodes.db("private") + "/records/lookup", state, alice,
                        {"zoneID": {"zoneName": "Party"}, "records": [{"recordName": "party-share"}]})
    participants = body["records"][0].get("participants", [])
    print(json.dumps({"accepted": accepted, "refused": len(refused), "refusedAs": sorted(set(map(str, refused))),
                      "participants": len(participants)}))


def parents(nodes, state, rounds):
    alice = state["users"][0]
    s = requests.Session()
    post(s, nodes.db("private") + "/zones/modify", state, alice,
         {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Tree"}}}]})
    made = []
    for n in range(rounds):
        status, body = post(s, nodes.db("private") + "/records/modify", state, alice, {
            "zoneID": {"zoneName": "Tree"}, "operations": [
                {"operationType": "create", "record": {"recordName": f"p{n}", "recordType": "Folder", "fields": {}}},
                {"operationType": "create", "record": {"recordName": f"c{n}", "recordType": "Folder", "fields": {},
                                                       "parent": {"recordName": f"p{n}"}}}]})
        assert status == 200 and all("serverErrorCode" not in r for r in body["records"]), body

        def share(record):
            def go():
                session = requests.Session()
                return post(session, nodes.db("private") + "/records/modify", state, alice, {
                    "zoneID": {"zoneName": "Tree"}, "operations": [
                        {"operationType": "create", "record": {"recordName": f"share-{record}", "recordType": "cloudkit.share",
                                                               "forRecord": {"recordName": record}}}]})
            return go

        answers = together([share(f"p{n}"), share(f"c{n}")])
        ok = [status == 200 and "serverErrorCode" not in body["records"][0] for status, body in answers]
        codes = [body["records"][0].get("serverErrorCode") if status == 200 else body.get("serverErrorCode") for status, body in answers]
        made.append({"made": sum(ok), "codes": codes})
    print(json.dumps({"rounds": rounds, "exactlyOne": sum(1 for m in made if m["made"] == 1),
                      "codes": sorted({c for m in made for c in m["codes"] if c})}))


if __name__ == "__main__":
    phase, bases, folder = sys.argv[1:4]
    with open(os.path.join(folder, "users.json"), encoding="utf-8") as f:
        state = json.load(f)
    nodes = Nodes(bases)
    if phase == "accepts":
        accepts(nodes, state)
    else:
        parents(nodes, state, int(sys.argv[4]))
