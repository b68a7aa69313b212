"""The sharing flow of SPEC §13 driven by an independent client: pyicloud (PyPI), its typed
CloudKit clients pointed at `shareflow serve`, in strict mode (PYICLOUD_CK_EXTRA=forbid), so a
record, participant, identity or zone carrying a key pyicloud does not model fails.

Run by Tests/EndToEndTests/PyiCloudTests.swift with SHAREFLOW_BASE (the server), SHAREFLOW_API
(the API token) and SHAREFLOW_ALICE, SHAREFLOW_BOB, SHAREFLOW_CAROL (web auth tokens).
Where pyicloud has no call for an endpoint (zones/modify, a share's create, users/*), its raw
request method is used and the answer validated with its models."""

import os

from pydantic import ValidationError
from pyicloud.common.cloudkit.client import CloudKitApiError
from pyicloud.common.cloudkit.models import (
    CKErrorItem,
    CKModifyOperation,
    CKQueryObject,
    CKRecord,
    CKUserIdentity,
    CKWriteRecord,
    CKZoneIDReq,
)

from flow_kit import STRICT, User, check, share_with_bob  # the shared harness


def strict(model, data):
    return model.model_validate(data, extra=STRICT)


def api_error(fn):
    """The payload of the CloudKitApiError `fn` raises (None when it raises none)."""
    try:
        fn()
    except CloudKitApiError as e:
        return e.payload
    return None


alice = User(os.environ["SHAREFLOW_ALICE"])
bob = User(os.environ["SHAREFLOW_BOB"])
carol = User(os.environ["SHAREFLOW_CAROL"])

# Identities (no typed call: raw, validated as pyicloud's CKUserIdentity).
me = alice.public.raw_post("/users/caller", {})
ident = strict(CKUserIdentity, me["users"][0])
check(ident.lookupInfo.emailAddress == "alice@example.com", "users/caller names Alice")
owner = ident.userRecordName

# A zone (raw: pyicloud has no zones/modify), listed by its typed zones_list (POST {}).
alice.private.raw_post("/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Trips"}}}]})
zones = alice.private.zones_list()
check("Trips" in [z.zoneID.zoneName for z in zones.zones], "zones_list shows the new zone")
trips = CKZoneIDReq(zoneName="Trips")

# The root, with createShortGUID (a key pyicloud's write model carries through).
made = alice.private.modify(
    operations=[CKModifyOperation(operationType="create", record=CKWriteRecord(
        recordName="lisbon", recordType="Trip", createShortGUID=True,
        fields={"title": {"value": "Lisbon", "type": "STRING"}, "days": {"value": 5, "type": "INT64"}}))],
    zone_id=trips, atomic=True)
root = made.records[0]
check(isinstance(root, CKRecord) and root.shortGUID, "the root has a short GUID")
guid = root.shortGUID

# Its share, Apple's second request: forRecord with the root's change tag, Bob by lookupInfo.
answer = alice.private.raw_post("/records/modify", {
    "zoneID": {"zoneName": "Trips"}, "atomic": True,
    "operations": [share_with_bob("lisbon", root.recordChangeTag, "Lisbon")]})
share = strict(CKRecord, answer["records"][0])
# Strict mode is on: a key pyicloud does not model fails validation.
try:
    strict(CKRecord, dict(answer["records"][0], unmodelled=1))
    check(False, "strict mode refuses unknown keys")
except ValidationError:
    check(True, "strict mode refuses unknown keys")
check(share.shortGUID == guid, "the share carries the root's short GUID")
check(sorted(p.type for p in share.participants) == ["OWNER", "USER"], "owner and Bob on the share")
check(share.owner.userIdentity.userRecordName == owner, "the share names its owner")

# Bob resolves (a ShortGUID Result: its share, owner identity and root checked strictly).
resolved = bob.invites.resolve([guid])["results"][0]
check(resolved["participantStatus"] == "INVITED", "Bob is invited")
strict(CKRecord, resolved["share"])
strict(CKUserIdentity, resolved["ownerIdentity"])
check(resolved["zoneID"]["zoneName"] == "Trips" and resolved["rootRecordName"] == "lisbon", "resolve names zone and root")

accepted = bob.invites.accept([guid])["results"][0]
check(accepted["participantStatus"] == "ACCEPTED", "Bob accepted")

# The shared record in Bob's shared database (typed lookup, strict).
theirs = CKZoneIDReq(zoneName="Trips", ownerRecordName=owner)
found = bob.shared.lookup(["lisbon"], zone_id=theirs).records[0]
check(isinstance(found, CKRecord) and found.fields.get_value("title") == "Lisbon", "Bob reads the shared record")

# Bob (READ_WRITE) updates with the right change tag; a stale copy is CONFLICT.
def update(tag, title):
    return bob.shared.modify(operations=[CKModifyOperation(operationType="update", record=CKWriteRecord(
        recordName="lisbon", recordType="Trip", recordChangeTag=tag,
        fields={"title": {"value": title, "type": "STRING"}}))], zone_id=theirs)

newer = update(found.recordChangeTag, "Lisbon in May").records[0]
check(newer.recordChangeTag != found.recordChangeTag, "Bob's update took a new change tag")
payload = api_error(lambda: update(found.recordChangeTag, "Lisbon in June"))
check(payload is not None and payload["records"][0]["serverErrorCode"] == "CONFLICT", "a stale update is CONFLICT")

# Alice's typed query sees Bob's change.
rows = alice.private.query(query=CKQueryObject(recordType="Trip"), zone_id=trips).records
check([r.fields.get_value("title") for r in rows if isinstance(r, CKRecord)] == ["Lisbon in May"], "Alice's query sees Bob's edit")

# Carol, a stranger: NOT_FOUND from resolve, ZONE_NOT_FOUND from her shared database.
stranger = carol.invites.resolve([guid])["results"][0]
check(stranger.get("serverErrorCode") == "NOT_FOUND", "a stranger's resolve is NOT_FOUND")
# A per-record error is an item pyicloud's strict model accepts (CKErrorItem: no uuid, no retryAfter).
rows = carol.shared.lookup(["lisbon"], zone_id=theirs).records
check(len(rows) == 1 and isinstance(rows[0], CKErrorItem) and rows[0].serverErrorCode == "ZONE_NOT_FOUND"
      and rows[0].recordName == "lisbon", "a stranger's lookup is ZONE_NOT_FOUND, as a strict CKErrorItem")

print("pyicloud sharing flow ok")
