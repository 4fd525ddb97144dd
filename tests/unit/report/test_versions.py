"""report.versions: the version table of a kernel or binary sweep, from a store on disk."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from guestbench.analysis import results as analysed
from guestbench.report import model, select
from guestbench.report.formats.html import page as html
from guestbench.report.formats import json as json_report, markdown, terminal
from guestbench.report.tables import versions
from guestbench.store.records import RunRecord
from tests.support.facts import FACTS, STARTED
from guestbench.commands import reading

QEMU = {"kind": "qemu", "accel": "kvm", "machine": "microvm", "vcpus": 1, "kernel": None,
        "binary": "qemu-system-x86_64", "disk_cache": "writeback"}
KERNEL_A, KERNEL_B = "/boot/vmlinuz-A", "/boot/vmlinuz-B"
VMM = "QEMU emulator version 8.2.2 (Debian 1:8.2.2+ds-0ubuntu1.4)"


def qemu(**options) -> dict:
    return {**QEMU, **options}


class Campaign:
    """A campaign written straight into the store: environments with specs and facts, runs."""

    def __init__(self, store, environments: dict[str, tuple[dict, dict | None]],
                 baseline: str | None = None) -> None:
        self.store = store
        self.id = store.create_campaign("versions", {"source": "test"}, FACTS, "fp", baseline,
                                        "/logs", "0.1.0")
        self.env_ids = {name: store.add_environment(
            self.id, name, spec["kind"], {"name": name, **spec}, True, "ok", position,
            facts=facts) for position, (name, (spec, facts)) in enumerate(environments.items())}
        self.repetition = 0

    def run(self, env: str, workload: str, samples, status: str = "ok", reason: str = "") -> None:
        self.repetition += 1
        self.store.add_run(self.id, RunRecord(
            self.env_ids[env], workload, workload, {}, self.repetition, status, reason, STARTED,
            0.5, f"/logs/{env}/{workload}/rep{self.repetition}", tuple(samples)))

    def report(self) -> analysed.CampaignResults:
        return reading.load(self.store, str(self.id))


def micro(time_ns: float) -> list[tuple[str, str, float]]:
    return [("time_per_op", "ns", time_ns), ("tsc_per_op", "cycles", time_ns * 2.6)]


def boot(scale: float, jitter: float) -> list[tuple[str, str, float]]:
    """Boot points in ms from VMM start; scale stretches the kernel's part."""
    return [("boot_first_byte", "ms", 40.0 + jitter), ("guest_uptime", "ms", 90.0 * scale),
            ("boot_userspace", "ms", 60.0 + 90.0 * scale + jitter),
            ("boot_agent_ready", "ms", 80.0 + 90.0 * scale + jitter),
            ("boot_powered_off", "ms", 95.0 + 90.0 * scale + jitter)]


JITTER = (-2.0, -1.0, 0.0, 1.0, 2.0)


def add_runs(campaign: Campaign, env: str, slowdown: float, bandwidth: float,
             kernel_scale: float) -> None:
    for jitter in JITTER:
        campaign.run(env, "getpid", micro(100.0 * slowdown + jitter))
        campaign.run(env, "stream_triad", [("bandwidth", "MB/s", bandwidth + 10 * jitter)])
        campaign.run(env, "boot", boot(kernel_scale, jitter))


@pytest.fixture
def kernels(store) -> Campaign:
    """native, then qemu swept over two kernels: B is 20% slower at getpid, boots its kernel
    1.5 times as long, and the same at stream_triad; fork_exit timed out under B."""
    campaign = Campaign(store, {
        "native": ({"kind": "native"}, None),
        "qemu-kernel_boot_vmlinuz_A": (qemu(kernel=KERNEL_A),
                                       {"vmm_version": VMM, "guest_kernel": "6.1.0-41-amd64"}),
        "qemu-kernel_boot_vmlinuz_B": (qemu(kernel=KERNEL_B),
                                       {"vmm_version": VMM, "guest_kernel": "6.12.9-amd64"}),
    }, baseline="native")
    for jitter in JITTER:
        campaign.run("native", "getpid", micro(50.0 + jitter))
    add_runs(campaign, "qemu-kernel_boot_vmlinuz_A", 1.0, 10_000.0, 1.0)
    add_runs(campaign, "qemu-kernel_boot_vmlinuz_B", 1.2, 10_050.0, 1.5)
    for jitter in JITTER:
        campaign.run("qemu-kernel_boot_vmlinuz_A", "fork_exit", micro(30_000.0 + jitter))
        campaign.run("qemu-kernel_boot_vmlinuz_B", "fork_exit", (), "timeout",
                     "killed after the 60 s run timeout")
    return campaign


