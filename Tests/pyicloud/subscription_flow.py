"""Subscriptions and notifications (SPEC §20) through pyicloud (PyPI), strict
(PYICLOUD_CK_EXTRA=forbid): pyicloud has no subscription calls, so the subscription routes go
through its `raw_post`, as an app built on it would; the device token and the webcourier poll
through its `requests` session. Alice subscribes to her zone and to a query; Bob, a participant,
writes; Alice's poll hands out the zone and the query notifications in CloudKit's push shape;
Carol, a stranger, is told nothing and cannot subscribe to the zone.

Run by Tests/EndToEndTests/PyiCloudTests.swift with SHAREFLOW_BASE, SHAREFLOW_API,
SHAREFLOW_ALICE, SHAREFLOW_BOB, SHAREFLOW_CAROL; the server's notifications.pollSeconds is 2."""

import os
import time

import requests
from pyicloud.common.cloudkit.client import CloudKitApiError
from pyicloud.common.cloudkit.models import CKModifyOperation, CKWriteRecord, CKZoneIDReq

from flow_kit import API, User, check, share_with_bob

alice = User(os.environ["SHAREFLOW_ALICE"])
bob = User(os.environ["SHAREFLOW_BOB"])
carol = User(os.environ["SHAREFLOW_CAROL"])
DEVICE = os.environ["SHAREFLOW_BASE"] + "/device/1/iCloud.test/development"


def token(who):
    """A device token of `who`'s: its apnsToken and absolute webcourier URL."""
    r = requests.post(DEVICE + "/tokens/create", params={"ckAPIToken": API, "ckWebAuthToken": who},
                      json={"apnsEnvironment": "development"}, timeout=30)
    check(r.status_code == 200, "tokens/create answers (%d %s)" % (r.status_code, r.text))
    body = r.json()
    check(set(body) == {"apnsEnvironment", "apnsToken", "webcourierURL"}, "with CloudKit's three keys")
    return body["apnsToken"], body["webcourierURL"]


def poll(url):
    r = requests.get(url, timeout=30)
    check(r.status_code == 200, "the poll answers 200 (%d)" % r.status_code)
    return r.json()


owner = alice.public.raw_post("/users/caller", {})["users"][0]["userRecordName"]
alice.private.raw_post("/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Trips"}}}]})
trips = CKZoneIDReq(zoneName="Trips")
made = alice.private.modify(operations=[CKModifyOperation(operationType="create", record=CKWriteRecord(
    recordName="lisbon", recordType="Trip", fields={"title": {"value": "Lisbon", "type": "STRING"}}))], zone_id=trips, atomic=True)
shared = alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": "Trips"}, "operations": [
    share_with_bob("lisbon", made.records[0].recordChangeTag, "Lisbon")]})
guid = shared["records"][0]["shortGUID"]
accepted = bob.public.raw_post("/records/accept", {"shortGUIDs": [{"value": guid}]})
check(accepted["results"][0]["participantStatus"] == "ACCEPTED", "Bob accepts")

subs = alice.private.raw_post("/subscriptions/modify", {"operations": [
    {"operationType": "create", "subscription": {"subscriptionID": "trips", "subscriptionType": "zone",
                                                  "zoneID": {"zoneName": "Trips"},
                                                  "notificationInfo": {"alertBody": "Trips changed"}}},
    {"operationType": "create", "subscription": {"subscriptionID": "days", "subscriptionType": "query",
                                                  "zoneID": {"zoneName": "Trips"},
                                                  "query": {"recordType": "Day", "filterBy": [
                                                      {"comparator": "GREATER_THAN", "fieldName": "n", "fieldValue": {"value": 1, "type": "INT64"}}]},
                                                  "firesOn": ["create", "update", "delete"],
                                                  "notificationInfo": {"additionalFields": ["n"]}}}]})["subscriptions"]
check([s["subscriptionID"] for s in subs] == ["trips", "days"], "two subscriptions made")
again = alice.private.raw_post("/subscriptions/modify", {"operations": [
    {"operationType": "create", "subscription": {"subscriptionID": "trips", "subscriptionType": "zone", "zoneID": {"zoneName": "Trips"}}}]})
