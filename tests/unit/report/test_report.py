"""report: the table model (values, ratios, footnotes), its views and the markdown/csv/json/terminal
renderers."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re

import pytest
from rich.console import Console

from guestbench.analysis import results as analysed
from guestbench.analysis.cells import Cell
from guestbench.report.formats import csv as csv_report, json as json_report
from guestbench.report import model, select
from guestbench.report.formats import markdown, terminal
from guestbench.report.model import STATUS_MARKS, format_ratio, format_value, row_scale
from guestbench.store import StoreError
from guestbench.store.records import RunRecord
from guestbench.commands import reading
from tests.support.facts import FACTS, STARTED

# reports what the store read: SQLite for every test, PostgreSQL for those marked
# both_stores (tests/unit/conftest.py)
ABOVE_THE_STORE = True


FAILING = {  # environment: (status, reason)
    "bad": ("failed", "record 2 fails its checksum"),
    "hang": ("timeout", "killed after the 5 s run timeout"),
    "nocap": ("unsupported", "fake lacks processes"),
    "gone": ("unavailable", "runc not found (apt-get install runc)"),
    "crashy": ("crashed", "agent died by SIGSEGV"),
    "broken": ("infra", "could not start: /dev/kvm missing"),
    "cut": ("interrupted", "campaign stopped by SIGINT during this run"),
}
GETPID = {  # environment: per repetition (time_per_op ns, tsc_per_op cycles)
    "base": [(100.0, 250.0), (110.0, 260.0), (120.0, 270.0)],
    "slow": [(200.0, 500.0), (220.0, 520.0), (240.0, 540.0)],
}


def populate(store, baseline: str | None = "base") -> int:
    """A campaign: two measured environments, one per failing status, a flaky one, and a
    workload (pipe_switch) that produced no sample anywhere."""
    names = ["base", "slow", "flaky", *FAILING]
    campaign_id = store.create_campaign("reported", {"source": "test"}, FACTS, "fp", baseline,
                                        "/logs", "0.1.0")
    env_ids = {name: store.add_environment(
        campaign_id, name, "fake", {"name": name, "kind": "fake", "scale": 1.0},
        name != "gone", "unavailable here" if name == "gone" else "fake", position)
        for position, name in enumerate(names)}

    def add(env: str, label: str, repetition: int, status: str = "ok", reason: str = "",
            samples=()) -> None:
        store.add_run(campaign_id, RunRecord(
            environment_id=env_ids[env], workload=label, label=label, params={"min_time_s": 0.1},
            repetition=repetition, status=status, reason=reason, started_at=STARTED,
            host_seconds=0.5, log_path=None if status in ("unavailable", "unsupported")
            else f"/logs/{env}/{label}/rep{repetition}", samples=tuple(samples)))

    for repetition in range(3):
        for env, values in GETPID.items():
            time_ns, tsc = values[repetition]
            add(env, "getpid", repetition, samples=[("time_per_op", "ns", time_ns),
                                                    ("tsc_per_op", "cycles", tsc),
                                                    ("iterations", "count", 4096.0)])
        if repetition == 0:
            add("flaky", "getpid", 0, samples=[("time_per_op", "ns", 150.0),
                                               ("tsc_per_op", "cycles", 375.0)])
        else:
            add("flaky", "getpid", repetition, "failed", "garbled record")
        for env, (status, reason) in FAILING.items():
            add(env, "getpid", repetition, status, reason)
        for env in ("base", "slow"):
            add(env, "pipe_switch", repetition, "failed", "pipe_switch: broken pipe")
    store.finish_campaign(campaign_id, "finished")
    return campaign_id


@pytest.fixture
def report(store) -> analysed.CampaignResults:
    populate(store)
    return reading.load(store)


def row_of(table: model.Table, label: str, metric_prefix: str) -> dict[str, str]:
    for row in table.rows:
        if row[0] == label and row[1].startswith(metric_prefix):
            return dict(zip(table.header, row))
    raise AssertionError(f"no row {label} {metric_prefix} in {table.rows}")


def column(table: model.Table, name: str) -> str:
    return next(header for header in table.header if header.split(" ")[0] == name)


def detail(report: analysed.CampaignResults) -> list[model.Table]:
    return select.tables(report, "detail")


def by_name(drawn: list[model.Table]) -> dict[str, model.Table]:
    return {table.name: table for table in drawn}


def footnote_for(text: str, footnotes: list[str]) -> list[str]:
    numbers = re.findall(r"\[(\d+)\]", text)
    assert numbers, f"no footnote mark in {text!r}"
    return [next(line for line in footnotes if line.startswith(f"[{n}] ")) for n in numbers]


# -- the table model ----------------------------------------------------------------

def test_measured_and_ratio_tables_lead_with_a_baseline(report: analysed.CampaignResults) -> None:
    drawn = detail(report)
    measured, ratio = drawn[:2]
    assert measured.title.startswith("Measured: median ±95% CI")
    assert "'reported'" in measured.title and "Test CPU x4" in measured.title
    assert ratio.title == "Relative to base: ratio of medians [95% CI], x base, above 1 is worse (rates inverted)"
    assert measured.header[:2] == ["workload", "metric"]
    assert [h.split(" ")[0] for h in measured.header[2:]] == ["base", "slow", "flaky", *FAILING]
    assert not any(table.footnotes for table in drawn[:-1])  # shared, printed once at the end
    assert drawn[-1].footnotes


@pytest.mark.both_stores
def test_measured_values(report: analysed.CampaignResults) -> None:
    measured = by_name(detail(report))["measured"]
    row = row_of(measured, "getpid", "time per op")
    assert row["metric"] == "time per op (ns)"
    assert row[column(measured, "base")] == "110 ±9.1%"  # bootstrap CI [100, 120]
    assert row[column(measured, "slow")] == "220 ±9.1%"
    assert column(measured, "base") == "base"
    assert row_of(measured, "runs", "n")["base"] == "3"  # one n shared by the whole column
    tsc = row_of(measured, "getpid", "TSC per op")
    assert tsc["metric"] == "TSC per op (cycles)"
    assert tsc[column(measured, "base")] == "260 ±3.8%"
    assert not any(r[1].startswith("iterations") for r in measured.rows)  # context metric


@pytest.mark.both_stores
@pytest.mark.parametrize("environment", list(FAILING))
def test_non_ok_cell_shows_status_and_footnote(report: analysed.CampaignResults, environment: str) -> None:
    status, reason = FAILING[environment]
    drawn = detail(report)
    for name in ("measured", "ratios"):
        table = by_name(drawn)[name]
        text = row_of(table, "getpid", "time per op")[column(table, environment)]
        assert text.strip() and text.strip() != "0"
        assert text.startswith(f"{STATUS_MARKS[status]} {status}"), text
        assert "x3" in text  # three repetitions, all with this status
        (line,) = footnote_for(text, drawn[-1].footnotes)
        assert line.endswith(f"{environment}: {STATUS_MARKS[status]} {status}: {reason}")


def test_partly_failed_cell_shows_value_and_problem(report: analysed.CampaignResults) -> None:
    drawn = detail(report)
    measured, ratio = by_name(drawn)["measured"], by_name(drawn)["ratios"]
    text = row_of(measured, "getpid", "time per op")[column(measured, "flaky")]
    assert text.startswith("150 +✗ failed x2 [")  # one value: no interval, no (min-max)
    assert row_of(measured, "runs", "n")["flaky"] == "1"
    (line,) = footnote_for(text, drawn[-1].footnotes)
    assert line.endswith("flaky: ✗ failed: garbled record")
    ratio_text = row_of(ratio, "getpid", "time per op")["flaky"]
    assert re.fullmatch(r"1\.36x \[\d+\]", ratio_text)  # n=1: no interval, a footnote


def test_workload_without_any_sample_has_a_row(report: analysed.CampaignResults) -> None:
    drawn = detail(report)
    measured, ratio = by_name(drawn)["measured"], by_name(drawn)["ratios"]
    row = row_of(measured, "pipe switch", "-")
    assert row[column(measured, "base")].startswith("✗ failed x3 [")
    assert row[column(measured, "slow")].startswith("✗ failed x3 [")
    (line,) = footnote_for(row[column(measured, "slow")], drawn[-1].footnotes)
    assert line.endswith("slow: ✗ failed: pipe_switch: broken pipe")
    assert "not run" in row[column(measured, "bad")]  # never ran there: said, not blank
    assert not [r for r in ratio.rows if r[0] == "pipe switch"]


def test_ratio_table(report: analysed.CampaignResults) -> None:
    ratio = by_name(detail(report))["ratios"]
    row = row_of(ratio, "getpid", "time per op")
    assert row["base"].startswith("1.00x [0.")  # itself, resampled independently
    low, high = map(float, re.fullmatch(r"2\.00x \[(.*)-(.*)x\]", row["slow"]).groups())
    assert low < 2.0 < high
    assert row_of(ratio, "getpid", "TSC per op")["slow"].startswith("2.00x [")
    geomean = row_of(ratio, "geometric mean", "primary metrics")
    assert geomean["base"] == "1.00x" and geomean["slow"].startswith("2.00x [")
    assert geomean["flaky"].startswith("1.36x")
    assert "above 1 is worse" in ratio.note and "rates" in ratio.note


def test_no_cell_is_blank_or_zero(report: analysed.CampaignResults) -> None:
    for table in detail(report):
        for row in table.rows:
            for cell in row:
                assert cell.strip() and cell.strip() not in ("0", "0.0", "-0")


def test_footnotes_are_numbered_once_per_reason(report: analysed.CampaignResults) -> None:
    footnotes = [line for line in detail(report)[-1].footnotes if line.startswith("[")]
    assert [line.split("]")[0] + "]" for line in footnotes] == [
        f"[{n}]" for n in range(1, len(footnotes) + 1)]
    assert len(footnotes) == len(set(footnotes)) == len(FAILING) + 3  # + flaky, base, slow


def test_without_baseline_no_table_against_it(store) -> None:
    populate(store, baseline=None)
    drawn = detail(reading.load(store))
    assert drawn[0].name == "measured"
    assert not {"ratios", "percent"} & set(by_name(drawn))
    assert drawn[-1].footnotes  # the footnotes go under the last table


def test_load_with_another_baseline(store) -> None:
    populate(store)
    ratio = by_name(detail(reading.load(store, baseline="slow")))["ratios"]
    assert ratio.title.startswith("Relative to slow")
    assert row_of(ratio, "getpid", "time per op")["base"].startswith("0.50x [")
    with pytest.raises(StoreError, match=r"--baseline: 'nope' is not an environment.*fix:"):
        reading.load(store, baseline="nope")


def test_all_metrics_shows_context(store) -> None:
    populate(store)
    measured = by_name(detail(reading.load(store, all_metrics=True)))["measured"]
    assert row_of(measured, "getpid", "iterations")["metric"] == "iterations (count)"


def test_cell_with_neither_values_nor_problems() -> None:
    footnotes = model.Footnotes()
    empty = Cell("a", "getpid", "time_per_op", "ns")
    assert model._measured_text(empty, footnotes, 1.0, True) == "not run"
    empty.runs = 2
    assert model._measured_text(empty, footnotes, 1.0, True) == "no samples"
    assert model._ratio_text(empty, Cell("b", "getpid", "time_per_op", "ns", [1.0]),
                             footnotes) == "no samples"
    assert footnotes.lines() == []


# -- formatting -------------------------------------------------------------------

@pytest.mark.parametrize("value, text", [
    (0, "0"), (0.5, "0.5"), (61.25, "61.25"), (1234.5, "1234"), (9999.4, "9999"),
    (10000, "10k"), (123456, "123.5k"), (-20000, "-20k"), (1.5e6, "1.5M"), (2.5e9, "2.5G"),
])
def test_format_value(value: float, text: str) -> None:
    assert format_value(value) == text


def test_format_value_never_scientific_near_a_limit() -> None:
    for value in (9999.9, 9999.99, 999_999.9):
        assert "e+" not in format_value(value), format_value(value)


@pytest.mark.parametrize("ratio, text", [
    (0.5, "0.50x"), (1, "1.00x"), (2, "2.00x"), (9.5, "9.50x"), (10, "10.0x"), (42.42, "42.4x"),
    (100, "100x"), (1234.4, "1234x"),
])
def test_format_ratio(ratio: float, text: str) -> None:
    assert format_ratio(ratio) == text


def cells(unit: str, *medians: float) -> list[Cell]:
    return [Cell(f"e{i}", "w", "m", unit, [m]) for i, m in enumerate(medians)]


@pytest.mark.parametrize("unit, medians, expected", [
    ("ns", (61.0, 120.0), ("ns", 1.0)),
    ("ns", (5.0, 50000.0), ("ns", 1.0)),  # the smallest decides
    ("ns", (50000.0, 80000.0), ("us", 1e3)),
    ("ns", (2.5e7,), ("ms", 1e6)),
    ("ns", (1e10,), ("s", 1e9)),
    ("ns", (2.9e6, 5e9), ("ms", 1e6)),  # not 2937 us to 4.978M us
    ("ms", (2.9, 5000.0), ("ms", 1.0)),
    ("ms", (0.462, 37.0), ("us", 1e-3)),  # 462 us, not 0.462 ms
    ("ms", (0.375, 0.9), ("us", 1e-3)),
    ("ns", (140.0, 42100.0), ("ns", 1.0)),  # never 0.14 us
    ("s", (0.5,), ("ms", 1e-3)),
    ("s", (2.0,), ("ms", 1e-3)),
    ("s", (20.0,), ("s", 1.0)),
    ("cycles", (1e6,), ("cycles", 1.0)),
    ("MB/s", (12000.0,), ("MB/s", 1.0)),
    ("ns", (), ("ns", 1.0)),
])
def test_row_scale(unit: str, medians: tuple, expected: tuple) -> None:
    name, factor = row_scale(unit, cells(unit, *medians))
    assert name == expected[0]
    assert factor == pytest.approx(expected[1])


def test_large_ns_values_are_shown_in_us(store) -> None:
    campaign_id = store.create_campaign("big", {}, FACTS, "fp", None, "/logs", "0.1.0")
    env = store.add_environment(campaign_id, "a", "fake", {}, True, "", 0)
    for repetition, value in enumerate((150_000.0, 160_000.0)):
        store.add_run(campaign_id, RunRecord(env, "fork_exit", "fork_exit", {}, repetition, "ok",
                                             "", STARTED, 0.1, None,
                                             (("time_per_op", "ns", value),)))
    measured = by_name(detail(reading.load(store)))["measured"]
    assert measured.rows == [["runs", "n", "2"], ["fork + exit", "time per op (us)", "155 (150-160)"]]  # n=2: no interval


# -- renderers --------------------------------------------------------------------

def test_markdown(report: analysed.CampaignResults) -> None:
    text = markdown.render(report)
    lines = text.splitlines()
    assert lines[0].startswith("### Measured: median ±95% CI")
    header = lines.index(next(l for l in lines if l.startswith("| workload | metric |")))
    assert lines[header + 1].startswith("|---|---|")
    assert lines[header + 1].count("|") == lines[header].count("|")
    assert "| getpid | time per op (ns) | 110 ±9.1% | 220 ±9.1% |" in text
    assert "### Relative to base: ratio of medians [95% CI], x base, above 1 is worse (rates inverted)" in text
    assert "### Basic costs: median CPU cycles per operation (time)" in text
    assert "| getpid | 260 cyc (110 ns) | 520 cyc (220 ns) |" in text
    assert "### % of base: performance relative to base (higher is better)" in text
    assert "| slow | 50 | 50 [" in text  # half base's speed; geometric mean with its interval
    assert "### Statistics per cell" in text
    assert any(re.match(r"\[\d+\] bad: ✗ failed: record 2 fails its checksum", l) for l in lines)


def test_markdown_escapes_pipes(store) -> None:
    campaign_id = store.create_campaign("pipes", {}, FACTS, "fp", None, "/logs", "0.1.0")
    env = store.add_environment(campaign_id, "a", "fake", {}, True, "", 0)
    store.add_run(campaign_id, RunRecord(env, "getpid", "getpid", {}, 0, "failed",
                                         "stderr: a | b", STARTED, 0.1, None))
    text = markdown.render(reading.load(store))
    assert "| getpid | - | ✗ failed [1] |" in text.splitlines()
    assert "[1] a: ✗ failed: stderr: a \\| b  " in text.splitlines()


def test_csv(report: analysed.CampaignResults) -> None:
    text = csv_report.render(report)
    rows = list(csv.DictReader(io.StringIO(text)))
    header = text.splitlines()[0].split(",")
    for name in ("campaign", "environment", "workload", "metric", "unit", "repetition", "status",
                 "value", "version"):
        assert name in header
    sample_less_runs = [run for run in report.runs
                        if not any(s.run_id == run.id for s in report.samples)]
    assert len(rows) == len(report.samples) + len(sample_less_runs)
    measured = [r for r in rows if r["environment"] == "base" and r["metric"] == "time_per_op"]
    assert sorted(float(r["value"]) for r in measured) == [100.0, 110.0, 120.0]
    assert {r["repetition"] for r in measured} == {"0", "1", "2"}
    assert all(r["status"] == "ok" for r in measured)
    assert any(r["metric"] == "iterations" for r in rows)  # raw: every sample
    hang = [r for r in rows if r["environment"] == "hang"]
    assert len(hang) == 3
    assert all(r["status"] == "timeout" and r["value"] == "" and r["metric"] == "" for r in hang)
    assert all(r["reason"] == FAILING["hang"][1] for r in hang)
    assert {r["campaign"] for r in rows} == {str(report.campaign.id)}
    assert {r["run_flags"] for r in rows} == {""}
    flaky = [r for r in rows if r["environment"] == "flaky" and r["metric"] == "time_per_op"]
    assert [r["cell_flags"] for r in flaky] == [""]


@pytest.mark.both_stores
def test_json(report: analysed.CampaignResults) -> None:
    document = json.loads(json_report.render(report))
    assert document["schema"] == "guestbench-results"
    assert document["schema_version"] == json_report.JSON_SCHEMA_VERSION == 4
    assert document["host"] == FACTS
    assert document["campaign"]["name"] == "reported"
    assert document["campaign"]["baseline"] == "base"
    envs = {env["name"]: env for env in document["environments"]}
    assert envs["base"]["spec"] == {"name": "base", "kind": "fake", "scale": 1.0}
    assert envs["gone"]["available"] is False and envs["gone"]["probe"] == "unavailable here"
    assert len(document["runs"]) == len(report.runs)
    base_runs = [r for r in document["runs"] if r["environment"] == "base"
                 and r["workload"] == "getpid"]
    assert [r["repetition"] for r in base_runs] == [0, 1, 2]
    assert base_runs[0]["samples"] == [
        {"metric": "time_per_op", "unit": "ns", "value": 100.0},
        {"metric": "tsc_per_op", "unit": "cycles", "value": 250.0},
        {"metric": "iterations", "unit": "count", "value": 4096.0}]
    hang = next(r for r in document["runs"] if r["environment"] == "hang")
    assert (hang["status"], hang["reason"], hang["samples"]) == (
        "timeout", FAILING["hang"][1], [])
    assert sum(len(r["samples"]) for r in document["runs"]) == len(report.samples)
    cells = {(c["environment"], c["label"], c["metric"]): c for c in document["cells"]}
    base = cells[("base", "getpid", "time_per_op")]
    assert base["n"] == 3 and base["primary"] is True
    assert base["statistics"]["median"] == 110.0 and base["statistics"]["ci"] == [100.0, 120.0]
    assert cells[("slow", "getpid", "time_per_op")]["ratio_to_baseline"]["value"] == 2.0
    assert cells[("hang", "getpid", "time_per_op")]["problems"] == [
        {"status": "timeout", "reason": FAILING["hang"][1]}] * 3
    (means,) = document["geometric_means"]
    assert means["group"] == "in the guest" and means["workloads"] == ["getpid"]
    assert means["environments"]["slow"]["slowdown"] == pytest.approx(2.0)
    assert document["statistics"]["bootstrap_resamples"] == 2000


@pytest.mark.both_stores
def test_json_timestamps_carry_their_offset(report: analysed.CampaignResults) -> None:
    document = json.loads(json_report.render(report))
    assert dt.datetime.fromisoformat(document["campaign"]["created_at"]).tzinfo is not None
    assert dt.datetime.fromisoformat(document["runs"][0]["started_at"]).tzinfo is not None


def test_terminal(report: analysed.CampaignResults) -> None:
    drawn = terminal.fit(detail(report))
    console = Console(record=True, width=terminal.width_for(drawn), color_system=None)
    terminal.render_tables(drawn, console)
    text = console.export_text()
    assert "Measured: median ±95% CI" in text
    assert "110 ±9.1%" in text
    assert "2.00x [" in text
    assert "killed after the 5 s run timeout" in text
    assert "◷ timeout x3 [" in text  # not wrapped at the width it asked for
    assert "Marks: ✗ failed, ◷ timeout" in text


def test_the_terminal_detail_and_the_published_view_are_one_list(report: analysed.CampaignResults) -> None:
    names = [table.name for table in detail(report)]
    assert names == [table.name for table in select.tables(report, "published")]
    assert names[:2] == ["measured", "ratios"]
    assert {"basic", "percent", "statistics"} <= set(names)  # what the summary's note promises
    headings = [line.removeprefix("### ") for line in markdown.render(report).splitlines()
                if line.startswith("### ")]
    assert headings == [table.title for table in detail(report)]
    with pytest.raises(ValueError, match="no table view 'wide'"):
        select.tables(report, "wide")  # type: ignore[arg-type]


def test_a_baseline_without_data_gives_a_note_not_a_wall_of_blanks(store) -> None:
    populate(store)
    drawn = by_name(detail(reading.load(store, baseline="gone")))
    assert not {"ratios", "percent"} & set(drawn)
    assert "the baseline gone has no successful run" in drawn["measured"].note


def test_a_clock_drift_flag_marks_the_cell_with_a_footnote(store) -> None:
    campaign_id = store.create_campaign("flagged", {"source": "test"}, FACTS, "fp", None,
                                        "/logs", "0.1.0")
    vm = store.add_environment(campaign_id, "vm", "fake", {}, True, "fake", 0)
    for repetition, flags in enumerate([("clock-drift",), ()]):
        store.add_run(campaign_id, RunRecord(
            environment_id=vm, workload="getpid", label="getpid", params={}, repetition=repetition,
            status="ok", reason="", started_at=STARTED, host_seconds=1.0, log_path=None,
            samples=(("time_per_op", "ns", 100.0),), flags=flags))
    drawn = detail(reading.load(store))
    cell = by_name(drawn)["measured"].rows[1][2]  # after the runs row
    assert "!clock-drift" in cell and "[1]" in cell
    assert any("clock-drift (vm): the guest's clock" in line for line in drawn[-1].footnotes)


@pytest.mark.both_stores
def test_flags_travel_into_csv_and_json(store) -> None:
    campaign_id = store.create_campaign("flags", {"source": "test"}, FACTS, "fp", None,
                                        "/logs", "0.1.0")
    vm = store.add_environment(campaign_id, "vm", "fake", {}, True, "fake", 0)
    values = [1097.61, 682.22, 844.8, 928.67, 769.6, 769.07]  # recorded: sched_yield beside CPU hogs
    quiet = [store.add_environment(campaign_id, f"quiet{n}", "fake", {}, True, "fake", n)
             for n in (1, 2, 3)]
    for repetition, value in enumerate(values):
        store.add_run(campaign_id, RunRecord(
            vm, "sched_yield", "sched_yield", {}, repetition, "ok", "", STARTED, 1.0, None,
            (("time_per_op", "ns", value),), ("clock-drift",) if repetition == 0 else ()))
        for other in quiet:  # the campaign's other cells vary by about 1%
            store.add_run(campaign_id, RunRecord(
                other, "sched_yield", "sched_yield", {}, repetition, "ok", "", STARTED, 1.0,
                None, (("time_per_op", "ns", 500.0 + repetition * 5),), ()))
    loaded = reading.load(store)
    rows = [row for row in csv.DictReader(io.StringIO(csv_report.render(loaded)))
            if row["environment"] == "vm"]
    assert [r["run_flags"] for r in rows] == ["clock-drift"] + [""] * 5
    assert {r["cell_flags"] for r in rows} == {"clock-drift unstable"}
    cell = next(cell for cell in json.loads(json_report.render(loaded))["cells"]
                if cell["environment"] == "vm")
    assert cell["flags"] == ["clock-drift", "unstable"]


def test_summary_is_one_row_per_workload_with_ratios_and_a_geomean_row(
        report: analysed.CampaignResults) -> None:
    (summary,) = select.tables(report, "summary")
    labels = [row[0] for row in summary.rows]
    assert len(labels) == len(set(labels)), "one row per workload"
    assert labels[-1] == "geometric mean"
    from guestbench.report import titles
    for label, metric in report.primary.items():  # each workload by its title and unit
        assert any(shown.startswith(titles.label_title(report, label) + " (") for shown in labels)
    row = dict(zip(summary.header, summary.rows[0]))
    assert "±" in row["base"] and row["slow"].startswith("2.00x")
    # environments with no value at all are listed under the table, not as columns
    assert summary.header == ["workload", "base", "slow", "flaky"]
    assert any(line.startswith("Could not run here: bad (✗ failed: record 2 fails")
               for line in summary.footnotes)


def test_footnotes_group_reasons_that_differ_only_in_numbers() -> None:
    from guestbench.analysis.cells import Cell
    footnotes = model.Footnotes()
    cell = Cell("uml", "stream", "bandwidth", "MB/s", problems=[
        ("failed", "ran out of memory at 0x4d53f000 after 12.5 s"),
        ("failed", "ran out of memory at 0x4553e000 after 13 s"),
        ("failed", "a different reason")])
    assert footnotes.mark(cell) == "[1][2]"
    lines = footnotes.lines()
    assert lines[0].endswith("(and 1 more reason differing only in numbers)")
    assert "0x4d53f000" in lines[0] and "a different reason" in lines[1]


def test_a_flag_on_several_environments_is_one_footnote_naming_them(store) -> None:
    campaign_id = store.create_campaign("flagged", {"source": "test"}, FACTS, "fp", None,
                                        "/logs", "0.1.0")
    for position, name in enumerate(("vm", "box", "quiet")):
        env = store.add_environment(campaign_id, name, "fake", {}, True, "fake", position)
        flags = ("clock-drift",) if name != "quiet" else ()
        store.add_run(campaign_id, RunRecord(
            environment_id=env, workload="getpid", label="getpid", params={}, repetition=0,
            status="ok", reason="", started_at=STARTED, host_seconds=1.0, log_path=None,
            samples=(("time_per_op", "ns", 100.0),), flags=flags))
    drawn = detail(reading.load(store))
    row = by_name(drawn)["measured"].rows[1]  # after the runs row
    assert "[1]" in row[2] and "[1]" in row[3] and "[" not in row[4]
    lines = [line for line in drawn[-1].footnotes if "clock-drift" in line]
    assert len(lines) == 1 and lines[0].startswith("[1] clock-drift (vm, box): ")