def by_name(tables: list[model.Table]) -> dict[str, model.Table]:
    return {table.name: table for table in tables}


def rows_of(table: model.Table) -> dict[tuple[str, str], list[str]]:
    return {(row[0], row[1].split(" (")[0]): row[2:] for row in table.rows}


def test_a_kernel_sweep_is_one_version_group(kernels) -> None:
    groups = versions.version_groups(kernels.report())
    assert [(g.key, g.name, g.environments, g.versions) for g in groups] == [
        ("kernel", "qemu", ["qemu-kernel_boot_vmlinuz_A", "qemu-kernel_boot_vmlinuz_B"],
         ["6.1.0-41-amd64", "6.12.9-amd64"])]


def test_version_table_columns_and_changes(kernels) -> None:
    table = by_name(select.tables(kernels.report(), "published"))["versions-qemu-kernel"]
    assert table.header == ["workload", "metric", "6.1.0-41-amd64", "6.12.9-amd64"]
    assert table.title == ("Versions of qemu (guest kernel): median of the first, % change "
                           "against it [95% CI]")
    rows = rows_of(table)
    assert list(rows) == [("getpid", "time per op"), ("STREAM triad", "bandwidth"),
                          ("boot", "VMM start to first console byte"), ("boot", "VMM start to userspace"),
                          ("boot", "VMM start to agent ready"), ("boot", "VMM start to power-off"),
                          ("fork + exit", "time per op")]
    # getpid: 100 ns against 120 ns, +20%, its interval well beyond the 5% threshold
    assert rows[("getpid", "time per op")][0] == "100"
    change = rows[("getpid", "time per op")][1]
    assert change.startswith("+20% [") and change.endswith("] slower")
    low, high = (float(x.rstrip("%")) for x in change.split("[")[1].split("]")[0].split(", "))
    assert 10 < low < 20 < high < 30
    # stream_triad: +0.5%, inside the noise threshold: no mark
    assert rows[("STREAM triad", "bandwidth")][0] == "10k"
    assert rows[("STREAM triad", "bandwidth")][1].startswith("+0.5% [")
    assert rows[("STREAM triad", "bandwidth")][1].endswith("]")
    assert "higher is better" in next(r[1] for r in table.rows if r[0] == "STREAM triad")
    # boot: the first console byte did not move; userspace came 45 ms later (150 -> 195 ms)
    assert rows[("boot", "VMM start to first console byte")] == ["40", "0% [-6.8%, +7.3%]"]  # each median within 38-42
    assert rows[("boot", "VMM start to userspace")][1].startswith("+30% [")
    assert rows[("boot", "VMM start to userspace")][1].endswith("slower")
    # fork_exit: B's runs all timed out: its status, with a footnote, as other tables show it
    assert rows[("fork + exit", "time per op")][0] == "30"  # us: the row's unit is scaled
    assert next(r[1] for r in table.rows if r[0] == "fork + exit") == "time per op (us)"
    assert rows[("fork + exit", "time per op")][1].startswith("◷ timeout x5 [")
    # each row's cells link to the runs of its stored label (the rows show titles)
    labels = ["getpid", "stream_triad", "boot", "boot", "boot", "boot", "fork_exit"]
    assert [source for source in table.sources] == [
        [("qemu-kernel_boot_vmlinuz_A", label), ("qemu-kernel_boot_vmlinuz_B", label)]
        for label in labels]
    assert "6.1.0-41-amd64 = qemu-kernel_boot_vmlinuz_A (kernel /boot/vmlinuz-A)" in table.note


def test_every_renderer_draws_the_version_table(kernels, tmp_path) -> None:
    report = kernels.report()
    text = markdown.render(report)
    assert "### Versions of qemu (guest kernel)" in text
    assert "| 6.1.0-41-amd64 | 6.12.9-amd64 |" in text
    assert "| getpid | time per op (ns) | 100 | +20% [" in text
    page = html.render(report, tmp_path)
    assert "Versions of qemu (guest kernel)" in page and "6.12.9-amd64" in page
    assert "guest_kernel: 6.12.9-amd64" in page  # the environments section shows the facts
    drawn = terminal.fit(select.tables(report, "detail"))  # report --detail
    assert "versions-qemu-kernel" in by_name(drawn)
    console = Console(width=terminal.width_for(drawn), record=True)
    terminal.render_tables(drawn, console)
    assert "6.12.9-amd64" in console.export_text()


