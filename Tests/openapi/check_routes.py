"""docs/openapi.yaml against the server, both ways (OpenAPITests.swift):
every route `shareflow serve --routes` lists is documented, every documented route is one it
lists, and each documented route answers on a live server (no "no endpoint", no 5xx).

usage: check_routes.py OPENAPI_YAML ROUTES_FILE BASE_URL  (env SF_API, SF_WEB)"""

import json
import sys
import urllib.error
import urllib.request

import yaml

spec_path, routes_path, base = sys.argv[1:4]
spec = yaml.safe_load(open(spec_path, encoding="utf-8"))
documented = {
    f"{method.upper()} {path}"
    for path, item in spec["paths"].items()
    for method in item
    if method in ("get", "post", "put", "delete", "patch", "head", "options")
}
served = {line.strip() for line in open(routes_path, encoding="utf-8") if line.strip()}
problems = []
for route in sorted(served - documented):
    problems.append(f"served but not in docs/openapi.yaml: {route}")
for route in sorted(documented - served):
    problems.append(f"documented but not served: {route}")

import os
query = f"ckAPIToken={os.environ['SF_API']}&ckWebAuthToken={os.environ['SF_WEB']}"
for route in sorted(documented & served):
    method, template = route.split(" ", 1)
    path = (template.replace("{container}", "iCloud.test").replace("{environment}", "development")
            .replace("{database}", "private").replace("{shortGUID}", "x"))
    data = b"{}" if method == "POST" else None
    request = urllib.request.Request(base + path + "?" + query, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            # A stream (changes/stream) is read to its first frame, not to its end.
            if response.headers.get("Content-Type", "").startswith("text/event-stream"):
                status, body = response.status, response.readline()
            else:
                status, body = response.status, response.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    documented_statuses = spec["paths"][template][method.lower()]["responses"].keys()
    text = body.decode("utf-8", "replace")
    if status >= 500 or str(status) not in documented_statuses:
        problems.append(f"{route}: status {status} (documented: {', '.join(documented_statuses)}): {text[:200]}")
    if status == 404 and ("no endpoint" in text or "no route" in text):
        problems.append(f"{route}: the server has no such endpoint: {text[:200]}")
    print(f"{route}: {status}")

for p in problems:
    print("PROBLEM: " + p)
print(f"{len(served)} routes served, {len(documented)} documented, {len(problems)} problems")
sys.exit(1 if problems else 0)
