"""C3: a fault armed on the page makes the next pyicloud call fail as CloudKit's would."""

from pyicloud.common.cloudkit.client import CloudKitRateLimited
from pyicloud.common.cloudkit.models import CKModifyOperation, CKWriteRecord, CKZoneIDReq

from conftest import BASE, flash, shot, unique
from helpers import alice, make_record


def test_a_rule_armed_on_the_page_throttles_the_next_modify(console):
    zone = unique("Faults")
    make_record(zone, unique("first"))
    console.goto(BASE + "/console/faults")
    console.get_by_label("operation").select_option("records/modify")
    console.get_by_label("fault", exact=True).select_option("requestRateLimited")
    console.get_by_label("retryAfter").fill("7")
    console.get_by_label("count").fill("1")
    console.get_by_role("button", name="Arm", exact=True).click()
    console.wait_for_url("**/console/faults")
    assert "Armed rule" in flash(console)
    try:
        alice.private.modify(operations=[CKModifyOperation(operationType="create", record=CKWriteRecord(
            recordName=unique("second"), recordType="Trip", fields={}))], zone_id=CKZoneIDReq(zoneName=zone))
        raise AssertionError("the modify went through")
    except CloudKitRateLimited as e:
        assert e.retry_after == 7, e.retry_after
    console.reload()
    injected = console.get_by_role("row").filter(has_text="requestRateLimited")
    assert injected.count() >= 1
    shot(console, "faults")
    console.get_by_role("button", name="Clear the rules armed at run time").click()
    console.wait_for_url("**/console/faults")
