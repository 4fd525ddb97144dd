"""The host's class (CPU vendor and model, XSAVE, last-level cache, cgroup mode, kernel, VM)
in the HTML report's system card, the setup line and the JSON report."""

from __future__ import annotations

import json

from guestbench.commands import reading
from guestbench.report import formats
from guestbench.report.formats.html import page as html
from guestbench.report.tables.platform import class_note, host_line
from guestbench.store.records import RunRecord
from tests.support.facts import INTEL_XEON, STARTED
from tests.support.html_report import ids, parse


def _campaign(store, facts: dict) -> None:
    campaign = store.create_campaign("classed", {"source": "test"}, facts, "fp", "native",
                                     "/logs", "0.1.0")
    env = store.add_environment(campaign, "native", "native", {"name": "native",
                                                              "kind": "native"}, True, "ok", 0)
    for repetition in range(3):
        store.add_run(campaign, RunRecord(env, "getpid", "getpid", {}, repetition, "ok", "",
                                          STARTED, 0.5, None,
                                          (("time_per_op", "ns", 100.0 + repetition),)))
    store.finish_campaign(campaign, "finished")


def test_the_system_card_shows_the_class(store, tmp_path) -> None:
    _campaign(store, INTEL_XEON)
    card = ids(parse(html.render(reading.load(store), tmp_path)))["system-card"]
    shown = dict(zip((dt.text() for dt in card.all("dt")), (dd.text() for dd in card.all("dd"))))
    assert shown["CPU"] == "Intel(R) Xeon(R) Processor (GenuineIntel), 4 logical CPUs"
    assert shown["XSAVE"] == "11008 B" and shown["last-level cache"] == "480 MiB"
    assert shown["cgroups"] == "hybrid" and shown["kernel"] == "6.18.50"
    assert shown["host"] == "xeon, itself a virtual machine"


def test_the_json_report_has_the_class(store) -> None:
    _campaign(store, INTEL_XEON)
    document = json.loads(formats.render("report", "json", reading.load(store)))
    assert document["host_class"] == {
        "cpu_vendor": "GenuineIntel", "cpu_model": "Intel(R) Xeon(R) Processor",
        "xsave_bytes": 11008, "llc_bytes": 480 * 2**20, "cgroup_mode": "hybrid",
        "kernel": "6.18.50", "virtualised": True,
        "text": "Intel(R) Xeon(R) Processor (GenuineIntel), XSAVE 11008 B, LLC 480 MiB, "
                "cgroup hybrid, kernel 6.18.50, VM"}


def test_the_setup_line_and_its_note_name_the_class() -> None:
    assert host_line({**INTEL_XEON, "memory_mib": 8192}) == (
        "Intel(R) Xeon(R) Processor, 4 logical CPUs; LLC 480 MiB; 8.0 GiB RAM; "
        "disk not recorded; kernel 6.18.50; itself a VM")
    assert class_note(INTEL_XEON) == ("Host class: Intel(R) Xeon(R) Processor (GenuineIntel), "
                                      "XSAVE 11008 B, cgroup hybrid.")
