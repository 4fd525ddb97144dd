"""report.boot_tables: the boot phases and the boot totals, from boot runs written into a store."""

from __future__ import annotations

import datetime as dt
import re
import statistics

import pytest

from guestbench import store as gb_store
from guestbench.analysis import results as analysed
from guestbench.report import model, select
from guestbench.report.tables import boot as boot_tables
from guestbench.store.records import RunRecord
from guestbench.commands import reading

STARTED = dt.datetime(2026, 11, 25, 23, 15, tzinfo=dt.timezone.utc)
FACTS = {"hostname": "h", "cpu_model": "AMD EPYC", "logical_cpus": 2, "kernel": "6.18",
         "llc_bytes": 32 * 2**20}
KVM_REASON = "/dev/kvm exists but a test guest did not boot under KVM within 8 s"
# boot points in ms from VMM start, shaped like a UML and a slow QEMU TCG boot (the seed's
# 2786 beside 11190); each run scales them by its factor
UML = {"boot_clock_zero": 31.0, "boot_first_byte": 1189.0, "boot_userspace": 1365.0,
       "boot_agent_ready": 1418.0, "boot_powered_off": 2786.0, "guest_uptime": 1688.0}
QEMU = {"boot_clock_zero": 8000.0, "boot_first_byte": 8500.0, "boot_userspace": 10200.0,
        "boot_agent_ready": 10800.0, "boot_powered_off": 11190.0, "guest_uptime": 3100.0}
FACTORS = (0.97, 0.99, 1.0, 1.01, 1.03)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?[kMG]?")


class Campaign:
    """A campaign written straight into a store: environments, then their runs."""

    def __init__(self, store) -> None:
        self.store = store
        self.id = store.create_campaign("boot", {"source": "test"}, FACTS, "fp", None,
                                        "/logs", "0.1.0")
        self.env_ids: dict[str, int] = {}
        self.repetition = 0

    def environment(self, name: str, available: bool = True, probe: str = "ok") -> None:
        self.env_ids[name] = self.store.add_environment(
            self.id, name, "fake", {"name": name, "kind": "fake"}, available, probe,
            len(self.env_ids))

    def run(self, env: str, workload: str, samples=(), status: str = "ok", reason: str = "",
            flags: tuple[str, ...] = ()) -> None:
        self.repetition += 1
        self.store.add_run(self.id, RunRecord(
            self.env_ids[env], workload, workload, {}, self.repetition, status, reason, STARTED,
            0.5, f"/logs/{env}/{workload}/rep{self.repetition}", tuple(samples), flags))

    def boots(self, env: str, points: dict[str, float], flags: tuple[str, ...] = ()) -> None:
        for factor in FACTORS:
            self.run(env, "boot", [(metric, "ms", value * factor)
                                   for metric, value in points.items()], flags=flags)

    def report(self) -> analysed.CampaignResults:
        self.store.finish_campaign(self.id, "finished")
        return reading.load(self.store, str(self.id))


@pytest.fixture
def boot_campaign(sqlite_url) -> Campaign:
    opened = gb_store.open(sqlite_url)
    yield Campaign(opened)
    opened.engine.dispose()


@pytest.fixture
def seed(boot_campaign: Campaign) -> analysed.CampaignResults:
    """Seed 000's shape: native runs getpid only; kvm is unavailable; uml and qemu boot, uml's
    runs flagged console-latency as the clock check flags them on this host."""
    for name in ("native", "uml", "qemu"):
        boot_campaign.environment(name)
    boot_campaign.environment("kvm", available=False, probe=KVM_REASON)
    for env in ("native", "uml", "qemu"):
        for factor in FACTORS:
            boot_campaign.run(env, "getpid", [("time_per_op", "ns", 180.0 * factor)])
    boot_campaign.run("kvm", "getpid", status="unavailable", reason=KVM_REASON)
    boot_campaign.boots("uml", UML, flags=("console-latency",))
    boot_campaign.boots("qemu", QEMU)
    boot_campaign.run("kvm", "boot", status="unavailable", reason=KVM_REASON)
    return boot_campaign.report()


def rows(table: model.Table) -> dict[str, list[str]]:
    return {row[0]: row[1:] for row in table.rows}


