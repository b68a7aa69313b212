"""Assets (SPEC §19 A3, A6) driven by pyicloud (PyPI) in strict mode (PYICLOUD_CK_EXTRA=forbid),
over https: `upload_asset` (which refuses any URL that is not https), the receipt saved as an
`ASSETID` field, a lookup's `downloadURL` read back byte-exact (and by ranges), a participant
who downloads and a stranger who cannot, a receipt used once, guessed and altered URLs.

Run by Tests/EndToEndTests/ServeTLSTests.swift with SHAREFLOW_BASE, SHAREFLOW_API,
SHAREFLOW_ALICE, SHAREFLOW_BOB, SHAREFLOW_CAROL and REQUESTS_CA_BUNDLE (the test CA)."""

import hashlib
import os

import requests
from pyicloud.common.cloudkit.client import CloudKitApiError
from pyicloud.common.cloudkit.models import CKModifyOperation, CKRecord, CKWriteRecord, CKZoneIDReq

from flow_kit import User, check, share_with_bob  # the shared harness

alice = User(os.environ["SHAREFLOW_ALICE"])
bob = User(os.environ["SHAREFLOW_BOB"])
carol = User(os.environ["SHAREFLOW_CAROL"])

owner = alice.public.raw_post("/users/caller", {})["users"][0]["userRecordName"]
alice.private.raw_post("/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Photos"}}}]})
photos = CKZoneIDReq(zoneName="Photos")

# Every byte value, NULs and invalid UTF-8 included, past one 64 KiB part.
data = bytes((i * 7919 + (i >> 8)) % 256 for i in range(300_000))
token = alice.private.upload_asset(record_type="Photo", field_name="image", record_name="p1", data=data, zone_id=photos)
check(token.fileChecksum == hashlib.sha256(data).hexdigest() and token.size == len(data), "the upload's receipt names the bytes")
value = token.model_dump(mode="json", exclude_none=True)
check("receipt" in value, "the receipt travels with the token (an extra key pyicloud keeps)")

made = alice.private.modify(
    operations=[CKModifyOperation(operationType="create", record=CKWriteRecord(
        recordName="p1", recordType="Photo",
        fields={"image": {"type": "ASSETID", "value": value}, "title": {"value": "Sunset", "type": "STRING"}}))],
    zone_id=photos, atomic=True)
saved = made.records[0]
check(isinstance(saved, CKRecord), "the record is saved with its asset")
check(saved.fields.get_field("image").value.downloadURL.startswith("https://"), "the save answers with a download URL")

found = alice.private.lookup(["p1"], zone_id=photos).records[0]
asset = found.fields.get_field("image").value
check(asset.size == len(data) and asset.fileChecksum == token.fileChecksum, "a lookup gives the asset's checksum and size")
url = asset.downloadURL
check("${f}" in url, "the URL ends in Apple's filename slot")
check(alice.private.download_asset_bytes(url) == data, "the bytes download byte-exact")
named = url.replace("${f}", "sunset.jpg")
check(alice.private.download_asset_bytes(named) == data, "any last segment is served")
check(b"".join(alice.private.download_asset_stream(url, chunk_size=65536)) == data, "streamed in 64 KiB chunks")
session = requests.Session()
part = session.get(url, headers={"Range": "bytes=1000-1999"})
check(part.status_code == 206 and part.content == data[1000:2000], "a Range is honoured (206)")
check(part.headers["Content-Range"] == "bytes 1000-1999/%d" % len(data), "with its Content-Range")
tail = session.get(url, headers={"Range": "bytes=-10"})
check(tail.status_code == 206 and tail.content == data[-10:], "a suffix range gives the last bytes")
check(session.get(url, headers={"Range": "bytes=%d-" % len(data)}).status_code == 416, "a range past the end is 416")

# A receipt is used once.
try:
    alice.private.modify(operations=[CKModifyOperation(operationType="create", record=CKWriteRecord(
        recordName="p2", recordType="Photo", fields={"image": {"type": "ASSETID", "value": value}}))], zone_id=photos)
    check(False, "a receipt used twice is refused")
