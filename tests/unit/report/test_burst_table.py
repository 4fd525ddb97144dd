"""The burst table: a column per burst (N and mode), a row per figure and environment; the
success rate counts every instance launched, a failed burst as none ready; a percentile no
burst's count supports is not told; the reasons instances failed are footnotes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from guestbench import store as gb_store
from guestbench.commands import reading
from guestbench.report import select
from guestbench.report.formats import markdown
from guestbench.store.records import RunRecord

STARTED = dt.datetime(2026, 11, 28, 1, 0, tzinfo=dt.timezone.utc)


def _burst(ready: list[float]) -> tuple:
    ordered = sorted(ready)
    samples = [("burst_ready", "ms", value) for value in ordered]
    samples += [("burst_p50", "ms", ordered[(len(ordered) + 1) // 2 - 1]),
                ("burst_max", "ms", ordered[-1]), ("burst_first", "ms", ordered[0] + 1),
                ("burst_last", "ms", ordered[-1] + 1)]
    if len(ordered) >= 10:
        samples.append(("burst_p90", "ms", ordered[int(len(ordered) * 0.9 + 0.999) - 1]))
    return tuple(samples)


def _campaign(path: Path) -> gb_store.Store:
    opened = gb_store.open(f"sqlite:///{path}")
    campaign = opened.create_campaign("burst", {"campaign": {"repeat": 3}}, {"cpu": "t"},
                                      "fp", None, "logs", "test")
    runc = opened.add_environment(campaign, "runc", "oci", {}, True, "yes", 0)
    tcg = opened.add_environment(campaign, "qemu-tcg", "qemu", {}, True, "yes", 1)
    for repetition in range(3):
        for count, label in ((1, "burst[instances=1]"), (10, "burst[instances=10]")):
            params = {"instances": count, "mode": "together", "stagger_ms": 200.0,
                      "ready_timeout_s": 120.0}
            opened.add_run(campaign, RunRecord(
                runc, "burst", label, params, repetition, "ok", "", STARTED, 1.0, None,
                _burst([40.0 + repetition + i for i in range(count)])
                + (("burst_success", "%", 100.0),)))
            if count == 10 and repetition == 2:  # a burst of which none started
                opened.add_run(campaign, RunRecord(
                    tcg, "burst", label, params, repetition, "failed",
                    "none of 10 instances became ready: instance 1: crashed", STARTED, 1.0,
                    None, ()))
                continue
            failed = 2 if count == 10 else 0
            opened.add_run(campaign, RunRecord(
                tcg, "burst", label, params, repetition, "ok",
                "2 of 10 instances failed: instance 5: it ended before its agent's hello "
                "(gbagent: not found)" if failed else "", STARTED, 1.0, None,
                _burst([2000.0 + 10 * repetition + 100 * i for i in range(count - failed)])
                + (("burst_success", "%", 100.0 * (count - failed) / count),)))
    opened.finish_campaign(campaign, "finished")
    return opened


def test_a_column_per_burst_and_the_success_rate_over_every_instance(tmp_path: Path) -> None:
    report = reading.load(_campaign(tmp_path / "b.sqlite"))
    (table,) = select.chosen_tables(report, [select.Choice("burst", plain=False)])
    assert table.header == ["figure", "environment", "N=1", "N=10"]
    rows = {(row[0], row[1]): row[2:] for row in table.rows}
    assert rows[("ready", "runc")] == ["100%", "100%"]
    # 8 of 10 in two bursts, none of 10 in the third: 16 of 30 launched
    assert rows[("ready", "qemu-tcg")] == ["100%", "53% (16/30) [1]"]
    assert any("none of 10 instances became ready: instance 1: crashed" in line
               for line in table.footnotes)
    assert rows[("p50 (ms)", "runc")] == ["41 [40-42]", "45 [44-46]"]
    assert rows[("p90 (ms)", "runc")][0] == "needs 10"  # one instance gives no p90
    assert rows[("p90 (ms)", "qemu-tcg")][1] == "needs 10"  # 8 ready of 10 give none either
    # no burst had 20 or 100 ready instances: those rows are not shown, and the note says why
    assert not any(figure.startswith(("p95", "p99")) for figure, _ in rows)
    assert "Not told, since no burst had enough: p95 (it needs 20), p99 (it needs 100)." \
        in table.note
    assert table.note.endswith(
        " Failed: qemu-tcg, N=10: 2 of 3 bursts had failures; 2 of 10 instances failed: "
        "instance 5: it ended before its agent's hello (gbagent: not found).")


def test_the_burst_table_in_markdown_and_by_name(tmp_path: Path) -> None:
    report = reading.load(_campaign(tmp_path / "b.sqlite"))
    shown = markdown.render(report, asked=("burst",))
    assert "### Bursts: N instances launched together, staggered or in turn" in shown
    assert "| ready | qemu-tcg | 100% | 53% (16/30) [1] |" in shown


def test_a_burst_refused_before_it_started_says_so_not_what_it_needs(tmp_path: Path) -> None:
    """A burst of several inside a VM is unsupported: its cells say so, its times are
    '-' (a 'needs 1' would read as a burst that ran with no instance ready), and the note
    gives the reason."""
    opened = gb_store.open(f"sqlite:///{tmp_path / 'b.sqlite'}")
    campaign = opened.create_campaign("burst", {"campaign": {"repeat": 1}}, {"cpu": "t"},
                                      "fp", None, "logs", "test")
    nested = opened.add_environment(campaign, "kvm-nested", "qemu", {}, True, "yes", 0)
    why = ("a burst of 10 together: inside a VM the L1 machine runs one inner guest at a "
           "time (fix: mode = \"serial\", or inside = \"none\")")
    for count, status in ((1, "ok"), (10, "unsupported")):
        params = {"instances": count, "mode": "together", "stagger_ms": 200.0,
                  "ready_timeout_s": 120.0}
        opened.add_run(campaign, RunRecord(
            nested, "burst", f"burst[instances={count}]", params, 0, status,
            "" if status == "ok" else why, STARTED, 1.0, None,
            _burst([9000.0]) + (("burst_success", "%", 100.0),) if status == "ok" else ()))
    opened.finish_campaign(campaign, "finished")
    (table,) = select.chosen_tables(reading.load(opened),
                                    [select.Choice("burst", plain=False)])
    rows = {(row[0], row[1]): row[2:] for row in table.rows}
    assert rows[("ready", "kvm-nested")] == ["100%", "unsupported"]
    assert rows[("p50 (ms)", "kvm-nested")] == ["9000", "-"]
    assert table.note.endswith(f" Unsupported: kvm-nested, N=10: {why}.")