def test_every_environment_the_boot_ran_in_is_a_column_an_unavailable_one_marked(seed) -> None:
    footnotes = model.Footnotes()
    table = boot_tables.boot_table(seed, footnotes)
    assert table.name == "boot"
    assert table.header == ["phase (ms)", "uml", "qemu", "kvm"]  # native never booted
    (unavailable,) = [line for line in footnotes.lines() if line.startswith("[")
                      and "kvm: ⊘ unavailable" in line]
    mark = unavailable.split("]")[0] + "]"
    for name, values in rows(table).items():
        if name != "runs (n)":
            assert values[2] == f"⊘ unavailable {mark}", name
    assert rows(table)["runs (n)"] == ["5", "5", "0"]


def test_the_total_carries_the_flags_the_measured_table_shows(seed) -> None:
    footnotes = model.Footnotes()
    table = boot_tables.boot_table(seed, footnotes)
    uml_total, qemu_total, _kvm = rows(table)[boot_tables.TOTAL_PHASE]
    measured = rows(model.measured_table(seed, model.Footnotes()))
    assert "!console-latency" in uml_total and re.search(r"\[\d+\]$", uml_total)
    assert "console-latency" not in qemu_total
    assert any(line.startswith("[") and "console-latency (uml)" in line
               for line in footnotes.lines())
    assert "!console-latency" in measured["boot"][1 + 1]  # the same cell, marked there too


def test_a_row_is_written_in_whole_ms_never_with_a_k_suffix(seed) -> None:
    table = boot_tables.boot_table(seed, model.Footnotes())
    assert "ms" in table.header[0]
    total = rows(table)[boot_tables.TOTAL_PHASE]
    assert total[0].startswith("2786 ") and total[1].startswith("11190 ")
    for name, values in rows(table).items():
        numbers = [NUMBER.match(value).group() for value in values if NUMBER.match(value)]
        assert numbers and all(number.isdigit() for number in numbers), (name, values)


def test_the_totals_table_has_one_row_per_environment(seed) -> None:
    footnotes = model.Footnotes()
    table = boot_tables.boot_totals_table(seed, footnotes)
    assert table.name == "boot-totals" and table.header == ["environment", "boot (ms)", "n"]
    by_env = {row[0]: row[1:] for row in table.rows}
    assert list(by_env) == ["uml", "qemu", "kvm"] and len(table.rows) == 3
    assert by_env["uml"][0].startswith("2786 ") and "!console-latency" in by_env["uml"][0]
    assert by_env["qemu"][0].split()[0] == "11190" and by_env["qemu"][1] == "5"
    assert by_env["kvm"][0].startswith("⊘ unavailable [") and by_env["kvm"][1] == "0"


def test_the_tables_follow_the_style_statistic_and_plain_form(seed) -> None:
    qemu_ms = [11190.0 * factor for factor in FACTORS]
    for spread, shown in ((False, f"{statistics.fmean(qemu_ms):.0f}"),
                          (True, f"{statistics.fmean(qemu_ms):.0f} ({statistics.stdev(qemu_ms):.0f})")):
        with model.styled(model.Style(plain=True, statistic="mean", spread=spread)):
            table = boot_tables.boot_totals_table(seed, model.Footnotes())
        assert "mean" in table.title
        assert next(row for row in table.rows if row[0] == "qemu")[1] == shown
    with model.styled(model.Style(statistic="best")):
        phases = boot_tables.boot_table(seed, model.Footnotes())
    assert rows(phases)["first console byte, from VMM start"][1] == f"{8500 * FACTORS[0]:.0f}"


def test_a_negative_first_phase_is_never_printed_as_a_negative_number(boot_campaign) -> None:
    # a guest whose clock started before its VMM did (a restored snapshot's)
    boot_campaign.environment("restored")
    boot_campaign.boots("restored", {**UML, "boot_clock_zero": -260.0})
    table = boot_tables.boot_table(boot_campaign.report(), model.Footnotes())
    first = rows(table)["VMM start -> guest clock zero (VMM, firmware, decompression)"]
    assert first == ["-"]
    assert rows(table)["guest clock zero -> userspace (kernel boot)"] == [f"{1365 + 260}"]
    assert "restored: '-' for a phase that came out negative" in table.note
    assert not any(re.match(r"-\d", value) for row in table.rows for value in row[1:])