def test_facts_reach_the_report_and_json(kernels) -> None:
    report = kernels.report()
    assert [env.facts for env in report.environments] == [
        None, {"vmm_version": VMM, "guest_kernel": "6.1.0-41-amd64"},
        {"vmm_version": VMM, "guest_kernel": "6.12.9-amd64"}]
    document = json.loads(json_report.render(report))
    assert document["schema_version"] == 4  # facts came as a new key, with no bump of their own
    assert [env["facts"] for env in document["environments"]] == [
        {}, {"vmm_version": VMM, "guest_kernel": "6.1.0-41-amd64"},
        {"vmm_version": VMM, "guest_kernel": "6.12.9-amd64"}]


def test_without_a_sweep_no_version_table(store) -> None:
    campaign = Campaign(store, {"native": ({"kind": "native"}, None),
                                "qemu": (qemu(kernel=KERNEL_A), {"guest_kernel": "6.1.0"}),
                                "qemu-tcg": (qemu(kernel=KERNEL_A, accel="tcg"), None)},
                        baseline="native")
    for env in ("native", "qemu", "qemu-tcg"):
        for jitter in JITTER:
            campaign.run(env, "getpid", micro(100.0 + jitter))
    report = campaign.report()
    assert versions.version_groups(report) == []
    names = [table.name for table in select.tables(report, "published")]
    assert names and not any(name.startswith("versions") for name in names)
    assert "Versions of" not in markdown.render(report)


def test_two_keys_apart_is_no_group_but_a_grid_is_one_group_per_other_key(store) -> None:
    """kernel A at 1 vCPU and kernel B at 2 differ in two keys: no version group. A kernel x
    vcpus grid gives one kernel group per vCPU count."""
    pair = Campaign(store, {"a": (qemu(kernel=KERNEL_A, vcpus=1), None),
                            "b": (qemu(kernel=KERNEL_B, vcpus=2), None)})
    for env in ("a", "b"):
        pair.run(env, "getpid", micro(100.0))
    assert versions.version_groups(pair.report()) == []

    grid = Campaign(store, {f"q-kernel{k}-vcpus{v}": (qemu(kernel=f"/boot/vmlinuz-{k}", vcpus=v),
                                                      None)
                            for v in (1, 2) for k in ("A", "B")})
    for env in grid.env_ids:
        for jitter in JITTER:
            grid.run(env, "getpid", micro(100.0 + jitter))
    groups = versions.version_groups(grid.report())
    assert [(g.name, g.environments, g.versions) for g in groups] == [
        ("q-vcpus1", ["q-kernelA-vcpus1", "q-kernelB-vcpus1"], [KERNEL_A, KERNEL_B]),
        ("q-vcpus2", ["q-kernelA-vcpus2", "q-kernelB-vcpus2"], [KERNEL_A, KERNEL_B])]
    tables = by_name(select.tables(grid.report(), "published"))
    assert {"versions-q-vcpus1-kernel", "versions-q-vcpus2-kernel"} <= set(tables)
    # no facts recorded (an older runner): the spec's value heads the column
    assert tables["versions-q-vcpus1-kernel"].header[2:] == [KERNEL_A, KERNEL_B]


def test_a_binary_sweep_is_headed_by_the_vmm_version(store) -> None:
    campaign = Campaign(store, {
        "qemu-binary_opt_qemu8_bin_qemu_system_x86_64": (qemu(binary="/opt/qemu8/bin/qemu-system-x86_64"),
                              {"vmm_version": "QEMU emulator version 8.2.2",
                               "guest_kernel": "6.1.0"}),
        "qemu-binary_opt_qemu9_bin_qemu_system_x86_64": (qemu(binary="/opt/qemu9/bin/qemu-system-x86_64"),
                              {"vmm_version": "QEMU emulator version 9.1.0",
                               "guest_kernel": "6.1.0"})})
    for env in campaign.env_ids:
        for jitter in JITTER:
            campaign.run(env, "getpid", micro(100.0 + jitter))
    [group] = versions.version_groups(campaign.report())
    assert (group.key, group.name) == ("binary", "qemu")
    table = by_name(select.tables(campaign.report(), "published"))["versions-qemu-binary"]
    assert table.title.startswith("Versions of qemu (VMM binary): median of the first")
    assert table.header[2:] == ["QEMU emulator version 8.2.2", "QEMU emulator version 9.1.0"]
    assert table.rows[0][2:] == ["100", "0% [-2.8%, +2.9%]"]


@pytest.mark.parametrize(("fraction", "text"), [
    (0.2, "+20%"), (-0.031, "-3.1%"), (0.0004, "+0.04%"), (0.0, "0%"), (2.0, "+200%"),
    (-0.00001, "0%"), (0.105, "+10%")])
def test_format_change(fraction: float, text: str) -> None:
    assert versions.format_change(fraction) == text
