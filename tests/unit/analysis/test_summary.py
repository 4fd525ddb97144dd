"""analysis.summary: cells of raw samples, their statistics and problems (pure functions)."""

from __future__ import annotations

import pytest

from guestbench.analysis.cells import Cell, higher_is_better, status_counts
from guestbench.analysis.summary import summarise
from guestbench.store.records import Run, StoredSample


def run(run_id: int, environment: str, label: str = "getpid", status: str = "ok",
        reason: str = "") -> Run:
    return Run(id=run_id, environment=environment, label=label, status=status, reason=reason)


def sample(run_id: int, value: float, metric: str = "time_per_op", unit: str = "ns") -> dict:
    return StoredSample(run_id=run_id, metric=metric, unit=unit, value=value)


def test_median_min_max_n() -> None:
    runs = [run(1, "native"), run(2, "native"), run(3, "native"), run(4, "qemu"), run(5, "qemu")]
    samples = [sample(1, 10.0), sample(2, 30.0), sample(3, 20.0), sample(4, 100.0), sample(5, 50.0)]
    results = summarise(["native", "qemu"], runs, samples)
    assert results.environments == ["native", "qemu"]
    assert results.rows == [("getpid", "time_per_op", "ns")]
    native = results.cell("getpid", "time_per_op", "native")
    assert (native.median, native.minimum, native.maximum, native.n) == (20.0, 10.0, 30.0, 3)
    assert native.runs == 3 and native.problems == []
    qemu = results.cell("getpid", "time_per_op", "qemu")
    assert (qemu.median, qemu.minimum, qemu.maximum, qemu.n) == (75.0, 50.0, 100.0, 2)
    assert qemu.slowdown_to(native) == pytest.approx(3.75)


def test_problems_only_on_failing_runs() -> None:
    runs = [run(1, "native"), run(2, "native", status="failed", reason="checksum"),
            run(3, "native", status="timeout", reason="killed after 5 s"), run(4, "qemu")]
    samples = [sample(1, 10.0), sample(4, 12.0)]
    results = summarise(["native", "qemu"], runs, samples)
    native = results.cell("getpid", "time_per_op", "native")
    assert native.problems == [("failed", "checksum"), ("timeout", "killed after 5 s")]
    assert native.values == [10.0] and native.runs == 3
    assert results.cell("getpid", "time_per_op", "qemu").problems == []
    assert status_counts(native) == {"failed": 1, "timeout": 1}


def test_samples_of_non_ok_runs_are_not_counted() -> None:
    runs = [run(1, "native"), run(2, "native", status="failed", reason="bad")]
    samples = [sample(1, 10.0), sample(2, 999.0)]
    cell = summarise(["native"], runs, samples).cell("getpid", "time_per_op", "native")
    assert cell.values == [10.0]


def test_workload_with_no_samples_at_all_still_has_a_row() -> None:
    runs = [run(1, "native"), run(2, "native", "pipe_switch", "unsupported", "lacks processes"),
            run(3, "qemu", "pipe_switch", "crashed", "SIGSEGV")]
    samples = [sample(1, 10.0)]
    results = summarise(["native", "qemu"], runs, samples)
    assert results.rows == [("getpid", "time_per_op", "ns"), ("pipe_switch", "", "")]
    empty_native = results.cell("pipe_switch", "", "native")
    assert empty_native.n == 0 and empty_native.median is None
    assert empty_native.problems == [("unsupported", "lacks processes")]
    assert results.cell("pipe_switch", "", "qemu").problems == [("crashed", "SIGSEGV")]
    # qemu never ran getpid: an empty cell without problems
    untouched = results.cell("getpid", "time_per_op", "qemu")
    assert (untouched.n, untouched.runs, untouched.problems) == (0, 0, [])


def test_rows_keep_plan_order_and_one_row_per_metric() -> None:
    runs = [run(1, "a", "stream"), run(2, "a", "getpid")]
    samples = [sample(1, 9000.0, "bandwidth", "MB/s"), sample(1, 0.01, "time_min", "s"),
               sample(2, 60.0), sample(2, 150.0, "tsc_per_op", "cycles")]
    results = summarise(["a"], runs, samples)
    assert results.rows == [("stream", "bandwidth", "MB/s"), ("stream", "time_min", "s"),
                            ("getpid", "time_per_op", "ns"), ("getpid", "tsc_per_op", "cycles")]


def test_problems_reach_every_metric_row_of_the_workload() -> None:
    runs = [run(1, "a"), run(2, "a", status="failed", reason="boom")]
    samples = [sample(1, 60.0), sample(1, 150.0, "tsc_per_op", "cycles")]
    results = summarise(["a"], runs, samples)
    for metric in ("time_per_op", "tsc_per_op"):
        assert results.cell("getpid", metric, "a").problems == [("failed", "boom")]


def test_context_metrics_are_left_out_unless_asked() -> None:
    runs = [run(1, "a")]
    samples = [sample(1, 60.0), sample(1, 8192, "iterations", "count"),
               sample(1, 128, "array_mib", "MiB")]
    assert [r[1] for r in summarise(["a"], runs, samples).rows] == ["time_per_op"]
    everything = summarise(["a"], runs, samples, include_context=True)
    assert [r[1] for r in everything.rows] == ["time_per_op", "iterations", "array_mib"]


def test_ratio_without_a_usable_baseline() -> None:
    cell = Cell("a", "getpid", "time_per_op", "ns", [10.0])
    assert cell.slowdown_to(None) is None
    assert cell.slowdown_to(Cell("b", "getpid", "time_per_op", "ns", [])) is None
    assert cell.slowdown_to(Cell("b", "getpid", "time_per_op", "ns", [0.0])) is None
    assert Cell("c", "getpid", "time_per_op", "ns").slowdown_to(cell) is None


@pytest.mark.parametrize("unit, better", [("MB/s", True), ("IOPS", True), ("ns", False),
                                          ("cycles", False), ("s", False)])
def test_higher_is_better(unit: str, better: bool) -> None:
    assert higher_is_better(unit) is better
