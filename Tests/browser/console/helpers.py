"""What several console tests do: make a record as Alice through pyicloud, and walk the
console's pages as a person would (links and forms, never URLs typed from the tests' knowledge)."""

import os
import urllib.parse

from conftest import BASE, CONTAINER
from flow_kit import User
from pyicloud.common.cloudkit.models import CKModifyOperation, CKWriteRecord, CKZoneIDReq

alice = User(os.environ["SHAREFLOW_ALICE"])
bob = User(os.environ["SHAREFLOW_BOB"])


def make_record(zone, name, fields=None, short_guid=False):
    """Alice's zone `zone` with record `name` (a Trip), made over HTTP as her app would."""
    alice.private.raw_post("/zones/modify", {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": zone}}}]})
    fields = fields or {"title": {"value": "Lisbon", "type": "STRING"}}
    made = alice.private.modify(
        operations=[CKModifyOperation(operationType="create", record=CKWriteRecord(recordName=name, recordType="Trip", fields=fields,
                                                                                  createShortGUID=short_guid or None))],
        zone_id=CKZoneIDReq(zoneName=zone), atomic=True)
    return made.records[0]


def delete_record(zone, name):
    alice.private.raw_post("/records/modify", {"zoneID": {"zoneName": zone},
                                               "operations": [{"operationType": "forceDelete", "record": {"recordName": name}}]})


def act_as(page, email):
    """The accounts page, then the account's "Act as" link."""
    page.goto(BASE + "/console/accounts")
    page.get_by_role("row").filter(has_text=email).get_by_role("link", name="Act as").click()
    page.wait_for_url("**/console/account?*")


def open_database(page, email, database):
    """Act as `email`, then open iCloud.test's `database` (through the "Open a container" form)."""
    act_as(page, email)
    page.get_by_label("Container").fill(CONTAINER)
    page.get_by_label("Database").select_option(database)
    page.get_by_role("button", name="Open").click()
    page.wait_for_url("**/console/database?*")


def open_record(page, email, database, zone, record):
    open_database(page, email, database)
    page.get_by_role("link", name=zone, exact=True).click()
    page.wait_for_url("**/console/zone?*")
    page.get_by_role("link", name=record, exact=True).click()
    page.wait_for_url("**/console/record?*")


def share_url(page):
    """The share URL the share page shows (as text)."""
    return page.get_by_role("row").filter(has_text="URL").locator("code").inner_text()


def open_link(page, email, url):
    """The share links page as `email`, with the URL opened in iCloud.test."""
    page.goto(BASE + "/console/link?" + urllib.parse.urlencode({"as": email}))
    page.get_by_label("Container").fill(CONTAINER)
    page.get_by_label("Share URL or short GUID").fill(url)
    page.get_by_role("button", name="Open").click()
    page.wait_for_url("**/console/link?*")


def share_record(page, zone, record, title, invite=None, permission="readOnly"):
    """As Alice: share the record from its page, then invite `invite`."""
    open_record(page, "alice@example.com", "private", zone, record)
    page.get_by_label("Title").fill(title)
    page.get_by_role("button", name="Share this record").click()
    page.wait_for_url("**/console/share?*")
    if invite:
        page.get_by_label("Email, phone or userRecordID").fill(invite)
        page.locator("form").filter(has=page.get_by_role("button", name="Invite")).get_by_label("Permission").select_option(permission)
        page.get_by_role("button", name="Invite").click()
        page.wait_for_url("**/console/share?*")
    return share_url(page)
