"""Many clients doing the sharing flow on overlapping shares against `shareflow serve`
(LoadTests.swift). Each client is a thread with its own HTTP connection and user.

  sharing_load.py setup BASE STATE            Alice makes the shares, everyone accepts
  sharing_load.py load BASE STATE SECONDS N   N clients edit the shared records for SECONDS
  sharing_load.py verify BASE STATE           every acknowledged edit is in the store

BASE may name several servers on one store, comma-separated (SPEC §16: nodes on PostgreSQL):
requests go to them in turn, and a node that does not answer (killed) costs its client that
request only.

STATE is a folder: users.json (written by the test: [{"email", "token"}], Alice first, and the
API token), and what the phases leave for each other (acks.jsonl: every edit the server
acknowledged, appended and flushed as it comes, so a server killed mid-run leaves an exact list).

An edit sets the client's own field (`w<client>`) on a shared record to a counter, with the
record's change tag as the client last read it: the server answers the new record (acknowledged)
or CONFLICT (someone else changed it since: read and try again). A 5xx, a malformed answer or an
acknowledged edit missing afterwards fails the run."""

import json
import os
import random
import sys
import threading
import time

import requests

CONTAINER = "iCloud.test"
ROOTS = 6


_turn = [0]
_turn_lock = threading.Lock()


def db(base, scope):
    """The database URL on the next of BASE's servers, in turn."""
    nodes = base.split(",")
    with _turn_lock:
        _turn[0] += 1
        node = nodes[_turn[0] % len(nodes)]
    return f"{node}/database/1/{CONTAINER}/development/{scope}"


def load_state(folder):
    with open(os.path.join(folder, "users.json"), encoding="utf-8") as f:
        return json.load(f)


def params(state, user):
    return {"ckAPIToken": state["api"], "ckWebAuthToken": user["token"]}


def post(session, url, state, user, body, timeout=60):
    r = session.post(url, params=params(state, user), json=body, timeout=timeout)
    if r.status_code >= 500:
        raise SystemExit(f"FAIL: {r.status_code} from {url}: {r.text[:300]}")
    try:
        return r.status_code, r.json()
    except ValueError:
        raise SystemExit(f"FAIL: not JSON from {url} ({r.status_code}): {r.text[:300]}")


