"""One geometric mean per environment and kind of measure, the same number in every view.

On 2026-11-27 one campaign's HTML overview gave runsc 37.9x and qemu-user 3.04x, and its
"Relative to native" table 59.3x and 2.57x: the overview took each environment's mean over
the workloads it measured, the table over those every environment measured. Now the means
are taken once (analysis/geomean.py); this test reads them from the terminal summary, the
HTML overview, the "Relative to native" table and JSON, for a campaign shaped like the
default one (uml has no STREAM row, so the means cover 8 of 9 workloads).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from guestbench import store as gb_store
from guestbench.commands import reading
from guestbench.report import model, select
from guestbench.report.formats import json as json_report
from guestbench.report.formats.html import page as html
from tests.support import default_like
from tests.support.html_report import parse


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    opened = gb_store.open(f"sqlite:///{tmp_path_factory.mktemp('geomean') / 'g.sqlite'}")
    default_like.write(opened)
    yield reading.load(opened)
    opened.engine.dispose()


def _leading_ratio(text: str) -> str:
    return re.match(r"[\d.]+[kM]?x", text.strip()).group(0)


def test_the_default_campaign_s_mean_is_one_number_in_four_views(report, tmp_path: Path) -> None:
    others = [env for env in report.results.environments if env != report.baseline]
    # the terminal summary
    (summary,) = select.tables(report, "summary", width=200)
    terminal = dict(zip(summary.header, next(row for row in summary.rows
                                             if row[0] == "geometric mean")))
    # the "Relative to native" table
    ratios = next(table for table in select.tables(report, "published")
                  if table.name == "ratios")
    relative = dict(zip(ratios.header, next(row for row in ratios.rows
                                            if row[0] == "geometric mean")))
    # JSON
    (means,) = json.loads(json_report.render(report))["geometric_means"]
    assert means["group"] == "in the guest" and means["left_out"] == ["stream"]
    # the HTML overview's heatmap row
    dom = parse(html.render(report, tmp_path))
    (figure,) = [node for node in dom.all("figure") if node.attrs.get("id") == "overview-heatmap"]
    (row,) = [row for row in figure.all("tr") if "geomean" in row.attrs.get("class", "")]
    overview = dict(zip(report.results.environments, (cell.text() for cell in row.all("td"))))
    assert set(means["environments"]) <= set(others) and len(means["environments"]) >= 5
    for env in means["environments"]:
        from_json = model.format_ratio(means["environments"][env]["slowdown"])
        shown = {"terminal": _leading_ratio(terminal[env]),
                 "relative": _leading_ratio(relative[env]),
                 "overview": _leading_ratio(overview[env]), "json": from_json}
        assert set(shown.values()) == {from_json}, (env, shown)
    assert means["environments"]["runsc"]["slowdown"] > 10  # a mean, not a stray 1
