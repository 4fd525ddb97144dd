"""The terminal's tables fit 120 columns (bytes, as mawk counts them): environments beyond
the width wrap into further tables that repeat the row labels."""

from __future__ import annotations

import io

from rich.console import Console

from guestbench.report.formats import terminal
from guestbench.report.model import Table


def wide_table(environments: int) -> Table:
    table = Table("Measured", ["workload", "metric", *(f"env{i}" for i in range(environments))],
                  [], footnotes=["[1] env3: ∅ unsupported: a reason " + "x" * 150], note="a note")
    for workload in ("getpid", "fork_exit"):
        table.add([workload, "time_per_op (ns)",
                   *(f"{100 + i}.5 ±4.2% n=10 !outliers(1) [1]" for i in range(environments))])
    return table


def rendered(drawn: list[Table]) -> str:
    buffer = io.StringIO()
    terminal.render_tables(drawn, Console(file=buffer, width=terminal.width_for(drawn),
                                          color_system=None))
    return buffer.getvalue()


def test_a_wide_table_wraps_into_parts_that_fit():
    parts = terminal.fit([wide_table(10)])
    assert len(parts) > 1
    assert [p.header[:2] for p in parts] == [["workload", "metric"]] * len(parts)
    assert sum(len(p.header) - 2 for p in parts) == 10
    assert parts[0].title == f"Measured (1 of {len(parts)})"
    assert not parts[0].footnotes and parts[-1].footnotes and parts[-1].note == "a note"
    text = rendered(parts)
    assert max(len(line.encode()) for line in text.splitlines()) <= terminal.MAX_WIDTH


def test_a_table_that_fits_is_left_as_it_is():
    table = wide_table(2)
    assert terminal.fit([table]) == [table]


def test_marks_on_rows_other_than_the_widest_still_fit():
    # the widest cell of each column is plain ASCII; another row has a multi-byte mark in
    # every column, padded to that width: its bytes are what must fit
    table = Table("Percent", ["environment", *(f"workload{i}" for i in range(8))], [])
    # 20 + 4 for the label column and 4 x (21 + 3) fill 120 exactly
    table.add(["native-with-a-longer", *("96.9 !outliers(2) [1]" for _ in range(8))])
    table.add(["crun", *("⊘ unavailable [2]" for _ in range(8))])
    parts = terminal.fit([table])
    assert len(parts) > 1
    assert max(len(line.encode()) for line in rendered(parts).splitlines()) <= terminal.MAX_WIDTH
