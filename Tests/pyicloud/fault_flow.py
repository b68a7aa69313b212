"""SPEC §15 through pyicloud (PyPI) in strict mode: fault rules armed over the admin route make
`shareflow serve` fail as CloudKit does, and pyicloud raises what it raises against Apple's
service — CloudKitRateLimited with the rule's retry_after for THROTTLED and for a ZONE_BUSY zone
in iter_changes, CloudKitApiError for a per-item CONFLICT while the other items commit, a lost
connection after commit with the write applied — reproducibly by seed, touching nothing else.

Run by Tests/EndToEndTests/PyiCloudTests.swift with SHAREFLOW_BASE, SHAREFLOW_API,
SHAREFLOW_ALICE, SHAREFLOW_BOB and SHAREFLOW_ADMIN (an admin token)."""

import os

import requests
from pyicloud.common.cloudkit.client import CloudKitApiError, CloudKitRateLimited
from pyicloud.common.cloudkit.models import CKModifyOperation, CKWriteRecord, CKZoneChangesZoneReq, CKZoneID, CKZoneIDReq

from flow_kit import API, check  # the shared harness
from flow_kit import User

ADMIN = os.environ["SHAREFLOW_ADMIN"]
FAULTS = os.environ["SHAREFLOW_BASE"] + "/admin/1/faults"
alice = User(os.environ["SHAREFLOW_ALICE"])
bob = User(os.environ["SHAREFLOW_BOB"])


def admin(method, path="", body=None, token=ADMIN):
    r = requests.request(method, FAULTS + path, json=body, headers={"Authorization": "Bearer " + token}, timeout=30)
    return r.status_code, r.json()


def arm(*rules):
    status, answer = admin("POST", body={"rules": list(rules)})
    assert status == 200, answer
    return answer["ids"]


def clear():
    admin("DELETE")


alice.private.raw_post("/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Faults"}}}]})
zone = CKZoneIDReq(zoneName="Faults")


def save(user, *names, atomic=None):
    ops = [CKModifyOperation(operationType="forceUpdate",
                             record=CKWriteRecord(recordName=n, recordType="Note", fields={"title": {"value": n, "type": "STRING"}}))
           for n in names]
    return user.private.modify(operations=ops, zone_id=zone, atomic=atomic)


def exists(name):
    found = alice.private.raw_post("/records/lookup", {"zoneID": {"zoneName": "Faults"}, "records": [{"recordName": name}]})
    return "serverErrorCode" not in found["records"][0]


def raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the test is which one
        return e
    return None


# The admin route: its own token only; a bad rule names its field and arms nothing.
status, _ = admin("GET", token=API)
check(status == 401, "an API token is refused at the admin route")
status, answer = admin("POST", body={"rules": [{"fault": "requestRateLimited"}, {"fault": "zoneBusy", "probability": 2}]})
check(status == 400 and "rules[1].probability must be a number from 0 to 1, got 2" in answer["reason"], "a bad rule is named")
check(admin("GET")[1]["rules"] == [], "and none of the batch was armed")

# THROTTLED: pyicloud raises CloudKitRateLimited with the rule's retryAfter (from Retry-After).
arm({"operation": "records/modify", "fault": "requestRateLimited", "retryAfter": 7, "count": 1})
e = raised(lambda: save(alice, "t1"))
check(isinstance(e, CloudKitRateLimited) and e.retry_after == 7, "THROTTLED raises CloudKitRateLimited(retry_after=7)")
check(not exists("t1"), "a throttled write wrote nothing")
save(alice, "t1")
check(exists("t1"), "count 1: the retry goes through")

# ZONE_BUSY in iter_changes: a zone-level error item with retryAfter.
arm({"operation": "changes/zone", "zone": "Faults", "fault": "zoneBusy", "retryAfter": 4, "count": 1})
req = CKZoneChangesZoneReq(zoneID=CKZoneID(zoneName="Faults"))
e = raised(lambda: list(alice.private.iter_changes(zone_req=req)))
check(isinstance(e, CloudKitRateLimited) and e.retry_after == 4, "ZONE_BUSY in iter_changes raises CloudKitRateLimited(retry_after=4)")
pages = list(alice.private.iter_changes(zone_req=req))
check(sum(len(p.records) for p in pages) == 1, "then the zone's changes come")

# Per-item CONFLICT in a non-atomic batch: the other items commit.
arm({"operation": "records/modify", "recordName": "bad-*", "fault": "partialFailure"})
e = raised(lambda: save(alice, "bad-1", "good-1", "good-2", atomic=False))
check(isinstance(e, CloudKitApiError) and "bad-1: CONFLICT" in str(e), "the matched item fails with CONFLICT")
check(exists("good-1") and exists("good-2") and not exists("bad-1"), "while the others commit")
e = raised(lambda: save(alice, "bad-2", "good-3"))
check(isinstance(e, CloudKitApiError) and "ATOMIC_ERROR" in str(e) and not exists("good-3"), "atomic: the batch fails (R22)")
clear()

# A dropped connection after commit: the client sees no answer, the write stays.
arm({"operation": "records/modify", "fault": "networkFailure", "when": "afterCommit", "count": 1})
e = raised(lambda: save(alice, "after-1"))
check(e is not None and not isinstance(e, CloudKitRateLimited), "the client gets no answer: " + type(e).__name__)
check(exists("after-1"), "and the write was applied (a retry would double-apply)")
arm({"operation": "records/modify", "fault": "networkFailure", "count": 1})
e = raised(lambda: save(alice, "before-1"))
check(e is not None and not exists("before-1"), "dropped before commit: nothing written")
clear()

# One seed, the same faults; other users and requests untouched.


def pattern(seed):
    clear()
    arm({"operation": "records/lookup", "caller": "alice@example.com", "fault": "serviceUnavailable",
         "probability": 0.5, "seed": seed})
    out = ""
    for _ in range(30):
        e = raised(lambda: alice.private.raw_post("/records/lookup", {"zoneID": {"zoneName": "Faults"}, "records": [{"recordName": "t1"}]}))
        out += "x" if e is not None and "TRY_AGAIN_LATER" in str(getattr(e, "payload", "")) else "."
    return out


first = pattern(11)
check(pattern(11) == first and "x" in first and "." in first, "one seed, one sequence of faults: " + first)
history = admin("GET", "/history")[1]["history"]
check(len([h for h in history if h["fault"] == "serviceUnavailable"]) == 2 * first.count("x"), "each in the history")
bob.private.raw_post("/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Faults"}}}]})
found = bob.private.raw_post("/records/lookup", {"zoneID": {"zoneName": "Faults"}, "records": [{"recordName": "t1"}]})
check(found["records"][0]["serverErrorCode"] == "NOT_FOUND", "another user is untouched (his own answer)")
save(alice, "untouched")
check(exists("untouched"), "another operation is untouched")
clear()
check(admin("GET")[1]["rules"] == [], "DELETE cleared the rules")

print("pyicloud fault flow ok")