def test_runs_without_the_paired_clock_zero_show_no_clock_zero_phase(boot_campaign) -> None:
    # recorded before boot_clock_zero: their uptime, read after the clock check, is not paired
    boot_campaign.environment("uml")
    boot_campaign.boots("uml", {k: v for k, v in UML.items() if k != "boot_clock_zero"})
    table = boot_tables.boot_table(boot_campaign.report(), model.Footnotes())
    for name in boot_tables.CLOCK_ZERO_PHASES:
        assert rows(table)[name] == ["-"]
    assert "uml: '-' in the clock-zero rows" in table.note and "again" in table.note
    assert rows(table)["userspace -> agent ready (init)"] == ["53"]


def test_a_campaign_without_boot_runs_has_no_boot_tables(boot_campaign) -> None:
    boot_campaign.environment("native")
    boot_campaign.run("native", "getpid", [("time_per_op", "ns", 180.0)])
    report = boot_campaign.report()
    assert boot_tables.boot_table(report, model.Footnotes()) is None
    assert boot_tables.boot_totals_table(report, model.Footnotes()) is None


def test_the_published_view_shows_the_boot_table_with_every_environment(seed) -> None:
    boot = next(table for table in select.tables(seed, "published") if table.name == "boot")
    assert boot.header[1:] == ["uml", "qemu", "kvm"]


@pytest.mark.parametrize("name", ["boot", "boot-totals"])
def test_the_catalogue_builds_the_boot_tables(seed, name) -> None:
    (made,) = select.build(select.BUILDERS[name], seed, model.Footnotes())
    assert made.name == name


def test_report_table_boot_gives_plain_whole_ms_with_its_own_footnotes(seed) -> None:
    phases, totals = select.chosen_tables(seed, select.from_names(("boot", "boot-totals"),
                                                                  True, False))
    for table in (phases, totals):
        cells = [value for row in table.rows for value in row[table.label_columns:]]
        assert not any("±" in value or re.search(r"\dk\b", value) for value in cells)
        assert table.footnotes[0].startswith("[1] ")
    assert rows(phases)[boot_tables.TOTAL_PHASE][2] == "n/a [1]"  # kvm, unavailable
    assert [row[0] for row in totals.rows] == ["uml", "qemu", "kvm"]


def test_the_phases_and_the_rest_add_up_to_the_total(seed) -> None:
    """Under -machine pc the phase medians added to 13,207 ms against a total of 15,152
    (2026-11-27): medians do not add. The rest is now a row of its own."""
    table = boot_tables.boot_table(seed, model.Footnotes())
    shown = rows(table)
    for column in (0, 1):  # uml, qemu
        parts = [shown[name][column] for name in (*boot_tables.CHAIN, boot_tables.REST_PHASE)]
        total = shown[boot_tables.TOTAL_PHASE][column].split()[0]
        number = lambda text: int(text.replace(",", ""))  # noqa: E731
        assert abs(sum(map(number, parts)) - number(total)) <= len(parts), (parts, total)


def test_phases_whose_medians_add_to_more_than_the_total_show_no_negative_rest() -> None:
    """A residual of "-29" ms read as a phase that took negative time: each run's phases add
    to its total exactly, only their medians do not. The rest reads '-', and the note says
    what the medians add to against the total's."""
    from guestbench.analysis.boot import PhaseCell
    phases = {name: PhaseCell(value, 3, (value,) * 3)
              for name, value in zip(boot_tables.CHAIN, (100.0, 900.0, 300.0, 29.0))}
    phases[boot_tables.TOTAL_PHASE] = PhaseCell(1300.0, 3, (1300.0,) * 3)
    assert boot_tables._rest_text(phases) == boot_tables.HIDDEN
    assert boot_tables._over_total(phases) == "1329 against 1300 ms"
    phases[boot_tables.TOTAL_PHASE] = PhaseCell(1340.0, 3, (1340.0,) * 3)
    assert boot_tables._rest_text(phases) == "11" and boot_tables._over_total(phases) == ""
