"""Links from a report to its runs' logs, for the HTML and Markdown renderers."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from guestbench.analysis.results import CampaignResults


def log_href(path: Path, base_dir: Path | None, folder: bool = False) -> str:
    """A link to a log file or folder: relative to base_dir when the two share a parent folder
    below the root (the page and its logs can then move together), else an absolute file:// URI."""
    path = path.absolute()
    suffix = "/" if folder else ""
    if base_dir is not None:
        base = base_dir.absolute()
        if os.path.commonpath([path, base]) != path.anchor:
            return quote(os.path.relpath(path, base), safe="/") + suffix
    return path.as_uri() + suffix


def cell_folders(report: CampaignResults) -> dict[tuple[str, str], Path]:
    """{(environment, label): the folder that holds its runs' logs (one repN per run; for
    workloads that shared a guest, the environment's shared/ folder)}, for cells whose
    folder is still there."""
    out: dict[tuple[str, str], Path] = {}
    for run in report.runs:
        key = (run.environment, run.label)
        if key in out or not run.log_path:
            continue
        folder = Path(run.log_path).parent
        if folder.is_dir():
            out[key] = folder
    return out
