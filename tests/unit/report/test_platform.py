"""What each environment ran, in every format: the platform table, the CSV's version column
and the JSON's version key."""

from __future__ import annotations

import csv
import io
import json

from guestbench.analysis import results as analysed
from guestbench.report.formats import csv as csv_report, json as json_report
from guestbench.report.model import Footnotes, measured_table
from guestbench.report.tables.platform import platform_table
from guestbench.store.records import RunRecord
from tests.support.facts import FACTS, STARTED
from guestbench.commands import reading

QEMU = "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)"
KVM_ABSENT = "/dev/kvm exists but a test guest did not boot under KVM within 8 s"
# name -> (kind, available, probe, facts)
ENVIRONMENTS = {
    "native": ("native", True, "ok", None),
    "runsc": ("oci", True, "ok", {"runtime_version": "runsc version release-20230605.0",
                                  "platform": "ptrace"}),
    "qemu": ("qemu", True, "ok", {"vmm_version": QEMU, "guest_kernel": "6.1.0-56-amd64"}),
    "uml": ("uml", True, "ok", {"vmm_version": "6.1.176", "guest_kernel": "6.1.176"}),
    "kvm": ("qemu", False, KVM_ABSENT, {"vmm_version": QEMU, "guest_kernel": "6.1.0-56-amd64"}),
    "old": ("fake", True, "ok", None),  # stored before its kind recorded versions
    "crun": ("oci", False, "crun: not found on PATH", None),  # nothing ran: no version
}
VERSIONS = {
    "native": "host kernel 6.1.0-test",
    "runsc": "runsc version release-20230605.0",
    "qemu": f"{QEMU}; guest kernel 6.1.0-56-amd64",
    "uml": "6.1.176 (guest kernel)",
    "old": "not recorded",
}


def campaign(store) -> analysed.CampaignResults:
    campaign_id = store.create_campaign("versions", {"source": "test"}, FACTS, "fp", "native",
                                        "/logs", "0.1.0")
    for position, (name, (kind, available, probe, facts)) in enumerate(ENVIRONMENTS.items()):
        env_id = store.add_environment(campaign_id, name, kind, {"name": name, "kind": kind},
                                       available, probe, position, facts=facts)
        status, reason = ("ok", "") if available else ("unavailable", probe)
        samples = (("time_per_op", "ns", 140.0 + position),) if available else ()
        store.add_run(campaign_id, RunRecord(env_id, "getpid", "getpid", {}, position, status,
                                             reason, STARTED, 0.5, None, samples))
    return reading.load(store, str(campaign_id))


def test_the_platform_table_lists_every_environment_with_what_it_ran(store) -> None:
    footnotes = Footnotes()
    table = platform_table(campaign(store), footnotes)
    assert table.name == "platform"
    assert table.header == ["environment", "kind", "what ran"]
    assert [r[0] for r in table.rows] == ["native", "runsc (ptrace)", "qemu", "uml", "kvm", "old",
                                          "crun"]
    ran = {r[0].split(" ")[0]: r[2] for r in table.rows}
    assert {name: ran[name] for name in VERSIONS} == VERSIONS
    assert ran["kvm"] == f"{QEMU}; guest kernel 6.1.0-56-amd64 ⊘ unavailable [1]"
    assert ran["crun"] == "⊘ unavailable [2]"
    assert footnotes.lines()[:2] == [f"[1] kvm: ⊘ unavailable: {KVM_ABSENT}",
                                     "[2] crun: ⊘ unavailable: crun: not found on PATH"]


def test_an_unavailable_environment_shares_the_other_tables_footnote(store) -> None:
    """The probe's answer is the runs' reason: one footnote for the kvm column everywhere."""
    report = campaign(store)
    footnotes = Footnotes()
    measured = measured_table(report, footnotes)
    platform = platform_table(report, footnotes)
    assert "⊘ unavailable [1]" in next(r for r in measured.rows if r[0] == "getpid")
    assert platform.rows[4][2].endswith("⊘ unavailable [1]")
    assert len([line for line in footnotes.lines() if line.startswith("[")]) == 2  # kvm, crun


def test_csv_rows_carry_their_environments_version_in_the_last_column(store) -> None:
    text = csv_report.render(campaign(store))
    assert text.splitlines()[0].split(",")[-1] == "version"
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {r["environment"]: r["version"] for r in rows} == {
        **VERSIONS, "kvm": f"{QEMU}; guest kernel 6.1.0-56-amd64", "crun": "not recorded"}
    assert csv_report.COLUMNS.index("cell_flags") == 13  # earlier columns keep their places


def test_json_environments_carry_their_version(store) -> None:
    document = json.loads(json_report.render(campaign(store)))
    versions = {env["name"]: env["version"] for env in document["environments"]}
    assert versions == {**VERSIONS, "kvm": f"{QEMU}; guest kernel 6.1.0-56-amd64",
                        "crun": "not recorded"}
