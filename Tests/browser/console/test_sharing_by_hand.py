"""C2: sharing by hand, each step an engine call as the account acting."""

from conftest import BASE, flash, shot, unique
from helpers import make_record, open_database, open_link, open_record, share_record


def test_alice_shares_bob_accepts_alice_removes(console):
    zone, record = unique("Hand"), unique("trip")
    make_record(zone, record)
    url = share_record(console, zone, record, "Lisbon trip", invite="bob@example.com")
    assert "Invited bob@example.com (readOnly)" in flash(console)
    bob_row = console.get_by_role("row").filter(has_text="bob@example.com")
    assert "readOnly" in bob_row.inner_text() and "pending" in bob_row.inner_text()
    # Read-write.
    bob_row.get_by_label("Permission").select_option("readWrite")
    bob_row.get_by_role("button", name="Change").click()
    console.wait_for_url("**/console/share?*")
    assert "to readWrite" in flash(console)
    shot(console, "share")
    # Bob opens the link and accepts; the record is then in his shared database.
    open_link(console, "bob@example.com", url)
    assert "pending" in console.get_by_role("row").filter(has_text="Your status").inner_text()
    console.get_by_role("button", name="Accept").click()
    console.wait_for_url("**/console/link?*")
    assert "Accepted" in flash(console)
    open_record(console, "bob@example.com", "shared", zone, record)
    assert "Lisbon" in console.get_by_role("row").filter(has_text="title").inner_text()
    # Alice removes him: his shared database no longer has the zone (R12).
    open_record(console, "alice@example.com", "private", zone, record)
    console.get_by_role("row").filter(has_text="Share").get_by_role("link").first.click()
    console.wait_for_url("**/console/share?*")
    console.get_by_role("row").filter(has_text="bob@example.com").get_by_role("button", name="Remove").click()
    console.wait_for_url("**/console/share?*")
    assert "Removed bob@example.com" in flash(console)
    open_database(console, "bob@example.com", "shared")
    assert console.get_by_role("link", name=zone, exact=True).count() == 0


def test_carol_requests_and_alice_decides(console):
    zone, record = unique("Ask"), unique("trip")
    make_record(zone, record)
    url = share_record(console, zone, record, "Open to requests")
    console.get_by_label("Allows access requests").check()
    console.get_by_role("button", name="Save settings").click()
    console.wait_for_url("**/console/share?*")
    share_page = console.url
    # Carol cannot see the share (R16) but may ask.
    open_link(console, "carol@example.com", url)
    console.get_by_role("button", name="Request access").click()
    console.wait_for_url("**/console/link?*")
    assert "Access requested" in flash(console)
    console.goto(share_page)
    row = console.get_by_role("row").filter(has_text="carol@example.com")
    row.get_by_role("button", name="Block").click()
    console.wait_for_url("**/console/share?*")
    assert "Blocked carol@example.com" in flash(console)
    # Blocked: she may not ask again (R41).
    open_link(console, "carol@example.com", url)
    console.get_by_role("button", name="Request access").click()
    console.wait_for_url("**/console/link?*")
    console.goto(share_page)
    assert console.get_by_role("row").filter(has_text="carol@example.com").filter(has_text="Unblock").count() == 1
    console.get_by_role("row").filter(has_text="carol@example.com").get_by_role("button", name="Unblock").click()
    console.wait_for_url("**/console/share?*")
    assert "Unblocked" in flash(console)
    # Asks again; approved, she can accept.
    open_link(console, "carol@example.com", url)
    console.get_by_role("button", name="Request access").click()
    console.goto(share_page)
    console.get_by_role("row").filter(has_text="carol@example.com").get_by_role("button", name="Approve").click()
    console.wait_for_url("**/console/share?*")
    assert "Approved carol@example.com" in flash(console)
    assert "approved requester" in console.get_by_role("row").filter(has_text="carol@example.com").first.inner_text()
