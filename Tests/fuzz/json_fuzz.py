"""Raw fuzz of the server's JSON decoding (ServeAuthTests): bodies that are not what any schema
describes, so schemathesis never sends them. From a few valid requests, each case mutates the
bytes: truncation, byte flips, invalid UTF-8, deep nesting, huge and odd numbers, duplicated
keys, NUL, lone surrogates. Every answer must be JSON with a 200 or a 4xx; a 5xx, a non-JSON
answer or a dropped connection fails.

usage: json_fuzz.py BASE CASES SEED   (env SF_API, SF_WEB)"""

import json
import os
import random
import sys

import requests

base, cases, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
db = base + "/database/1/iCloud.test/development"
params = {"ckAPIToken": os.environ["SF_API"], "ckWebAuthToken": os.environ["SF_WEB"]}

seeds = [
    ("private/records/modify", {"zoneID": {"zoneName": "Z"}, "operations": [{"operationType": "create", "record": {
        "recordName": "r1", "recordType": "T", "fields": {"n": {"value": 1, "type": "INT64"}, "s": {"value": "x"},
                                                          "l": {"value": [1.5, 2.5], "type": "DOUBLE_LIST"}}}}]}),
    ("private/records/lookup", {"records": [{"recordName": "r1"}], "zoneID": {"zoneName": "Z"}}),
    ("private/records/query", {"query": {"recordType": "T", "filterBy": [{"comparator": "EQUALS", "fieldName": "n",
                                                                          "fieldValue": {"value": 1}}]}, "resultsLimit": 5}),
    ("private/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Z"}}}]}),
    ("private/zones/lookup", {"zones": [{"zoneName": "Z"}]}),
    ("public/records/resolve", {"shortGUIDs": [{"value": "abc", "shouldFetchRootRecord": True}]}),
    ("public/users/discover", {"lookupInfos": [{"emailAddress": "bob@example.com"}]}),
    ("public/users/lookup/email", {"users": [{"emailAddress": "bob@example.com"}]}),
]

ODD_NUMBERS = [b"1e400", b"-1e400", b"18446744073709551616", b"-9223372036854775809", b"9223372036854775807",
               b"0.0000000000000000000000000000001", b"-0", b"1" * 400, b"NaN", b"Infinity", b"0x10", b"01"]


def mutate(body: bytes) -> bytes:
    kind = rng.randrange(10)
    if kind == 0:  # truncated
        return body[: rng.randrange(len(body))]
    if kind == 1:  # flipped bytes
        b = bytearray(body)
        for _ in range(rng.randrange(1, 6)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if kind == 2:  # invalid UTF-8 inside a string
        i = body.find(b'"', rng.randrange(len(body)))
        return body if i < 0 else body[: i + 1] + rng.choice([b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]) + body[i + 1:]
    if kind == 3:  # deep nesting in place of a value
        depth = rng.choice([100, 1000, 10000, 100000])
        opener, closer = rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
        return body.replace(b"1", opener * depth + b"1" + closer * depth, 1)
    if kind == 4:  # odd numbers
        return body.replace(b"1", rng.choice(ODD_NUMBERS), 1)
    if kind == 5:  # duplicated keys
        return body.replace(b"{", b'{"operations":7,"records":"x","query":null,', 1)
    if kind == 6:  # NUL and escapes
        return body.replace(b'"r1"', rng.choice([b'"r\\u0000x"', b'"\\ud800"', b'"\\u0000"', b'"r1\x00"']), 1)
    if kind == 7:  # whole-body oddities
        return rng.choice([b"", b"null", b"[]", b'"x"', b"{}" * 1000, b"\xef\xbb\xbf" + body, body + b"garbage", b" " * 10000])
    if kind == 8:  # a value replaced by another type
        return body.replace(b'"T"', rng.choice([b"7", b"null", b"[]", b"{}", b"true", b'"' + b"x" * 70000 + b'"']), 1)
    return body  # the valid body itself, now and then


failures = []
counts = {}
session = requests.Session()
for n in range(cases):
    path, obj = rng.choice(seeds)
    body = mutate(json.dumps(obj).encode())
    try:
        r = session.post(f"{db}/{path}", params=params, data=body, headers={"Content-Type": "text/plain"}, timeout=60)
    except requests.RequestException as e:
        failures.append(f"case {n} {path}: no answer ({e}): {body[:120]!r}")
        session = requests.Session()
        continue
    counts[r.status_code] = counts.get(r.status_code, 0) + 1
    try:
        answer = r.json()
    except ValueError:
        failures.append(f"case {n} {path}: not JSON ({r.status_code}): {r.text[:120]!r} for {body[:120]!r}")
        continue
    if r.status_code >= 500 or (r.status_code != 200 and "serverErrorCode" not in answer):
        failures.append(f"case {n} {path}: {r.status_code} {json.dumps(answer)[:200]} for {body[:120]!r}")

print("statuses: " + json.dumps(dict(sorted(counts.items()))))
for f in failures[:10]:
    print("FAIL: " + f)
print(f"{cases} cases, {len(failures)} failures")
sys.exit(1 if failures else 0)
