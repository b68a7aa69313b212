"""SPEC §13's wave-4 additions through pyicloud, strict (PYICLOUD_CK_EXTRA=forbid): encrypted
fields as Apple Invites writes them, a location with all eight keys, a zone's share with an
administrator, zone-wide queries (the Invites client's own call) with one continuation across
zones, the newer comparators, users/lookup/contacts, access requests (SPEC §17: requesters, blocked,
isApprovedRequester), and the 401/421 split as pyicloud meets it
(its authentication error on 401 and 403 only; a 421 is a CloudKitApiError with the sign-in
page). Run by Tests/EndToEndTests/PyiCloudTests.swift with SHAREFLOW_BASE, SHAREFLOW_API,
SHAREFLOW_ALICE, SHAREFLOW_BOB and SHAREFLOW_EXPIRED (a token past its time)."""

import os

import requests
from pyicloud.common.cloudkit.client import CloudKitApiError, CloudKitAuthError, CloudKitContainerClient
from pyicloud.common.cloudkit.models import (
    CKModifyOperation,
    CKQueryFilterBy,
    CKQueryObject,
    CKRecord,
    CKWriteRecord,
    CKZoneIDReq,
)

from flow_kit import API, BASE, STRICT, User, check


def strict(model, data):
    return model.model_validate(data, extra=STRICT)


alice = User(os.environ["SHAREFLOW_ALICE"])
bob = User(os.environ["SHAREFLOW_BOB"])

# Two event zones, as Apple Invites keeps one zone per event.
for name in ("Event1", "Event2"):
    alice.private.raw_post("/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": name}}}]})

# Encrypted fields as Invites writes them (INT64 and STRING flagged isEncrypted, ENCRYPTED_BYTES),
# and a location with all eight keys; the typed modify validates the answer strictly.
place = {"latitude": 38.72, "longitude": -9.14, "horizontalAccuracy": 5.0, "verticalAccuracy": -1.0,
         "altitude": 95.5, "speed": 0.0, "course": 270.0, "timestamp": 1700000000123}
for zone, n in (("Event1", 2), ("Event2", 1)):
    ops = [CKModifyOperation(operationType="create", record=CKWriteRecord(
        recordName=f"{zone}-rsvp{i}", recordType="Rsvp",
        fields={"status": {"type": "INT64", "value": i, "isEncrypted": True},
                "nameEncrypted": {"type": "STRING", "value": f"Guest {i}", "isEncrypted": True},
                "noteEncrypted": {"type": "ENCRYPTED_BYTES", "value": "AAEC"},
                "where": {"type": "LOCATION", "value": place},
                "tags": {"type": "STRING_LIST", "value": ["food", f"t{i}"]}})) for i in range(n)]
    saved = alice.private.modify(operations=ops, zone_id=CKZoneIDReq(zoneName=zone))
    check(len(saved.records) == n and all(isinstance(r, CKRecord) for r in saved.records),
          f"{zone}: encrypted fields and a full location saved, the answer strict")

got = alice.private.lookup(record_names=["Event1-rsvp0"], zone_id=CKZoneIDReq(zoneName="Event1")).records[0]
fields = got.model_dump()["fields"]
check(fields["nameEncrypted"]["isEncrypted"] is True and fields["nameEncrypted"]["value"] == "Guest 0",
      "a STRING flagged isEncrypted reads back flagged")
check(fields["noteEncrypted"]["type"] == "ENCRYPTED_BYTES", "ENCRYPTED_BYTES reads back as itself")
check(fields["where"]["value"] == place, "the location keeps all eight keys")

# Zone-wide queries, as the Invites client sends them: every zone, one continuation across them.
seen, marker, pages = [], None, 0
while True:
    page = alice.private.query(query=CKQueryObject(recordType="Rsvp"), zone_wide=True, results_limit=2, continuation=marker)
    seen += [r.recordName for r in page.records]
    marker = page.continuationMarker
    pages += 1
    if not marker or pages > 5:
        break
check(sorted(seen) == ["Event1-rsvp0", "Event1-rsvp1", "Event2-rsvp0"] and pages == 2,
      "a zone-wide query pages across both event zones")

# The newer comparators through the typed query.
page = alice.private.query(
    query=CKQueryObject(recordType="Rsvp", filterBy=[CKQueryFilterBy(
        comparator="LIST_CONTAINS_ALL", fieldName="tags", fieldValue={"type": "STRING_LIST", "value": ["food", "t1"]})]),
    zone_id=CKZoneIDReq(zoneName="Event1"))
check([r.recordName for r in page.records] == ["Event1-rsvp1"], "LIST_CONTAINS_ALL")
page = alice.private.query(
    query=CKQueryObject(recordType="Rsvp", filterBy=[CKQueryFilterBy(
        comparator="NOT_IN", fieldName="___recordID", fieldValue={"type": "REFERENCE_LIST", "value": [{"recordName": "Event1-rsvp0"}]})]),
    zone_id=CKZoneIDReq(zoneName="Event1"))
