"""C5: axe-core (from the axe-playwright-python package, which bundles it) finds no serious or
critical violation on the console's main pages and the sign-in pages."""

from axe_playwright_python.sync_playwright import Axe

from conftest import BASE, unique
from helpers import make_record, open_database, open_record, share_record

axe = Axe()


def serious(page):
    results = axe.run(page)
    found = [v for v in results.response["violations"] if v.get("impact") in ("serious", "critical")]
    return [(v["id"], v["help"], [n["target"] for n in v["nodes"]][:3]) for v in found]


def test_no_serious_violation_on_the_main_pages(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    problems = {}
    for url in [BASE + "/console", BASE + "/signin"]:
        page.goto(url)
        problems[url] = serious(page)
    from conftest import sign_in
    sign_in(page)
    zone, record = unique("A11y"), unique("trip")
    make_record(zone, record)
    share_record(page, zone, record, "Accessible", invite="bob@example.com")
    problems["share"] = serious(page)
    for path in ["/console/accounts", "/console/decisions", "/console/faults", "/console/link?as=bob@example.com"]:
        page.goto(BASE + path)
        problems[path] = serious(page)
    open_database(page, "alice@example.com", "private")
    problems["database"] = serious(page)
    page.get_by_role("link", name=zone, exact=True).click()
    page.wait_for_url("**/console/zone?*")
    problems["zone"] = serious(page)
    open_record(page, "alice@example.com", "private", zone, record)
    problems["record"] = serious(page)
    page.goto(BASE + "/console/account?as=alice@example.com")
    problems["account"] = serious(page)
    context.close()
    bad = {k: v for k, v in problems.items() if v}
    assert not bad, bad
