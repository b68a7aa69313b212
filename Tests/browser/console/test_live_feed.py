"""C3: a zone's feed as a participant sees it, live: a deletion appears as a tombstone."""

import re

from conftest import shot, unique
from helpers import alice, bob, delete_record, make_record
from flow_kit import share_with_bob
from helpers import open_database


def test_a_deletion_reaches_bobs_live_feed(console):
    zone, root, child = unique("Feed"), unique("trip"), unique("stop")
    made = make_record(zone, root, short_guid=True)
    answer = alice.private.raw_post("/records/modify", {
        "zoneID": {"zoneName": zone}, "atomic": True,
        "operations": [share_with_bob(root, made.recordChangeTag, "Feed")]})
    assert "serverErrorCode" not in answer["records"][0], answer
    guid = made.shortGUID
    accepted = bob.invites.accept([guid])["results"][0]
    assert accepted["participantStatus"] == "ACCEPTED", accepted
    open_database(console, "bob@example.com", "shared")
    row = console.get_by_role("row").filter(has_text=zone)
    row.get_by_role("link", name="live feed").click()
    console.wait_for_url("**/console/feed?*")
    console.wait_for_function("document.getElementById('feed-state').textContent === 'live'", timeout=10_000)
    # A child saved under the shared root, then deleted: both show, the deletion as a tombstone.
    alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": zone}, "operations": [{"operationType": "create", "record": {
        "recordName": child, "recordType": "Stop", "parent": {"recordName": root},
        "fields": {"note": {"value": "<img src=x onerror=alert(1)>", "type": "STRING"}}}}]})
    console.locator("#feed li").filter(has_text=child).first.wait_for(timeout=10_000)
    delete_record(zone, child)
    tombstone = console.locator("#feed li.deleted").filter(has_text=child)
    tombstone.wait_for(timeout=10_000)
    assert re.search(r"deleted\s+" + re.escape(child), tombstone.inner_text())
    shot(console, "feed")