check([r.recordName for r in page.records] == ["Event1-rsvp1"], "NOT_IN by record ID")

# A zone's share, as Invites makes one, with Bob as an administrator; he accepts and reads the
# zone through his zone-wide query of the shared database.
made = alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": "Event1"}, "operations": [{
    "operationType": "create", "record": {"recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share",
        "publicPermission": "NONE", "fields": {"cloudkit.title": {"type": "STRING", "value": "Party"}},
        "participants": [{"type": "ADMINISTRATOR", "permission": "READ_WRITE",
                          "userIdentity": {"lookupInfo": {"emailAddress": "bob@example.com"}}}]}}]})
share = strict(CKRecord, made["records"][0])
check(any(p.type == "ADMINISTRATOR" for p in share.participants or []), "the zone's share has Bob as ADMINISTRATOR")
accepted = bob.invites.accept([share.shortGUID])
check(accepted["results"][0]["participantStatus"] == "ACCEPTED", "Bob accepts the zone's share")
page = bob.invites.query("shared", query=CKQueryObject(recordType="Rsvp"), zone_wide=True)
check(sorted(r.recordName for r in page.records) == ["Event1-rsvp0", "Event1-rsvp1"],
      "Bob's zone-wide query of his shared database reads the shared event, not the other")

# Access requests (SPEC §17) as pyicloud's strict models read them: a share taking requests, Bob
# asking, Alice reading `requesters`, blocking (`blocked`), unblocking by his userRecordName, and
# approving him by adding him (`isApprovedRequester`).
alice.private.raw_post("/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Asks"}}}]})
made = alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": "Asks"}, "operations": [
    {"operationType": "create", "record": {"recordName": "plan", "recordType": "Plan", "fields": {}}},
    {"operationType": "create", "record": {"recordName": "ask", "recordType": "cloudkit.share",
        "forRecord": {"recordName": "plan"}, "denyAccessRequests": False}}]})
asked_share = strict(CKRecord, made["records"][1])
check(asked_share.denyAccessRequests is False, "a share taking requests says denyAccessRequests false")


def ask():
    return bob.public.raw_post("/records/requestAccess", {"shortGUIDs": [{"value": asked_share.shortGUID}]})["results"][0]


def current():
    looked = alice.private.raw_post("/records/lookup", {"zoneID": {"zoneName": "Asks"}, "records": [{"recordName": "ask"}]})
    return strict(CKRecord, looked["records"][0])


def update(extra):
    body = {"recordName": "ask", "recordType": "cloudkit.share", "recordChangeTag": current().recordChangeTag}
    body.update(extra)
    return alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": "Asks"},
                                                      "operations": [{"operationType": "update", "record": body}]})


check(set(ask().keys()) == {"shortGUID"}, "Bob's request answers its short GUID alone")
requesters = current().requesters or []
check(len(requesters) == 1 and requesters[0].userIdentity.lookupInfo.emailAddress == "bob@example.com",
      "Alice reads Bob in requesters (strict)")
update({"blockRequesters": [requesters[0].participantId]})
blocked = current().blocked or []
check(len(blocked) == 1 and not current().requesters, "blocked: listed in blocked (strict), no request")
update({"unblockIdentities": [blocked[0].userIdentity.userRecordName]})
check(not current().blocked, "unblocked by userRecordName")
ask()
update({"participants": [{"type": "USER", "permission": "READ_ONLY",
                          "userIdentity": {"lookupInfo": {"emailAddress": "bob@example.com"}}}]})
approved = [p for p in current().participants or [] if p.type == "USER"]
check(len(approved) == 1 and approved[0].isApprovedRequester is True and approved[0].acceptanceStatus == "INVITED",
      "adding Bob approved him: isApprovedRequester, INVITED (strict)")

# users/lookup/contacts (CloudKit JS 1.2.0's "my contacts"): an answer of user infos.
contacts = alice.public.raw_post("/users/lookup/contacts", {})
check(isinstance(contacts.get("users"), list), "users/lookup/contacts answers a list of users")

# 401 against 421: a wrong token is pyicloud's authentication error; an expired one a 421
# CloudKitApiError whose payload names the sign-in page.
session = requests.Session()
wrong = CloudKitContainerClient(BASE + "/private", session, {"ckAPIToken": API, "ckWebAuthToken": "A" * 120})
try:
    wrong.zones_list()
    check(False, "a wrong token is refused")
except CloudKitAuthError:
    check(True, "a wrong token is pyicloud's CloudKitAuthError (401)")
expired = CloudKitContainerClient(BASE + "/private", session, {"ckAPIToken": API, "ckWebAuthToken": os.environ["SHAREFLOW_EXPIRED"]})
try:
    expired.zones_list()
    check(False, "an expired token is refused")
except CloudKitApiError as e:
    payload = e.payload or {}
    check(payload.get("serverErrorCode") == "AUTHENTICATION_REQUIRED" and str(payload.get("redirectURL", "")).endswith("/signin"),
          "an expired token is a 421 naming the sign-in page")

print("pyicloud apple client flow ok")
