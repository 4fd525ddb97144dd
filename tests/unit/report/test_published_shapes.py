"""The seeds' own shapes: kernbench's table (mean (stddev) per column, elapsed over the
baseline's) and uploads as seconds per test with the environments as columns."""

from __future__ import annotations

import pytest

from guestbench.analysis import results as analysed
from guestbench.report.model import Footnotes, Style, styled
from guestbench.report.tables.kernbench import kernbench_table
from guestbench.report.tables.io import upload_times_table

from tests.support.campaigns import Campaign
from guestbench.commands import reading

# tables of what the store read: SQLite for every test, PostgreSQL for those marked
# both_stores (tests/unit/conftest.py)
ABOVE_THE_STORE = True

KVM_ABSENT = "/dev/kvm exists but a test guest did not boot under KVM within 8 s"


def build(elapsed_s: float, run: int) -> list[tuple[str, str, float]]:
    """One build run's kernbench figures; `run` (0, 1, 2) moves each a little."""
    return [("elapsed", "s", elapsed_s + 0.2 * run), ("sys", "s", 10.0 + 0.1 * run),
            ("user", "s", 90.0 + run), ("cpu_percent", "%", 190.0 + run),
            ("context_switches", "count", 17898.0 + 0.5 * run), ("sleeps", "count", 13341.0)]


def load(store, campaign: Campaign) -> analysed.CampaignResults:
    return reading.load(store, str(campaign.id))


def row(table, first: str) -> list[str]:
    return next(r for r in table.rows if r[0] == first)


# -- kernbench -------------------------------------------------------------------------

@pytest.mark.both_stores
def test_kernbench_gives_mean_and_stddev_per_column_and_elapsed_over_native(store) -> None:
    campaign = Campaign(store, {"native": {}, "tcg": {"kind": "qemu"}}, baseline="native")
    for run in range(3):
        campaign.run("native", "build", build(54.0, run), params={"jobs": 8})
        campaign.run("tcg", "build", build(84.4, run), params={"jobs": 8})
    table = kernbench_table(load(store, campaign), Footnotes())
    assert table.name == "kernbench" and "make -j8" in table.title
    assert table.header == ["environment", "Elapsed Time (s)", "System Time (s)",
                            "User Time (s)", "Percent CPU", "Context Switches", "Sleeps",
                            "Elapsed / native"]
    assert row(table, "native")[1:] == ["54.200 (0.200)", "10.100 (0.100)", "91.000 (1.000)",
                                        "191 (1)", "17898.5 (0.5)", "13341 (0)", "1.00"]
    tcg = row(table, "tcg")
    assert tcg[1] == "84.600 (0.200)"
    assert tcg[-1] == f"{84.6 / 54.2:.2f}" == "1.56"
    assert "Percent CPU = (user + system) / elapsed" in table.note


def test_kernbench_shows_an_unavailable_environment_with_its_footnote(store) -> None:
    campaign = Campaign(store, {"native": {}, "kvm": {"kind": "qemu"}}, baseline="native")
    for run in range(2):
        campaign.run("native", "build", build(54.0, run))
    campaign.run("kvm", "build", [], status="unavailable", reason=KVM_ABSENT)
    footnotes = Footnotes()
    table = kernbench_table(load(store, campaign), footnotes)
    assert row(table, "kvm")[1:] == ["⊘ unavailable [1]", *["-"] * 6]
    assert footnotes.lines()[0] == f"[1] kvm: ⊘ unavailable: {KVM_ABSENT}"


def test_kernbench_says_why_a_build_that_never_gave_a_figure_has_none(store) -> None:
    campaign = Campaign(store, {"native": {}})
    campaign.run("native", "build", [], status="failed", reason="make: exit status 2")
    footnotes = Footnotes()
    table = kernbench_table(load(store, campaign), footnotes)
    assert table.rows == [["native", "✗ failed [1]", *["-"] * 6]]
    assert footnotes.lines()[0] == "[1] native: ✗ failed: make: exit status 2"


