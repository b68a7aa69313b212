"""The console's browser tests (SPEC §21 C5): Debian's chromium under Playwright (PyPI, through
executable_path; no browser is ever downloaded), against a `shareflow serve --console` that
Tests/EndToEndTests/WebConsoleBrowserTests.swift starts with Alice, Bob and Carol, an admin token,
sign-in codes and a plugin whose policy denies Carol's accepts. A test fails on any dialog (an
injected script ran) and on any Content-Security-Policy report on the console's own pages."""

import http.server
import os
import sys
import threading
import uuid

import pytest
from playwright.sync_api import sync_playwright

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "pyicloud"))

BASE = os.environ["SHAREFLOW_BASE"]
ADMIN = os.environ["SHAREFLOW_ADMIN"]
PAGE_PORT = int(os.environ["SHAREFLOW_PAGE_PORT"])
OTHER_PORT = int(os.environ["SHAREFLOW_OTHER_PORT"])
SCREENSHOTS = os.environ.get("SHAREFLOW_SCREENSHOTS", "")
CONTAINER = "iCloud.test"

# A page on another origin, as an app's would be: it keeps every message it is sent.
APP_PAGE = b"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>An app</title></head>
<body><main><h1>An app</h1></main><script>
window.received = [];
window.addEventListener("message", function (e) { window.received.push({origin: e.origin, data: e.data}); });
</script></body></html>"""


class AppPage(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the standard library's name
        body = APP_PAGE
        if self.path.startswith("/frame"):
            body = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Frame</title></head><body>"
                    "<iframe id=\"f\" title=\"console\" src=\"%s/console/accounts\"></iframe></body></html>" % BASE).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _serve(port):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), AppPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="session")
def app_origins():
    servers = [_serve(PAGE_PORT), _serve(OTHER_PORT)]
    yield "http://127.0.0.1:%d" % PAGE_PORT, "http://127.0.0.1:%d" % OTHER_PORT
    for s in servers:
        s.shutdown()


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=os.environ["SHAREFLOW_CHROMIUM"], headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    dialogs, violations = [], []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    yield page
    context.close()
    assert not dialogs, "a script ran on a console page: %r" % dialogs
    assert not violations, "the console's own pages broke their policy: %r" % violations


def sign_in(page):
    """Signs the page's browser in to the console with the admin token."""
    page.goto(BASE + "/console")
    page.get_by_label("Admin token").fill(ADMIN)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/accounts")
    return page


@pytest.fixture
def console(page):
    return sign_in(page)


def shot(page, name):
    """A screenshot for the README (make screenshots), when asked for."""
    if SCREENSHOTS:
        os.makedirs(SCREENSHOTS, exist_ok=True)
        page.screenshot(path=os.path.join(SCREENSHOTS, name + ".png"))


def unique(prefix):
    return prefix + "-" + uuid.uuid4().hex[:8]


def flash(page):
    """The last action's message."""
    return page.locator(".flash").first.inner_text()
