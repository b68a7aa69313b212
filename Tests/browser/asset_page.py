"""SPEC §19 A5–A6 in a real browser: a page on another origin, in Debian's chromium driven by
Playwright (PyPI; never `playwright install`), saves a binary file as CloudKit JS 1.2.0 does —
`assets/upload` without a zoneID or recordName, the Blob POSTed with its own type (a preflighted
CORS request), the `singleFile` saved untyped in `records/modify` — then reads it back through
the lookup's `downloadURL`, whole and by a range. A page on an origin the server does not list
cannot read the answers.

Run by Tests/EndToEndTests/BrowserTests.swift with SHAREFLOW_BASE (the server, started with
--cors-origin for the page's origin), SHAREFLOW_API, SHAREFLOW_ALICE, SHAREFLOW_CHROMIUM and
SHAREFLOW_PAGE_PORT / SHAREFLOW_OTHER_PORT (two free loopback ports for the pages)."""

import http.server
import json
import os
import sys
import threading

from playwright.sync_api import sync_playwright

BASE = os.environ["SHAREFLOW_BASE"]
API = os.environ["SHAREFLOW_API"]
ALICE = os.environ["SHAREFLOW_ALICE"]


def check(cond, what):
    if not cond:
        print("FAILED: " + what)
        sys.exit(1)
    print("ok: " + what)


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<!doctype html><html><head><title>assets</title></head><body>app</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve(port):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# What the page runs: CloudKit JS 1.2.0's request shapes (WEB-SERVICES.md §3), by hand.
SCRIPT = """async ({base, api, web}) => {
  const db = base + "/database/1/iCloud.test/development/private/";
  const q = "?ckAPIToken=" + api + "&ckWebAuthToken=" + encodeURIComponent(web);
  const post = async (path, body) => {
    const r = await fetch(db + path + q, {method: "POST", body: JSON.stringify(body), headers: {"content-type": "text/plain"}});
    return {status: r.status, json: await r.json()};
  };
  const bytes = new Uint8Array(200000);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + (i >> 9)) & 255;
  const blob = new Blob([bytes], {type: "image/png"});
  const reserved = await post("assets/upload", {tokens: [{recordType: "Photo", fieldName: "image"}]});
  const token = reserved.json.tokens[0];
  const up = await fetch(token.url, {method: "POST", body: blob});
  const single = (await up.json()).singleFile;
  const saved = await post("records/modify", {operations: [{operationType: "create", record: {
    recordName: token.recordName, recordType: "Photo", fields: {image: {value: single}, title: {value: "from a page"}}}}]});
  const found = await post("records/lookup", {records: [{recordName: token.recordName}]});
  const asset = found.json.records[0].fields.image;
  const url = asset.value.downloadURL.replace("${f}", "photo.png");
  const whole = new Uint8Array(await (await fetch(url)).arrayBuffer());
  let same = whole.length === bytes.length;
  for (let i = 0; same && i < bytes.length; i++) same = whole[i] === bytes[i];
  const part = await fetch(url, {headers: {range: "bytes=100-199"}});
  const partBytes = new Uint8Array(await part.arrayBuffer());
  let partSame = partBytes.length === 100;
  for (let i = 0; partSame && i < 100; i++) partSame = partBytes[i] === bytes[100 + i];
  return {reserved: reserved.status, recordName: token.recordName, uploadStatus: up.status, single,
          saved: saved.status, savedRecord: saved.json.records[0], type: asset.type, size: asset.value.size,
          same, partStatus: part.status, partSame, contentRange: part.headers.get("content-range")};
}"""

page_port = int(os.environ["SHAREFLOW_PAGE_PORT"])
other_port = int(os.environ["SHAREFLOW_OTHER_PORT"])
servers = [serve(page_port), serve(other_port)]

with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=os.environ["SHAREFLOW_CHROMIUM"], headless=True,
                                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
    page = browser.new_page()
    page.goto("http://127.0.0.1:%d/" % page_port)
    out = page.evaluate(SCRIPT, {"base": BASE, "api": API, "web": ALICE})
    check(out["reserved"] == 200 and out["recordName"], "assets/upload without zoneID or recordName answers a recordName")
    check(out["uploadStatus"] == 200 and out["single"]["size"] == 200000 and out["single"]["receipt"], "the Blob's POST (preflighted) gives a receipt")
    check(out["saved"] == 200 and "serverErrorCode" not in out["savedRecord"], "the singleFile saved untyped: " + json.dumps(out["savedRecord"])[:300])
    check(out["type"] == "ASSETID" and out["size"] == 200000, "the lookup gives an ASSETID of the size uploaded")
    check(out["same"], "the bytes read back through downloadURL are the bytes uploaded")
    check(out["partStatus"] == 206 and out["partSame"], "a range reads back its bytes")
    check(out["contentRange"] == "bytes 100-199/200000", "Content-Range is exposed to the page")

    # An origin the server does not list reads nothing (the browser keeps the answer from it).
    stranger = browser.new_page()
    stranger.goto("http://127.0.0.1:%d/" % other_port)
    refused = stranger.evaluate("""async ({base, api, web}) => {
      try {
        await fetch(base + "/database/1/iCloud.test/development/private/assets/upload?ckAPIToken=" + api + "&ckWebAuthToken=" + encodeURIComponent(web),
                    {method: "POST", body: JSON.stringify({tokens: [{fieldName: "image"}]}), headers: {"content-type": "text/plain"}});
        return "read";
      } catch (e) { return "refused"; }
    }""", {"base": BASE, "api": API, "web": ALICE})
    check(refused == "refused", "a page on an origin not listed cannot read the answer")
    browser.close()

for s in servers:
    s.shutdown()
print("browser asset flow ok")
