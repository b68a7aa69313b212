"""What the pyicloud flows share (sharing_flow.py, sync_flow.py): the server's database path, the
API token, one person's clients, the request that shares a record with Bob, and the check that
prints each step and stops at the first failure. Run with SHAREFLOW_BASE and SHAREFLOW_API set,
PYICLOUD_CK_EXTRA=forbid."""

import os
import sys

import requests
from pyicloud.common.cloudkit.client import CloudKitContainerClient
from pyicloud.services.invites.client import CloudKitInvitesClient

STRICT = "forbid"
assert os.environ.get("PYICLOUD_CK_EXTRA") == STRICT, "run with PYICLOUD_CK_EXTRA=forbid"

BASE = os.environ["SHAREFLOW_BASE"] + "/database/1/iCloud.test/development"
API = os.environ["SHAREFLOW_API"]


class User:
    """One person's pyicloud clients: private, shared and public databases, and invites."""

    def __init__(self, token):
        session = requests.Session()
        params = {"ckAPIToken": API, "ckWebAuthToken": token}
        self.private = CloudKitContainerClient(BASE + "/private", session, params)
        self.shared = CloudKitContainerClient(BASE + "/shared", session, params)
        self.public = CloudKitContainerClient(BASE + "/public", session, params)
        self.invites = CloudKitInvitesClient(BASE, session, params)


def check(cond, what):
    if not cond:
        print("FAILED: " + what)
        sys.exit(1)
    print("ok: " + what)


def share_with_bob(root, change_tag, title):
    """The records/modify operation that makes share "share-<root>" of record `root` (at its
    `change_tag`), titled `title`, Bob invited read-write by his email: pyicloud has no call for
    a share's create, so each flow sends it raw, as Apple's clients do."""
    return {"operationType": "create", "record": {
        "recordName": "share-" + root, "recordType": "cloudkit.share",
        "fields": {"cloudkit.title": {"value": title, "type": "STRING"}},
        "forRecord": {"recordName": root, "recordChangeTag": change_tag},
        "publicPermission": "NONE",
        "participants": [{"type": "USER", "permission": "READ_WRITE", "acceptanceStatus": "INVITED",
                          "userIdentity": {"lookupInfo": {"emailAddress": "bob@example.com"}}}]}}
