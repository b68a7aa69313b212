"""SPEC §13 wave 4: the page CloudKit JS's redirectURL opens. An app on a listed origin opens it
in a popup, the person types the operator's one-time code, and the page posts {ckSession} to the
opener; an unlisted opener gets nothing, and a code works once."""

import os

import requests

from conftest import BASE, shot

API = os.environ["SHAREFLOW_API"]
CODES = os.environ["SHAREFLOW_SIGNIN_CODES"].split(",")


def sign_in_from(page, origin, code, navigate=True):
    """The app at `origin` opens /signin in a popup; the code is typed there."""
    if navigate:
        page.goto(origin + "/")
    with page.expect_popup() as opened:
        page.evaluate("base => { window.open(base + '/signin', 'signin', 'width=480,height=640'); }", BASE)
    popup = opened.value
    popup.wait_for_load_state()
    popup.get_by_label("Sign-in code").fill(code)
    popup.get_by_role("button", name="Sign in").click()
    return popup


def test_the_code_hands_a_token_to_the_listed_app(page, app_origins):
    listed, _ = app_origins
    page.goto(BASE + "/signin")
    shot(page, "signin")
    sign_in_from(page, listed, CODES[0])
    page.wait_for_function("window.received.length > 0", timeout=10_000)
    message = page.evaluate("window.received[0]")
    assert message["origin"] == BASE.rstrip("/"), message
    token = message["data"]["ckSession"]
    assert len(token) >= 100
    # The token is the account's, in the code's container.
    r = requests.post(BASE + "/database/1/iCloud.test/development/public/users/current",
                      params={"ckAPIToken": API, "ckWebAuthToken": token}, json={}, timeout=30)
    if r.status_code == 405:
        r = requests.get(BASE + "/database/1/iCloud.test/development/public/users/current",
                         params={"ckAPIToken": API, "ckWebAuthToken": token}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json().get("userRecordName", "").startswith("_"), r.text
    # The same code again: refused, as a wrong one is.
    popup = sign_in_from(page, listed, CODES[0], navigate=False)
    assert "not valid" in popup.locator("main").inner_text().lower() or "expired" in popup.locator("main").inner_text().lower()
    assert page.evaluate("window.received.length") == 1


def test_an_unlisted_opener_gets_nothing(page, app_origins):
    _, unlisted = app_origins
    sign_in_from(page, unlisted, CODES[1])
    page.wait_for_timeout(1500)
    assert page.evaluate("window.received.length") == 0
