"""C2–C3: an accept the policy denies, shown with the policy, its reason and its file:line; then
the decision in the log, with its input."""

from conftest import BASE, flash, shot, unique
from helpers import make_record, open_link, share_record


def test_carols_accept_is_denied_with_its_policy(console):
    zone, record = unique("Gate"), unique("trip")
    make_record(zone, record)
    url = share_record(console, zone, record, "Gated", invite="carol@example.com")
    open_link(console, "carol@example.com", url)
    console.get_by_role("button", name="Accept").click()
    console.wait_for_url("**/console/link?*")
    text = flash(console)
    assert "gate/accept" in text, text
    assert "carol@example.com is blocked" in text, text
    assert "init.lua:" in text, text
    shot(console, "denied")
    # The decision, from the link in the message: denied only, at share.accept.
    console.locator(".denial").get_by_role("link").click()
    console.wait_for_url("**/console/decisions?*")
    first = console.locator("details.decision").first
    assert "share.accept" in first.inner_text() and "deny" in first.inner_text()
    first.locator("summary").click()
    assert "carol@example.com is blocked" in first.inner_text()
    assert "init.lua:" in first.inner_text()
    assert "\"point\"" in first.locator("pre").inner_text() or "caller" in first.locator("pre").inner_text()
    shot(console, "decisions")
