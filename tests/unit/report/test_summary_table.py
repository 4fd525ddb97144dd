"""The terminal summary: one table of every environment that ran, the baseline absolute and
the others as ratios under the one rule, marks with a legend, what could not run in one line;
sensible at 80, 120 and 200 columns (golden files in tests/unit/data/summary-*.txt).

To accept a deliberate change of layout: GUESTBENCH_REGOLD=1 pytest tests/unit/report/test_summary_table.py
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from rich.console import Console

from guestbench import store as gb_store
from guestbench.analysis import results as analysed
from guestbench.report import select
from guestbench.report.formats import terminal
from tests.support import default_like
from guestbench.commands import reading

GOLDEN = Path(__file__).parents[1] / "data"
WIDTHS = (80, 120, 200)


@pytest.fixture(scope="module")
def default_like_summary(tmp_path_factory) -> analysed.CampaignResults:
    opened = gb_store.open(f"sqlite:///{tmp_path_factory.mktemp('summary') / 'g.sqlite'}")
    default_like.write(opened)
    yield reading.load(opened, context_samples=False, primary_only=True)
    opened.engine.dispose()


def shown(default_like_summary: analysed.CampaignResults, width: int, colour: bool = False) -> str:
    buffer = io.StringIO()
    # as report/text.py draws for a terminal of this width
    drawn = terminal.fit(select.tables(default_like_summary, "summary", width=width),
                         max(width, terminal.MAX_WIDTH))
    console = Console(file=buffer, width=width, color_system="standard" if colour else None,
                      force_terminal=colour)
    terminal.render_tables(drawn, console)
    return buffer.getvalue()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_summary_matches_its_golden_file(default_like_summary, width: int) -> None:
    # the campaign's creation time is the test's: the golden file has a fixed one
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "2026-11-25 20:18 UTC", shown(default_like_summary, width))
    golden = GOLDEN / f"summary-{width}.txt"
    if os.environ.get("GUESTBENCH_REGOLD"):
        golden.write_text(text)
    assert text == golden.read_text(), f"the summary at {width} columns changed (see the module docstring)"


@pytest.mark.parametrize("width", WIDTHS)
def test_no_line_is_wider_than_the_terminal(default_like_summary, width: int) -> None:
    """A terminal shows characters; at 120 columns (a pipe or a file) bytes count too, as
    awk counts them (a ± or a ∅ is more than one)."""
    lines = shown(default_like_summary, width).splitlines()
    assert max(len(line) for line in lines) <= width
    if width == terminal.MAX_WIDTH:
        assert max(len(line.encode()) for line in lines) <= width


@pytest.mark.parametrize("width", (120, 200))
def test_every_environment_that_ran_is_in_one_table(default_like_summary, width: int) -> None:
    text = shown(default_like_summary, width)
    headers = [line for line in text.splitlines() if line.startswith("| workload")]
    assert len(headers) == 1, "one table"
    for env in ("native", "namespace", "runc", "runsc", "qemu-user", "uml"):
        assert re.search(rf"\b{re.escape(env)}\b", headers[0]), env
    assert "crun" not in headers[0] and "qemu-kvm" not in headers[0]
    could_not = " ".join(text.split("Could not run here:")[1].split())
    assert "crun (⊘ unavailable: crun cannot run" in could_not
    assert "qemu-kvm (⊘ unavailable: /dev/kvm exists" in could_not


def test_the_baseline_is_absolute_and_the_others_are_ratios(default_like_summary) -> None:
    (table,) = select.tables(default_like_summary, "summary", width=120)
    rows = {row[0]: dict(zip(table.header, row)) for row in table.rows}
    assert rows["getpid (ns)"]["native"].startswith("182.9 ±")
    assert rows["getpid (ns)"]["runsc"].startswith("187x")
    # a rate is inverted: qemu-user's bandwidth at a ninth of native's reads 8.6x, not 0.12x
    stream = rows["STREAM triad (MB/s, inverted)"]
    assert stream["qemu-user"].startswith("8.58x") and stream["namespace"].startswith("0.82x")
    assert stream["uml"].startswith("∅ [")
    assert "above 1 is worse (rates inverted)" in table.note


def test_marks_are_single_characters_with_a_legend(default_like_summary) -> None:
    (table,) = select.tables(default_like_summary, "summary", width=120)
    rows = {row[0]: dict(zip(table.header, row)) for row in table.rows}
    assert rows["getpid (ns)"]["runsc"].endswith(" !")  # the one cell whose runs vary widely
    assert rows["STREAM triad (MB/s, inverted)"]["qemu-user"].endswith("~")  # two clusters
    assert rows["getppid (ns)"]["runsc"] == "185x"  # a cell like the others: no mark
    legend = next(line for line in table.footnotes if line.startswith("Flags:"))
    assert "! runs vary far more" in legend and "~ runs form two clusters" in legend
    # uml's every cell had its clock marks arrive unevenly: said once, not on each cell
    assert not any(" c" in rows[label]["uml"] for label in rows)
    assert any(line.startswith("uml: every cell console-latency") for line in table.footnotes)


def test_the_geometric_mean_says_over_how_many_workloads(default_like_summary) -> None:
    (table,) = select.tables(default_like_summary, "summary", width=120)
    geomean = dict(zip(table.header, table.rows[-1]))
    assert geomean["workload"] == "geometric mean" and geomean["native"] == "1"
    # uml measured no STREAM: every environment's mean covers the 8 workloads all measured,
    # the same number as the overview, the "Relative to" table and JSON give
    assert "(" not in geomean["uml"] and "(" not in geomean["runsc"]
    assert ("over the 8 of 9 workloads that every environment with a mean measured (left out: "
            "stream)"
            in " ".join(table.note.split()))


def test_ratios_are_coloured_by_size_on_a_colour_terminal_only(default_like_summary, monkeypatch) -> None:
    coloured = shown(default_like_summary, 120, colour=True)
    assert "\x1b[31m" in coloured  # red: runsc's 187x
    assert "\x1b[" not in shown(default_like_summary, 120)
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[31m" not in shown(default_like_summary, 120, colour=True)


def test_the_html_overview_carries_the_same_marks(default_like_summary, tmp_path) -> None:
    from guestbench.report.formats.html import page as html
    page = html.render(default_like_summary, tmp_path)
    heatmap = page[page.index('id="overview-heatmap"'):]
    heatmap = heatmap[:heatmap.index("</figure>")]
    assert "187x !" in heatmap and "8.58x !~" in heatmap
    assert "Flags: ! runs vary far more" in heatmap
    assert "uml: every cell console-latency" in heatmap
    assert "263x c" not in heatmap  # said once for uml, not on each of its cells
