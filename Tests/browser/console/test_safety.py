"""C4 in a browser: hostile values render as text and run nothing; the console cannot be framed;
another site's form changes nothing; the session cookie is HttpOnly, SameSite=Strict, scoped."""

import os

import requests

from conftest import ADMIN, BASE, sign_in, unique
from helpers import make_record, open_record

CORPUS = ["<script>alert(1)</script>", "\"><img src=x onerror=alert(2)>", "javascript:alert(3)",
          "</textarea><svg onload=alert(4)>", "'onmouseover='alert(5)"]


def armed():
    r = requests.get(BASE + "/admin/1/faults", headers={"Authorization": "Bearer " + ADMIN}, timeout=30)
    return r.json()["rules"]


def test_hostile_fields_render_as_text(console):
    zone, record = unique("Xss"), unique("trip")
    make_record(zone, record, {"f%d" % i: {"value": v, "type": "STRING"} for i, v in enumerate(CORPUS)})
    open_record(console, "alice@example.com", "private", zone, record)
    for i, v in enumerate(CORPUS):
        row = console.get_by_role("row").filter(has=console.get_by_role("rowheader", name="f%d" % i, exact=True))
        assert v in row.inner_text()
    assert console.evaluate("document.scripts.length") == 1, "only console.js"
    assert console.locator("img, svg").count() == 0
    assert console.locator("a[href^='javascript']").count() == 0
    console.get_by_role("row").filter(has=console.get_by_role("rowheader", name="f4", exact=True)).hover()


def test_the_console_is_never_framed(browser, app_origins):
    listed, _ = app_origins
    context = browser.new_context()
    page = context.new_page()
    reports = []
    page.on("console", lambda m: reports.append(m.text))
    sign_in(page)
    page.goto(listed + "/frame")
    page.wait_for_timeout(1000)
    frame = page.frame_locator("#f")
    assert frame.get_by_text("Accounts").count() == 0, "the console rendered inside another site's frame"
    assert any("frame-ancestors" in r for r in reports), reports
    context.close()


def test_another_sites_form_changes_nothing(console, app_origins):
    _, other = app_origins
    before = len(armed())
    console.goto(other + "/")
    console.evaluate("""base => fetch(base + "/console/faults/arm", {method: "POST", mode: "no-cors", credentials: "include",
        headers: {"content-type": "application/x-www-form-urlencoded"},
        body: "operation=records%2Fmodify&fault=serviceUnavailable"}).catch(() => null)""", BASE)
    console.evaluate("""base => { const f = document.createElement("form"); f.method = "POST"; f.action = base + "/console/faults/arm";
        for (const [k, v] of [["operation", "records/modify"], ["fault", "zoneBusy"]]) {
          const i = document.createElement("input"); i.name = k; i.value = v; f.appendChild(i); }
        document.body.appendChild(f); f.submit(); }""", BASE)
    console.wait_for_load_state()
    assert len(armed()) == before


def test_the_session_cookie_is_scoped(console):
    cookies = {c["name"]: c for c in console.context.cookies()}
    session = cookies["sf_console"]
    assert session["httpOnly"] and session["sameSite"] == "Strict" and session["path"] == "/console", session
    assert session["expires"] == -1, "a session cookie: it ends with the browser"
    assert console.evaluate("document.cookie") == ""