def test_kernbench_marks_a_flagged_elapsed_time(store) -> None:
    campaign = Campaign(store, {"uml": {"kind": "uml"}})
    for run in range(2):
        campaign.run("uml", "build", build(60.0, run), flags=("console-latency",))
    footnotes = Footnotes()
    elapsed, system = kernbench_table(load(store, campaign), footnotes).rows[0][1:3]
    assert elapsed == "60.100 (0.141) !console-latency [1]"
    assert system == "10.050 (0.071)"  # one mark per row: on the elapsed time
    assert "console-latency (uml)" in footnotes.lines()[0]


def test_kernbench_gives_a_row_per_build_and_divides_by_the_same_build(store) -> None:
    campaign = Campaign(store, {"native": {}, "tcg": {"kind": "qemu"}}, baseline="native")
    for run in range(2):
        for cache, native_s, tcg_s in (("cold", 60.0, 150.0), ("warm", 50.0, 100.0)):
            label = f"build[cache={cache}]"
            campaign.run("native", "build", build(native_s, run), label=label,
                         params={"cache": cache})
            campaign.run("tcg", "build", build(tcg_s, run), label=label, params={"cache": cache})
    table = kernbench_table(load(store, campaign), Footnotes())
    assert table.header[:2] == ["environment", "build"] and table.label_columns == 2
    ratios = {(r[0], r[1]): r[-1] for r in table.rows}
    assert ratios == {("native", "build[cache=cold]"): "1.00",
                      ("native", "build[cache=warm]"): "1.00",
                      ("tcg", "build[cache=cold]"): f"{150.1 / 60.1:.2f}",
                      ("tcg", "build[cache=warm]"): f"{100.1 / 50.1:.2f}"}
    assert "warm: after one untimed build" in table.note


def test_kernbench_without_a_baseline_has_no_ratio_and_says_so(store) -> None:
    campaign = Campaign(store, {"native": {}})
    for run in range(2):
        campaign.run("native", "build", build(54.0, run))
    table = kernbench_table(load(store, campaign), Footnotes())
    assert table.header[-1] == "Elapsed / baseline" and table.rows[0][-1] == "-"
    assert "no baseline" in table.note


def test_kernbench_without_spread_gives_the_means_alone(store) -> None:
    campaign = Campaign(store, {"native": {}})
    for run in range(2):
        campaign.run("native", "build", build(54.0, run))
    with styled(Style(plain=True, statistic="mean", spread=False)):
        table = kernbench_table(load(store, campaign), Footnotes())
    assert table.rows[0][1:4] == ["54.100", "10.050", "90.500"]


def test_no_kernbench_without_builds(store) -> None:
    campaign = Campaign(store, {"native": {}})
    campaign.run("native", "getpid", [("time_per_op", "ns", 140.0)])
    assert kernbench_table(load(store, campaign), Footnotes()) is None


# -- upload: seconds per test ----------------------------------------------------------

SECONDS = {  # seed 001's bare-metal figures, seconds per test
    "uml": {"write": 147.0, "no_write": 141.0, "no_upload": 7.0},
    "qemu": {"write": 16.0, "no_write": 11.0, "no_upload": 13.0},
}
CHANNELS = {"uml": "serial", "qemu": "virtio-serial"}


def uploads(campaign: Campaign, env: str, size_mib: int = 64, channel: str | None = None,
            seconds: dict[str, float] | None = None) -> None:
    """Three runs of each test, labelled as a plan with the channel per environment labels
    them: one label per mode, shared by the environments."""
    for mode, elapsed_s in (seconds or SECONDS[env]).items():
        for jitter in (0.99, 1.0, 1.01):
            campaign.run(env, "upload", [
                ("elapsed", "s", elapsed_s * jitter),
                ("bandwidth", "MB/s", size_mib * 1.048576 / (elapsed_s * jitter))],
                label=f"upload[mode={mode}]" + (f"[size_mib={size_mib}]" if size_mib != 64
                                                else ""),
                params={"mode": mode, "size_mib": size_mib,
                        "channel": channel or CHANNELS[env]})