except CloudKitApiError as e:
    check("BAD_REQUEST" in str(getattr(e, "payload", "")) or "receipt" in str(e), "a receipt used twice is refused")

# A read value sent back unchanged keeps the asset; one sent to another record does not.
again = {"fileChecksum": asset.fileChecksum, "size": asset.size, "downloadURL": url}
kept = alice.private.modify(operations=[CKModifyOperation(operationType="update", record=CKWriteRecord(
    recordName="p1", recordType="Photo", recordChangeTag=found.recordChangeTag,
    fields={"image": {"type": "ASSETID", "value": again}, "title": {"value": "Sunset 2", "type": "STRING"}}))], zone_id=photos)
check(kept.records[0].fields.get_field("image").value.fileChecksum == token.fileChecksum, "a read value sent back keeps its asset")
try:
    alice.private.modify(operations=[CKModifyOperation(operationType="create", record=CKWriteRecord(
        recordName="p3", recordType="Photo", fields={"image": {"type": "ASSETID", "value": again}}))], zone_id=photos)
    check(False, "a checksum alone attaches nothing")
except CloudKitApiError:
    check(True, "a checksum alone attaches nothing")

# Shared with Bob: he downloads; Carol, a stranger, gets nothing.
current = alice.private.lookup(["p1"], zone_id=photos).records[0]
alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": "Photos"}, "atomic": True,
                                           "operations": [share_with_bob("p1", current.recordChangeTag, "Sunset")]})
guid = alice.private.raw_post("/records/lookup", {"zoneID": {"zoneName": "Photos"}, "records": [{"recordName": "share-p1"}]})["records"][0]["shortGUID"]
bob.invites.accept([guid])
theirs = CKZoneIDReq(zoneName="Photos", ownerRecordName=owner)
bobs = bob.shared.lookup(["p1"], zone_id=theirs).records[0]
bob_url = bobs.fields.get_field("image").value.downloadURL
check(bob.shared.download_asset_bytes(bob_url) == data, "the participant downloads the asset")
carols = carol.shared.raw_post("/records/lookup", {"zoneID": {"zoneName": "Photos", "ownerRecordName": owner}, "records": [{"recordName": "p1"}]})
check("downloadURL" not in str(carols) and carols["records"][0].get("serverErrorCode") in ("NOT_FOUND", "ZONE_NOT_FOUND"), "a stranger's lookup gives no URL " + str(carols)[:300])

# Guessed and altered URLs are 404, as are upload URLs used or never made.
prefix, token_part = url.split("/assets/1/download/")[0], url.split("/assets/1/download/")[1].split("/")[0]
check(session.get(prefix + "/assets/1/download/" + "A" * len(token_part) + "/x").status_code == 404, "a guessed URL is 404")
flipped = token_part[:20] + ("A" if token_part[20] != "A" else "B") + token_part[21:]
check(session.get(prefix + "/assets/1/download/" + flipped + "/x").status_code == 404, "an altered URL is 404")
check(session.post(prefix + "/assets/1/upload/nothing", data=b"x").status_code == 404, "an upload URL never made is 404")

# Alice removes Bob: his URL stops with his access.
share = alice.private.raw_post("/records/lookup", {"zoneID": {"zoneName": "Photos"}, "records": [{"recordName": "share-p1"}]})["records"][0]
bob_entry = [p for p in share["participants"] if p["type"] != "OWNER"][0]
alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": "Photos"}, "operations": [{"operationType": "update", "record": {
    "recordName": "share-p1", "recordType": "cloudkit.share", "recordChangeTag": share["recordChangeTag"],
    "participants": [p for p in share["participants"] if p["participantId"] != bob_entry["participantId"]]}}]})
check(session.get(bob_url).status_code == 404, "a removed participant's URL is 404")
check(session.get(url).status_code == 200, "the owner's URL still serves")

print("pyicloud asset flow ok")