check(again["subscriptions"][0].get("notificationInfo", {}).get("alertBody") == "Trips changed", "making it again answers the one saved")
listed = alice.private.raw_post("/subscriptions/list", {})["subscriptions"]
check(sorted(s["subscriptionID"] for s in listed) == ["days", "trips"], "both listed")
found = alice.private.raw_post("/subscriptions/lookup", {"subscriptions": [{"subscriptionID": "days"}, {"subscriptionID": "none"}]})
check(found["subscriptions"][0]["query"]["recordType"] == "Day", "a lookup gives the query as sent")
check(found["subscriptions"][1]["serverErrorCode"] == "NOT_FOUND", "and NOT_FOUND for one never made")

peek = carol.shared.raw_post("/subscriptions/modify", {"operations": [
    {"operationType": "create", "subscription": {"subscriptionID": "peek", "subscriptionType": "zone",
                                                  "zoneID": {"zoneName": "Trips", "ownerRecordName": owner}}}]})
check(peek["subscriptions"][0]["serverErrorCode"] == "ZONE_NOT_FOUND", "a stranger's zone subscription is ZONE_NOT_FOUND")
carol.shared.raw_post("/subscriptions/modify", {"operations": [
    {"operationType": "create", "subscription": {"subscriptionID": "all", "subscriptionType": "database"}}]})

_, alice_url = token(os.environ["SHAREFLOW_ALICE"])
_, carol_url = token(os.environ["SHAREFLOW_CAROL"])
started = time.monotonic()
check(poll(alice_url) == {"ck": {}}, "an idle poll is held, then nothing")
check(time.monotonic() - started >= 1.5, "held for the poll period, not answered at once")

for n, value in enumerate([2, 5]):
    bob.shared.raw_post("/records/modify", {"zoneID": {"zoneName": "Trips", "ownerRecordName": owner}, "operations": [
        {"operationType": "create", "record": {"recordName": "day%d" % n, "recordType": "Day", "parent": {"recordName": "lisbon"},
                                               "fields": {"n": {"value": value, "type": "INT64"}}}}]})
# Each write is one zone notification, or the two one (dispatched together): read until
# both query notifications are in.
told = []
while len([t for t in told if "qry" in t["ck"]]) < 2 and len(told) < 6:
    told.append(poll(alice_url))
fets = [t["ck"]["fet"] for t in told if "fet" in t["ck"]]
qrys = [t["ck"]["qry"] for t in told if "qry" in t["ck"]]
check(fets and fets[0] == {"sid": "trips", "zid": "Trips", "zoid": owner}, "the zone subscription fired for Bob's write")
check([q["rid"] for q in qrys] == ["day0", "day1"] and all(q["fo"] == 1 and q["dbs"] == 1 for q in qrys), "the query's reasons in order")
check([q["af"] for q in qrys] == [{"n": 2}, {"n": 5}], "with its additionalFields")
check(all(t["ck"]["cid"] == "iCloud.test" for t in told), "each names the container")
check(poll(carol_url) == {"ck": {}}, "the stranger is told nothing")

gone = requests.get(alice_url[:-4] + "AAAA", timeout=30)
check(gone.status_code == 404, "a guessed URL is 404, after the hold")
deleted = alice.private.raw_post("/subscriptions/modify", {"operations": [
    {"operationType": "delete", "subscription": {"subscriptionID": "days"}}]})
check(deleted["subscriptions"][0] == {"subscriptionID": "days", "deleted": True}, "a subscription deleted by its ID alone")
try:
    alice.private.raw_post("/subscriptions/modify", {"operations": [{"operationType": "explode", "subscription": {}}]})
    check(False, "a bad operation is refused")
except CloudKitApiError as e:
    check("400" in str(e) or "BAD_REQUEST" in str(e), "a bad operation is BAD_REQUEST")
print("pyicloud subscription flow ok")
