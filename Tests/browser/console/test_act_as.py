"""C1: acting as an account shows what its app would see."""

from conftest import BASE, shot, unique
from helpers import make_record, open_database, open_record


def test_alice_sees_her_record_and_bob_does_not(console):
    zone, record = unique("Act"), unique("trip")
    make_record(zone, record, {"title": {"value": "Lisbon", "type": "STRING"}, "days": {"value": 5, "type": "INT64"}})
    console.goto(BASE + "/console/accounts")
    assert console.get_by_role("row").filter(has_text="bob@example.com").count() == 1
    shot(console, "accounts")
    open_record(console, "alice@example.com", "private", zone, record)
    assert "Acting as" in console.locator(".acting").inner_text()
    fields = console.get_by_role("row").filter(has_text="title")
    assert "Lisbon" in fields.inner_text()
    assert "5" in console.get_by_role("row").filter(has_text="days").inner_text()
    shot(console, "record")
    # Bob: not in his private database, nothing shared with him (R12).
    open_database(console, "bob@example.com", "private")
    assert console.get_by_role("link", name=zone, exact=True).count() == 0
    open_database(console, "bob@example.com", "shared")
    assert console.get_by_role("link", name=zone, exact=True).count() == 0