def setup(base, folder):
    state = load_state(folder)
    alice, guests = state["users"][0], state["users"][1:]
    s = requests.Session()
    status, _ = post(s, db(base, "private") + "/zones/modify", state, alice,
                     {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Load"}}}]})
    assert status == 200
    participants = [{"type": "USER", "permission": "READ_WRITE", "acceptanceStatus": "INVITED",
                     "userIdentity": {"lookupInfo": {"emailAddress": g["email"]}}} for g in guests]
    guids = []
    for n in range(ROOTS):
        status, body = post(s, db(base, "private") + "/records/modify", state, alice, {
            "zoneID": {"zoneName": "Load"}, "atomic": True, "operations": [
                {"operationType": "create", "record": {"recordName": f"doc{n}", "recordType": "Doc", "createShortGUID": True,
                                                       "fields": {"title": {"value": f"Doc {n}", "type": "STRING"}}}},
                {"operationType": "create", "record": {"recordName": f"share{n}", "recordType": "cloudkit.share",
                                                       "forRecord": {"recordName": f"doc{n}"}, "participants": participants}}]})
        assert status == 200 and "serverErrorCode" not in body["records"][1], body
        guids.append(body["records"][1]["shortGUID"])
    owner = post(s, db(base, "public") + "/users/caller", state, alice, {})[1]["users"][0]["userRecordName"]
    for g in guests:
        status, body = post(s, db(base, "public") + "/records/accept", state, g, {"shortGUIDs": [{"value": v} for v in guids]})
        assert status == 200 and all(r.get("participantStatus") == "ACCEPTED" for r in body["results"]), body
    with open(os.path.join(folder, "shares.json"), "w", encoding="utf-8") as f:
        json.dump({"owner": owner, "guids": guids}, f)
    print(f"setup ok: {ROOTS} shares, {len(guests)} participants each")


def load(base, folder, seconds, clients):
    state = load_state(folder)
    shares = json.load(open(os.path.join(folder, "shares.json"), encoding="utf-8"))
    users = state["users"]
    zone = {"zoneName": "Load", "ownerRecordName": shares["owner"]}
    acks = open(os.path.join(folder, "acks.jsonl"), "a", encoding="utf-8")
    lock = threading.Lock()
    counts = {"acknowledged": 0, "conflict": 0, "other": 0, "lost_connection": 0, "resolved": 0}
    deadline = time.monotonic() + seconds
    failures = []

    def client(k):
        user = users[k % len(users)]
        scope = "private" if k % len(users) == 0 else "shared"
        s = requests.Session()
        rng = random.Random(k)
        seq = 0
        tags = {}
        while time.monotonic() < deadline and not failures:
            name = f"doc{rng.randrange(ROOTS)}"
            try:
                if rng.random() < 0.1:
                    status, body = post(s, db(base, "public") + "/records/resolve", state, user,
                                        {"shortGUIDs": [{"value": rng.choice(shares["guids"])}]})
                    with lock:
                        counts["resolved"] += 1
                    continue
                if name not in tags:
                    status, body = post(s, db(base, scope) + "/records/lookup", state, user,
                                        {"zoneID": zone, "records": [{"recordName": name}]})
                    tags[name] = body["records"][0]["recordChangeTag"]
                seq += 1
                status, body = post(s, db(base, scope) + "/records/modify", state, user, {"zoneID": zone, "operations": [
                    {"operationType": "update", "record": {"recordName": name, "recordType": "Doc", "recordChangeTag": tags[name],
                                                           "fields": {f"w{k}": {"value": seq, "type": "INT64"}}}}]})
            except requests.RequestException:
                with lock:
                    counts["lost_connection"] += 1
                time.sleep(0.05)
                tags.pop(name, None)
                continue
            except SystemExit as e:
                failures.append(str(e))
                return
            item = body.get("records", [{}])[0] if status == 200 else body
            with lock:
                if status == 200 and "serverErrorCode" not in item:
                    tags[name] = item["recordChangeTag"]
                    counts["acknowledged"] += 1
                    acks.write(json.dumps({"record": name, "field": f"w{k}", "value": seq}) + "\n")
                    acks.flush()
                elif item.get("serverErrorCode") == "CONFLICT":
                    counts["conflict"] += 1
                    tags.pop(name, None)
                else:
                    counts["other"] += 1
                    failures.append(f"unexpected answer {status}: {json.dumps(item)[:300]}")

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    acks.close()
    print("load: " + json.dumps(counts))
    for f in failures[:5]:
        print(f)
    if failures:
        sys.exit(1)


def verify(base, folder):
    state = load_state(folder)
    shares = json.load(open(os.path.join(folder, "shares.json"), encoding="utf-8"))
    latest = {}
    with open(os.path.join(folder, "acks.jsonl"), encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            a = json.loads(line)
            key = (a["record"], a["field"])
            latest[key] = max(latest.get(key, 0), a["value"])
    s = requests.Session()
    alice = state["users"][0]
    zone = {"zoneName": "Load", "ownerRecordName": shares["owner"]}
    status, body = post(s, db(base, "private") + "/records/lookup", state, alice,
                        {"zoneID": zone, "records": [{"recordName": f"doc{n}"} for n in range(ROOTS)]})
    fields = {r["recordName"]: r["fields"] for r in body["records"]}
    missing = []
    for (record, field), value in sorted(latest.items()):
        stored = fields.get(record, {}).get(field, {}).get("value")
        # The last acknowledged value, or a later one whose answer never arrived.
        if stored is None or stored < value:
            missing.append(f"{record}.{field}: acknowledged {value}, stored {stored}")
    print(f"verify: {len(latest)} acknowledged (record, client) values checked, {len(missing)} missing")
    for m in missing[:10]:
        print("LOST: " + m)
    sys.exit(1 if missing or not latest else 0)


if __name__ == "__main__":
    phase, base, folder = sys.argv[1:4]
    if phase == "setup":
        setup(base, folder)
    elif phase == "load":
        load(base, folder, float(sys.argv[4]), int(sys.argv[5]))
    else:
        verify(base, folder)
