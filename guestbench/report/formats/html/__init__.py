"""The html format: one self-contained page (page.py) with its style and script (assets.py),
the overview heatmap and system card, SVG plots; and the history's page (history_page.py)."""

from __future__ import annotations

from guestbench.analysis.history import History
from guestbench.analysis.results import CampaignResults
from guestbench.report.formats.request import Request
from guestbench.report.formats.html import history_page, page


def report(results: CampaignResults, request: Request) -> str:
    return page.render(results, request.link_base)


def history(found: History, request: Request) -> str:
    return history_page.render(found)