def test_upload_gives_seconds_per_test_with_the_environments_as_columns(store) -> None:
    campaign = Campaign(store, {"uml": {"kind": "uml"}, "qemu": {"kind": "qemu"}},
                        baseline="qemu")
    uploads(campaign, "uml")
    uploads(campaign, "qemu")
    table = upload_times_table(load(store, campaign), Footnotes())
    assert table.name == "upload"
    assert table.title == "Upload into the guest: seconds per test (64 MiB)"
    assert table.header == ["test", "uml", "qemu"]
    assert table.rows == [["upload", "147", "16"], ["upload-no-write", "141", "11"],
                          ["write-no-upload", "7", "13"]]
    # UML's serial line and QEMU's virtio-serial port share each row; the note says which
    assert "Channel: serial in uml; virtio-serial in qemu." in table.note
    assert table.sources[0] == [("uml", "upload[mode=write]"), ("qemu", "upload[mode=write]")]


def test_upload_leaves_out_environments_without_uploads_and_marks_unavailable_ones(store):
    campaign = Campaign(store, {"native": {}, "qemu": {"kind": "qemu"}, "kvm": {"kind": "qemu"}})
    campaign.run("native", "getpid", [("time_per_op", "ns", 140.0)])
    uploads(campaign, "qemu")
    for mode in SECONDS["qemu"]:
        campaign.run("kvm", "upload", [], label=f"upload[mode={mode}]", status="unavailable",
                     reason=KVM_ABSENT,
                     params={"mode": mode, "size_mib": 64, "channel": "virtio-serial"})
    footnotes = Footnotes()
    table = upload_times_table(load(store, campaign), footnotes)
    assert table.header == ["test", "qemu", "kvm"]
    assert [r[2] for r in table.rows] == ["⊘ unavailable [1]"] * 3
    assert footnotes.lines()[0] == f"[1] kvm: ⊘ unavailable: {KVM_ABSENT}"
    assert "Channel: virtio-serial." in table.note


def test_upload_gives_a_row_per_test_and_size_when_sizes_differ(store) -> None:
    campaign = Campaign(store, {"qemu": {"kind": "qemu"}})
    uploads(campaign, "qemu", size_mib=64)
    uploads(campaign, "qemu", size_mib=256, seconds={"write": 64.0})
    table = upload_times_table(load(store, campaign), Footnotes())
    assert table.title == "Upload into the guest: seconds per test"
    assert [r[0] for r in table.rows] == ["upload (64 MiB)", "upload (256 MiB)",
                                          "upload-no-write (64 MiB)", "write-no-upload (64 MiB)"]
    assert row(table, "upload (256 MiB)")[1] == "64"


def test_upload_names_the_channel_in_each_row_when_one_environment_ran_several(store):
    campaign = Campaign(store, {"uml": {"kind": "uml"}, "qemu": {"kind": "qemu"}})
    uploads(campaign, "uml")
    for channel, elapsed_s in (("virtio-serial", 16.0), ("9p", 20.0)):
        for jitter in (0.99, 1.0, 1.01):
            campaign.run("qemu", "upload", [("elapsed", "s", elapsed_s * jitter)],
                         label=f"upload[channel={channel}]",
                         params={"mode": "write", "size_mib": 64, "channel": channel})
    table = upload_times_table(load(store, campaign), Footnotes())
    assert [r for r in table.rows if r[0].startswith("upload (")] == [
        ["upload (serial)", "147", "-"], ["upload (virtio-serial)", "-", "16"],
        ["upload (9p)", "-", "20"]]
    assert "Channel:" not in table.note  # the rows say it


def test_no_upload_table_without_uploads(store) -> None:
    campaign = Campaign(store, {"native": {}})
    campaign.run("native", "getpid", [("time_per_op", "ns", 140.0)])
    assert upload_times_table(load(store, campaign), Footnotes()) is None
