"""Host noise checks over recorded /proc and sysfs values: every warning, and a quiet host with none."""

from __future__ import annotations

import json

import pytest

from guestbench import host as gb_host
from guestbench.host import Host

# /proc/stat's first lines and /proc/loadavg as recorded on hosts before and after a campaign
STAT_QUIET_BEFORE = "cpu  543615 0 89718 1005473 4149 0 1474 473 0 0\ncpu0 274011 0 37936 509901 233 0 166 229 0 0\n"
STAT_QUIET_AFTER = "cpu  553615 0 91718 1035473 4150 0 1490 480 0 0\ncpu0 279011 0 38936 524901 233 0 174 233 0 0\n"
# a cloud guest whose hypervisor gave 4% of the time to a neighbour: steal grew by 1,800 of 45,000
STAT_STOLEN_BEFORE = "cpu  100000 20 30000 800000 500 0 900 12000 0 0\n"
STAT_STOLEN_AFTER = "cpu  110000 20 33000 830000 500 0 1100 13800 0 0\n"
# a kernel that predates the steal column (before 2.6.11)
STAT_NO_STEAL = "cpu  100000 20 30000 800000 500 0 900\n"
LOAD_QUIET = "0.04 0.10 0.08 1/312 40211\n"
LOAD_BUSY = "3.71 2.95 1.20 5/330 40877\n"
LOAD_AFTER_QUIET_CAMPAIGN = "1.06 0.71 0.33 2/312 41002\n"
LOAD_AFTER_SOMETHING_ELSE = "6.40 4.10 2.02 9/340 41502\n"
PERFORMANCE = {f"cpu{n}": "performance" for n in range(8)}
POWERSAVE_ON_TWO = {**PERFORMANCE, "cpu3": "powersave", "cpu7": "schedutil"}


def snapshot(load: str = LOAD_QUIET, stat: str = STAT_QUIET_BEFORE,
             governors: dict[str, str] | None = PERFORMANCE, cpus: int = 8,
             virtualised: bool = False) -> dict:
    return gb_host.snapshot_of(load, stat, governors, cpus, virtualised)


def warnings(before: dict, after: dict | None) -> list[str]:
    return gb_host.noise_checks(before, after)["warnings"]


def test_snapshot_reads_the_recorded_values() -> None:
    taken = snapshot(governors=POWERSAVE_ON_TWO)
    assert taken["load_avg"] == [0.04, 0.10, 0.08]
    assert taken["cpu_ticks"] == {"user": 543615, "nice": 0, "system": 89718, "idle": 1005473,
                                  "iowait": 4149, "irq": 0, "softirq": 1474, "steal": 473}
    assert taken["governors"]["cpu3"] == "powersave"
    assert (taken["logical_cpus"], taken["virtualised"]) == (8, False)
    assert json.loads(json.dumps(taken)) == taken  # stored as JSON on the campaign


def test_a_quiet_host_gives_no_warning() -> None:
    before = snapshot()
    after = snapshot(LOAD_AFTER_QUIET_CAMPAIGN, STAT_QUIET_AFTER)
    checks = gb_host.noise_checks(before, after)
    assert checks["warnings"] == []
    assert checks["before"] is before and checks["after"] is after
    assert checks["steal_pct"] == pytest.approx(100 * 7 / (10000 + 2000 + 30000 + 1 + 16 + 7))


def test_no_cpufreq_interface_is_not_a_warning() -> None:
    assert warnings(snapshot(governors=None), snapshot(governors=None)) == []


def test_load_before_the_campaign() -> None:
    (warning,) = warnings(snapshot(LOAD_BUSY), None)
    assert "1-minute load average was 3.71 when the campaign started, and 4 other processes " \
        "running" in warning
    assert "8 logical CPUs" in warning and "competes with the measurements" in warning


@pytest.mark.parametrize("load_1min, cpus, warned", [
    (0.49, 1, False), (0.51, 1, True), (0.37, 2, False), (0.6, 2, True), (1.9, 8, False),
    (2.1, 8, True), (15.9, 64, False), (16.1, 64, True)])
def test_load_limit_grows_with_the_cpus(load_1min: float, cpus: int, warned: bool) -> None:
    """A warning at load 0.37 on 2 CPUs was about nothing (2026-11-27): a quarter of the
    CPUs, at least 0.5, with another process running."""
    before = snapshot(f"{load_1min} 0.1 0.1 2/100 1\n", cpus=cpus)
    assert bool(warnings(before, None)) == warned


def test_a_load_left_by_work_that_ended_is_no_warning() -> None:
    """An earlier campaign leaves a 1-minute load that takes minutes to decay; nothing else
    runs (the reader is the only running process): no warning."""
    assert warnings(snapshot("1.65 1.29 1.08 1/81 30694\n", cpus=2), None) == []
    assert warnings(snapshot("1.65 1.29 1.08 3/81 30694\n", cpus=2), None) != []
    stored_before = {**snapshot("1.65 1.29 1.08 1/81 30694\n", cpus=2)}
    del stored_before["others_running"]  # a campaign stored before the count was read
    assert warnings(stored_before, None) != []


def test_governor_that_is_not_performance() -> None:
    (warning,) = warnings(snapshot(governors=POWERSAVE_ON_TWO), None)
    assert "governor is powersave, schedutil on 2 of 8 CPUs" in warning
    assert "frequency scaling adds noise" in warning


