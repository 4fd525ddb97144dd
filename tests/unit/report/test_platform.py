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
    assert table.header == ["environment", "what ran", "accelerator", "guest memory", "vCPUs"]
    assert table.title.startswith("Setup: host ")
    assert [r[0] for r in table.rows] == ["native", "runsc (ptrace)", "qemu", "uml", "kvm", "old",
                                          "crun"]
    ran = {r[0].split(" ")[0]: r[1] for r in table.rows}
    # as a write-up names QEMU: "QEMU 7.2.22 (...)"; exports keep QEMU's own words
    shown = {name: text.replace("QEMU emulator version ", "QEMU ")
             for name, text in VERSIONS.items()}
    assert {name: ran[name] for name in VERSIONS} == shown
    assert ran["qemu"].startswith("QEMU 7.2.22 (Debian")
    assert ran["kvm"] == f"{shown['qemu']} ⊘ unavailable [1]"
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
    assert platform.rows[4][1].endswith("⊘ unavailable [1]")
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


def test_the_setup_says_the_accelerator_in_words_and_the_host_as_write_ups_do() -> None:
    """Plan tables named an environment kvm-* that ran under TCG, and nothing said TCG
    (2026-11-27); nor did any table give the host's RAM or disk."""
    from guestbench.report.tables.platform import accelerator, host_line
    from guestbench.store.records import Environment

    def env(kind, spec=None, facts=None):
        return Environment(1, name="e", kind=kind, spec=spec or {}, facts=facts)
    assert accelerator(env("qemu", {"accel": "auto"}, {"accel": "tcg"})) == \
        "TCG (QEMU's emulation)"
    assert accelerator(env("qemu", {"accel": "kvm"})) == "KVM (hardware)"
    assert accelerator(env("qemu", {"accel": "kvm", "inside": "tcg"})) == \
        "KVM in an L1 guest that runs under TCG"
    assert accelerator(env("oci", {}, {"platform": "ptrace"})).startswith("gVisor's ptrace")
    assert accelerator(env("native")) == "none: the host kernel"
    assert accelerator(env("qemu-user")) == "TCG (QEMU user-mode translation)"
    line = host_line({"cpu_model": "AMD EPYC", "logical_cpus": 2, "memory_mib": 24064,
                      "disk": "vda: virtio disk (virtual), 256 GiB", "kernel": "6.18"})
    assert line == ("AMD EPYC, 2 logical CPUs; LLC not recorded; 23.5 GiB RAM; "
                    "virtio disk (virtual), 256 GiB; kernel 6.18")
    assert host_line({"disk": "sda: Samsung SSD 870, 1863 GiB"}).split("; ")[3] == \
        "disk sda: Samsung SSD 870, 1863 GiB"


def test_the_disk_is_named_from_sysfs(tmp_path) -> None:
    import os
    from guestbench.host import disk_of
    device = os.stat(tmp_path).st_dev
    sysfs = tmp_path / "sys"
    disk = sysfs / "devices" / "pci0000:00" / "ata1" / "block" / "sda"
    (disk / "sda1").mkdir(parents=True)
    (disk / "sda1" / "partition").write_text("1\n")
    (disk / "queue").mkdir()
    (disk / "queue" / "rotational").write_text("1\n")
    (disk / "device").mkdir()
    (disk / "device" / "model").write_text("ST2000DM008-2FR1  \n")
    (disk / "size").write_text(str(2 * 2**40 // 512) + "\n")
    (sysfs / "dev" / "block").mkdir(parents=True)
    (sysfs / "dev" / "block" / f"{os.major(device)}:{os.minor(device)}").symlink_to(
        disk / "sda1")
    assert disk_of(tmp_path, sysfs) == "sda: ST2000DM008-2FR1, HDD, 2048 GiB"


def test_an_environment_that_crashed_in_every_run_is_marked_and_native_named_only_if_run(
        store) -> None:
    """A UML that crashed in every run was listed with its kernel, RAM and vCPUs and no mark,
    as if it had run; the note spoke of native in a plan without one."""
    campaign_id = store.create_campaign("crashed", {"source": "test"}, FACTS, "fp", None,
                                        "/logs", "0.1.0")
    for position, (name, status) in enumerate((("qemu", "ok"), ("uml", "crashed"))):
        env_id = store.add_environment(campaign_id, name, "qemu", {"name": name, "kind": "qemu"},
                                       True, "ok", position,
                                       facts={"vmm_version": "6.1.176", "guest_kernel": "6.1"})
        for repetition in range(2):
            samples = (("time_per_op", "ns", 140.0),) if status == "ok" else ()
            store.add_run(campaign_id, RunRecord(
                env_id, "getpid", "getpid", {}, repetition, status,
                "" if status == "ok" else "Kernel panic - not syncing: Attempted to kill init!",
                STARTED, 0.5, None, samples))
    footnotes = Footnotes()
    table = platform_table(reading.load(store, str(campaign_id)), footnotes)
    ran = {row[0]: row[1] for row in table.rows}
    assert ran["qemu"] == "6.1.176; guest kernel 6.1"
    assert ran["uml"].startswith("6.1.176") and ran["uml"].endswith("☠ crashed x2 [1]"), ran
    assert "Kernel panic" in footnotes.lines()[0]
    assert "native" not in table.note
