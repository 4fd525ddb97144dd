"""One ratio rule everywhere: "x baseline, above 1 is worse", rates inverted. A rate an
environment gives at a ninth of the baseline's reads about 8.6 in every table, page and
export, never 0.12; and every view that shows ratios states the rule."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from guestbench import store as gb_store
from guestbench.analysis import results as analysed
from guestbench.analysis.cells import Interval
from guestbench.analysis.compare import CellComparison
from guestbench.report import select
from guestbench.report.formats.html import page as html
from guestbench.report.formats import json as json_report
from tests.support import default_like
from guestbench.commands import reading

RULE = "above 1 is worse"


@pytest.fixture(scope="module")
def default_like_results(tmp_path_factory) -> analysed.CampaignResults:
    opened = gb_store.open(f"sqlite:///{tmp_path_factory.mktemp('rule') / 'r.sqlite'}")
    default_like.write(opened)
    yield reading.load(opened)
    opened.engine.dispose()


def ratio_of(text: str) -> float:
    found = re.match(r"([\d.]+)x", text)
    assert found, text
    return float(found.group(1))


def test_the_summary_inverts_a_rate_and_says_so(default_like_results) -> None:
    (table,) = select.tables(default_like_results, "summary", width=120)
    row = next(dict(zip(table.header, row)) for row in table.rows if row[0].startswith("STREAM"))
    assert row["workload"] == "STREAM triad (MB/s, inverted)"
    assert ratio_of(row["qemu-user"]) > 8 and ratio_of(row["namespace"]) < 1
    assert RULE in table.note


def test_the_detail_ratio_table_inverts_a_rate_and_says_so(default_like_results) -> None:
    table = next(t for t in select.tables(default_like_results, "detail") if t.name == "ratios")
    row = next(dict(zip(table.header, row)) for row in table.rows
               if row[0].startswith("STREAM"))
    assert "rate, inverted" in row["metric"]
    assert ratio_of(row["qemu-user"]) > 8
    assert RULE in table.title and RULE in table.note


def test_the_json_export_inverts_a_rate(default_like_results) -> None:
    cells = json.loads(json_report.render(default_like_results))["cells"]
    stream = next(cell for cell in cells if cell["environment"] == "qemu-user"
                  and cell["metric"] == "triad_bandwidth")
    assert stream["ratio_to_baseline"]["value"] > 8


def test_the_html_overview_inverts_a_rate_and_says_so(default_like_results, tmp_path: Path) -> None:
    page = html.render(default_like_results, tmp_path)
    heatmap = page[page.index('id="overview-heatmap"'):]
    heatmap = heatmap[:heatmap.index("</figure>")]
    assert RULE in heatmap and "inverted" in heatmap
    assert "8.58x" in heatmap and "0.12x" not in heatmap


def test_compare_inverts_a_rate() -> None:
    """B's bandwidth at half of A's: B x A is 2, above 1 is worse; its number fell 50%."""
    from guestbench.analysis.stats import CellStats
    described = CellStats(3, 100.0, 100.0, 99.0, 101.0, 1.0, 0.01, 99.0, 101.0, 0, False)
    cell = CellComparison("vm", "stream", "triad_bandwidth", "MB/s", described, described,
                          Interval(0.5, 0.45, 0.55), 0.001, "slower")
    assert cell.worse_ratio.value == pytest.approx(2.0)
    assert cell.worse_ratio.low == pytest.approx(1 / 0.55)
    assert cell.change == pytest.approx(-0.5)
    cost = CellComparison("vm", "getpid", "time_per_op", "ns", described, described,
                          Interval(0.5, 0.45, 0.55), 0.001, "faster")
    assert cost.worse_ratio.value == pytest.approx(0.5)