def test_steal_time_during_the_campaign() -> None:
    before, after = snapshot(stat=STAT_STOLEN_BEFORE), snapshot(stat=STAT_STOLEN_AFTER)
    checks = gb_host.noise_checks(before, after)
    assert checks["steal_pct"] == pytest.approx(4.0)
    (warning,) = checks["warnings"]
    assert warning.startswith("steal time was 4.0% of CPU time during the campaign")
    assert "neighbour" in warning


def test_steal_unknown_without_the_column_or_the_end() -> None:
    before = snapshot(stat=STAT_NO_STEAL)
    assert gb_host.noise_checks(before, snapshot(stat=STAT_NO_STEAL))["steal_pct"] is None
    assert gb_host.noise_checks(snapshot(), None)["steal_pct"] is None
    assert gb_host.noise_checks(snapshot(stat=""), snapshot(stat=""))["steal_pct"] is None


def test_virtualised_host() -> None:
    (warning,) = warnings(snapshot(virtualised=True), snapshot(virtualised=True))
    assert "itself a virtual machine" in warning and "side by side" in warning


def test_load_that_came_during_the_campaign() -> None:
    (warning,) = warnings(snapshot(), snapshot(LOAD_AFTER_SOMETHING_ELSE, STAT_QUIET_AFTER))
    assert "rose from 0.04 to 6.40 during the campaign" in warning
    assert "more than its own runs explain" in warning


def test_start_and_end_warnings_are_split() -> None:
    before = snapshot(LOAD_BUSY, STAT_STOLEN_BEFORE, POWERSAVE_ON_TWO, virtualised=True)
    after = snapshot(LOAD_BUSY, STAT_STOLEN_AFTER, POWERSAVE_ON_TWO, virtualised=True)
    at_start, at_end = gb_host.warnings_at_start(before), gb_host.warnings_at_end(before, after)
    assert len(at_start) == 3 and len(at_end) == 1
    assert warnings(before, after) == at_start + at_end
    assert gb_host.warnings_at_end(before, None) == []


@pytest.mark.parametrize("load, stat", [("", ""), ("n/a n/a n/a", "cpu  1 2 x 4\n")])
def test_unreadable_proc_gives_a_snapshot_without_warnings(load: str, stat: str) -> None:
    empty = snapshot(load=load, stat=stat, governors=None)
    assert (empty["load_avg"], empty["cpu_ticks"]) == (None, None)
    assert gb_host.noise_checks(empty, empty) == {
        "before": empty, "after": empty, "steal_pct": None, "warnings": []}


def test_the_live_snapshot_has_every_field() -> None:
    taken = gb_host.noise_snapshot(Host({"logical_cpus": 4, "virtualised": True}))
    assert set(taken) == {"taken_at", "load_avg", "logical_cpus", "governors", "cpu_ticks",
                          "virtualised", "others_running"}
    assert isinstance(taken["others_running"], int) and taken["others_running"] >= 0
    assert (taken["logical_cpus"], taken["virtualised"]) == (4, True)


def test_the_facts_name_the_cpu_vendor_and_the_xsave_size(monkeypatch) -> None:
    from guestbench import xsave
    monkeypatch.setattr(gb_host, "_cpuinfo", lambda: {
        "vendor_id": "GenuineIntel", "model name": "Intel(R) Xeon(R) Processor",
        "flags": "fpu avx512f amx_tile hypervisor"})
    monkeypatch.setattr(xsave, "host_xsave_bytes", lambda: 11008)
    facts = gb_host.collect().facts
    assert (facts["cpu_vendor"], facts["cpu_model"], facts["xsave_bytes"]) == (
        "GenuineIntel", "Intel(R) Xeon(R) Processor", 11008)
    assert gb_host.collect().host_class.line().startswith(
        "Intel(R) Xeon(R) Processor (GenuineIntel), XSAVE 11008 B, ")
    monkeypatch.setattr(gb_host, "_cpuinfo", lambda: {"CPU implementer": "0x41"})  # arm64
    monkeypatch.setattr(xsave, "host_xsave_bytes", lambda: None)
    facts = gb_host.collect().facts
    assert facts["cpu_vendor"] is None and facts["xsave_bytes"] is None


def test_a_fact_unknown_on_one_side_sets_no_two_classes_apart() -> None:
    epyc = {"cpu_vendor": "AuthenticAMD", "cpu_model": "AMD EPYC", "xsave_bytes": 2440,
            "kernel": "6.18.44", "cgroup_mode": "hybrid"}
    older = {"cpu_model": "AMD EPYC", "kernel": "6.18.44"}  # a store before vendor and XSAVE
    assert not gb_host.host_class(older).apart_from(gb_host.host_class(epyc))
    assert gb_host.host_class(older).differences(gb_host.host_class(epyc)) == []
    newer = gb_host.host_class({**epyc, "kernel": "6.18.50", "cgroup_mode": "v2"})
    assert gb_host.host_class(epyc).apart_from(newer)
    assert gb_host.host_class(epyc).differences(newer) == [
        "cgroup hybrid vs v2", "kernel 6.18.44 vs 6.18.50"]
    # only the CPU and the kernel decide: another cgroup mode alone is one class
    assert not gb_host.host_class(epyc).apart_from(
        gb_host.host_class({**epyc, "cgroup_mode": "v2"}))
    # a value of a type no guestbench stored is unknown, not a difference
    assert gb_host.host_class({"xsave_bytes": "2440", "virtualised": 1}) == gb_host.HostClass()
